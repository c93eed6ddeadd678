//! The server target: a MongoDB server (a mongod the driver launched, or a deployment the user
//! named) that the runner is the client of.
//!
//! The workload's Store calls become MongoDB commands (commands.rs) and go to the server through
//! an executor: the official Rust driver (driver.rs) for every server it speaks to, or, for the
//! posts' older servers, one legacy executor process per worker (legacy.rs, pymongo 3). The rest
//! of what the runner needs of a server (its identity and gaps, serverStatus per interval, sizes
//! per phase, fsync, sharding a new collection, the stale-secondary watch) is the companion's, a
//! Python process (lib/enginebench/mongod/companion.py) that speaks every server generation.
pub mod child;
pub mod commands;
pub mod driver;
pub mod legacy;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use bson::{doc, Bson, Document, RawDocumentBuf};
use serde::Deserialize;
use serde_json::{json, Value};

use super::Target;
use crate::calls::{Filter, IndexSpec, PageEntry, Range, Store, Update, UpdateResult};
use crate::error::{Error, Result};
use child::JsonChild;
use commands::PageMark;

/// The `server` part of a runner spec (lib/enginebench/driver.py writes it).
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    pub uri: String,
    pub database: String,
    /// "driver" (the Rust driver) or "legacy" (pymongo 3 processes).
    pub executor: String,
    /// The companion's command line.
    pub companion: Vec<String>,
    /// A legacy executor's command line (executor "legacy").
    #[serde(default)]
    pub legacy: Option<Vec<String>>,
    /// An existing deployment's database is dropped before and after the run.
    #[serde(default)]
    pub drop_database: bool,
    #[serde(default)]
    pub keep_data: bool,
    /// The writes' write concern (w); None: the server's default.
    #[serde(default)]
    pub write_concern: Option<i32>,
    /// Replica sets to watch for a stale secondary: {"replsets": {name: uri}, "lag_sample_s": s}.
    #[serde(default)]
    pub watch: Option<Value>,
}

/// What executes commands for one worker.
pub trait Executor {
    /// One command; its reply (an `ok: 0` reply is returned, not raised: commands::check reads it).
    fn run(&mut self, cmd: Document) -> Result<Document>;
    /// A find, its cursor read to the end.
    fn find(&mut self, cmd: Document) -> Result<Vec<RawDocumentBuf>>;
    /// Opens a multi-document transaction that the next commands join (only where the server has
    /// them: Server.atomic).
    fn begin(&mut self) -> Result<()> {
        crate::bail!("this executor runs no multi-document transactions")
    }
    /// Commits it; a transient failure is a WriteConflict, so the caller retries the body.
    fn commit(&mut self) -> Result<()> {
        crate::bail!("no transaction is open")
    }
    fn abort(&mut self) {}
}

pub struct Server {
    pub spec: ServerSpec,
    companion: Mutex<JsonChild>,
    /// What the companion learnt when it opened the server (the store_info event's fields).
    pub info: Value,
    atomic: bool,
    /// w:0 asked for and accepted by the server.
    unacknowledged: bool,
    /// Index specs by collection and name: the commands name an index's fields.
    schema: RwLock<HashMap<String, HashMap<String, IndexSpec>>>,
}

impl Server {
    pub fn open(spec: ServerSpec) -> Result<Arc<Server>> {
        if !["driver", "legacy"].contains(&spec.executor.as_str()) {
            crate::bail!("server executor is {:?}; allowed: driver, legacy", spec.executor);
        }
        if spec.executor == "legacy" && spec.legacy.is_none() {
            crate::bail!("server executor legacy needs the legacy executor's command line (server.legacy)");
        }
        let mut companion = JsonChild::start("the server's companion", &spec.companion)?;
        let info = companion.call("open", json!({"uri": spec.uri, "database": spec.database,
                                                 "drop_database": spec.drop_database, "keep_data": spec.keep_data,
                                                 "watch": spec.watch}))?;
        let atomic = info["atomic"].as_bool().unwrap_or(false) && spec.executor == "driver";
        let unacknowledged = spec.write_concern == Some(0) && info["unacknowledged"].as_bool().unwrap_or(false);
        Ok(Arc::new(Server { spec, companion: Mutex::new(companion), info, atomic, unacknowledged,
                             schema: RwLock::new(HashMap::new()) }))
    }

    /// Waits until the server answers a ping again (after a restart for a cold start): the
    /// driver's pool reconnects by itself, but its first command would meet the old connections.
    pub fn await_ready(&self, limit: std::time::Duration) -> Result<()> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let ping = self.executor().and_then(|mut exec| exec.run(doc! {"ping": 1})).and_then(|r| commands::check(&r));
            match ping {
                Ok(()) => return Ok(()),
                Err(e) if std::time::Instant::now() >= deadline => {
                    crate::bail!("the server did not answer within {} s of its restart: {}", limit.as_secs(), e.message)
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(200)),
            }
        }
    }

    /// How this server's commands are sent, for the manifest.
    pub fn executor_name(&self) -> String {
        match self.spec.executor.as_str() {
            "driver" => format!("the Rust driver (mongodb {})", env!("EB_MONGODB_DRIVER_VERSION")),
            _ => "legacy: pymongo 3, one process per worker".to_string(),
        }
    }

    fn companion(&self, op: &str, fields: Value) -> Result<Value> {
        self.companion.lock().unwrap().call(op, fields)
    }

    /// dbStats and collStats, after a phase.
    pub fn phase_stats(&self) -> Result<Value> {
        self.companion("phase_stats", json!({}))
    }

    fn executor(&self) -> Result<Box<dyn Executor>> {
        match self.spec.executor.as_str() {
            "legacy" => Ok(Box::new(legacy::Legacy::start(&self.spec)?)),
            _ => Ok(Box::new(driver::Driver::connect(&self.spec.uri, &self.spec.database)?)),
        }
    }

    fn spec_of(&self, collection: &str, index: Option<&str>, exec: &mut dyn Executor) -> Result<Option<IndexSpec>> {
        let Some(name) = index else { return Ok(None) };
        if let Some(spec) = self.schema.read().unwrap().get(collection).and_then(|c| c.get(name)) {
            return Ok(Some(spec.clone()));
        }
        // An index this run did not create (a borrowed deployment's): ask the server.
        let reply = exec.run(doc! {"listIndexes": collection})?;
        commands::check(&reply)?;
        let batch = reply.get_document("cursor").and_then(|c| c.get_array("firstBatch")).cloned().unwrap_or_default();
        for entry in batch {
            let Bson::Document(entry) = entry else { continue };
            if entry.get_str("name").ok() == Some(name) {
                let key = entry.get_document("key").cloned().unwrap_or_default();
                let fields = key.iter().map(|(f, d)| (f.clone(), crate::calls::as_i64(Some(d)).unwrap_or(1) as i8)).collect();
                let spec = IndexSpec { name: name.to_string(), fields, unique: entry.get_bool("unique").unwrap_or(false) };
                self.remember(collection, &spec);
                return Ok(Some(spec));
            }
        }
        Err(Error::other(format!("collection {collection:?} has no index {name:?}")))
    }

    fn remember(&self, collection: &str, spec: &IndexSpec) {
        self.schema.write().unwrap().entry(collection.to_string()).or_default().insert(spec.name.clone(), spec.clone());
    }

    /// The write concern every write command carries (w:0 only where the server takes it).
    fn with_write_concern(&self, mut cmd: Document) -> Document {
        if self.unacknowledged {
            cmd.insert("writeConcern", doc! {"w": 0});
        }
        cmd
    }
}

impl Target for Server {
    fn session(self: Arc<Self>) -> Result<Box<dyn Store>> {
        let exec = self.executor()?;
        Ok(Box::new(ServerStore { server: self, exec }))
    }

    fn checkpoint(&self) -> Result<()> {
        self.companion("checkpoint", json!({})).map(|_| ())
    }

    fn stats(&self) -> Value {
        self.companion("stats", json!({})).map(|s| s["counters"].clone()).unwrap_or_else(|e| json!({"error": e.message}))
    }

    fn close(&self) -> Result<()> {
        self.companion("close", json!({})).map(|_| ())
    }

    fn after_phase(&self, _phase: &str) -> Option<(&'static str, Value)> {
        Some(("db_stats", match self.phase_stats() {
            Ok(Value::Object(stats)) => Value::Object(stats),
            Ok(other) => json!({"stats": other}),
            Err(e) => json!({"error": e.message}),
        }))
    }

    fn companion(&self, op: &str, args: Value) -> Option<Result<Value>> {
        Some(Server::companion(self, op, args))
    }

    fn finding(&self) -> Option<Value> {
        self.spec.watch.as_ref()?;
        self.companion("stale", json!({})).ok().filter(|v| !v.is_null())
    }
}

/// One worker's Store over a server: the commands of commands.rs through its executor.
pub struct ServerStore {
    server: Arc<Server>,
    exec: Box<dyn Executor>,
}

impl ServerStore {
    fn fields(&mut self, collection: &str, index: Option<&str>) -> Result<(Option<IndexSpec>, Vec<(String, i8)>)> {
        let spec = self.server.spec_of(collection, index, self.exec.as_mut())?;
        let fields = commands::index_fields(spec.as_ref());
        Ok((spec, fields))
    }

    fn write(&mut self, cmd: Document) -> Result<Document> {
        let cmd = self.server.with_write_concern(cmd);
        self.exec.run(cmd)
    }
}

impl Store for ServerStore {
    fn create_collection(&mut self, name: &str, capped_bytes: Option<i64>) -> Result<()> {
        // A server without capped collections gets an ordinary one; the companion named the gap.
        let capped_bytes = capped_bytes.filter(|_| self.server.info["capped"].as_bool().unwrap_or(true));
        let reply = self.exec.run(commands::create_collection(name, capped_bytes))?;
        match commands::check(&reply) {
            Ok(()) => {}
            Err(e) if e.message.contains("server error 48:") => return Ok(()), // NamespaceExists
            Err(e) => return Err(e),
        }
        self.server.companion("created", json!({"collection": name, "capped": capped_bytes.is_some()}))?;
        Ok(())
    }

    fn create_index(&mut self, collection: &str, spec: IndexSpec) -> Result<()> {
        let reply = self.exec.run(commands::create_index(collection, &spec))?;
        commands::check(&reply)?;
        self.server.remember(collection, &spec);
        Ok(())
    }

    fn insert_many(&mut self, collection: &str, docs: &[Document]) -> Result<usize> {
        let reply = self.write(commands::insert(collection, docs))?;
        commands::inserted(&reply, docs.len())
    }

    fn update(&mut self, collection: &str, index: Option<&str>, key: &[Bson], update: &Update) -> Result<UpdateResult> {
        let (_, fields) = self.fields(collection, index)?;
        let reply = self.write(commands::update(collection, &fields, key, update))?;
        commands::updated(&reply, update.upsert)
    }

    fn delete(&mut self, collection: &str, index: Option<&str>, key: &[Bson], filter: &Filter) -> Result<bool> {
        let (_, fields) = self.fields(collection, index)?;
        let reply = self.write(commands::delete(collection, &fields, key, filter))?;
        commands::deleted(&reply)
    }

    fn get(&mut self, collection: &str, index: Option<&str>, key: &[Bson]) -> Result<Option<RawDocumentBuf>> {
        let (_, fields) = self.fields(collection, index)?;
        Ok(self.exec.find(commands::get(collection, &fields, key))?.into_iter().next())
    }

    fn get_many(&mut self, collection: &str, index: &str, prefix: &[Bson], last_values: &[Bson]) -> Result<Vec<RawDocumentBuf>> {
        let (spec, _) = self.fields(collection, Some(index))?;
        let cmd = commands::get_many(collection, spec.as_ref().expect("a named index"), prefix, last_values)?;
        self.exec.find(cmd)
    }

    fn scan(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<Vec<RawDocumentBuf>> {
        let (spec, _) = self.fields(collection, index)?;
        self.exec.find(commands::scan(collection, spec.as_ref(), range)?)
    }

    fn count_in(&mut self, collection: &str, index: &str, prefix: &[Bson], last_values: &[Bson]) -> Result<usize> {
        let (spec, _) = self.fields(collection, Some(index))?;
        let reply = self.exec.run(commands::count_in(collection, spec.as_ref().expect("a named index"), prefix, last_values)?)?;
        commands::counted(&reply)
    }

    fn count(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<usize> {
        let (spec, _) = self.fields(collection, index)?;
        let reply = self.exec.run(commands::count(collection, spec.as_ref(), range)?)?;
        commands::counted(&reply)
    }

    fn index_page(&mut self, collection: &str, index: Option<&str>, after: Option<&[u8]>, n: usize, fetch: bool)
                  -> Result<Vec<PageEntry>> {
        let (spec, fields) = self.fields(collection, index)?;
        let mark = after.map(PageMark::decode).transpose()?;
        let docs = self.exec.find(commands::index_page(collection, spec.as_ref(), mark.as_ref(), n, fetch)?)?;
        let mut last = mark.unwrap_or(PageMark { key: Vec::new(), seen: 0 });
        let mut page = Vec::with_capacity(docs.len());
        for raw in docs {
            let doc = Document::try_from(raw.as_ref())?;
            let key: Vec<Bson> = fields.iter().map(|(f, _)| doc.get(f).cloned().unwrap_or(Bson::Null)).collect();
            last = if key == last.key { PageMark { key, seen: last.seen + 1 } } else { PageMark { key, seen: 1 } };
            page.push((last.encode(), last.key.clone(), if fetch { Some(raw) } else { None }));
        }
        Ok(page)
    }

    fn natural(&mut self, collection: &str, limit: Option<usize>) -> Result<Vec<RawDocumentBuf>> {
        let mut cmd = doc! {"find": collection, "filter": {}, "sort": {"$natural": 1}};
        if let Some(limit) = limit {
            cmd.insert("limit", limit as i64);
        }
        self.exec.find(cmd)
    }

    /// A transaction where the server has them, retried after a transient failure (a write
    /// conflict, TransientTransactionError) as the drivers' withTransaction does; elsewhere the
    /// body runs once, without atomicity (`atomic` says so).
    fn transaction_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Store) -> Result<()>) -> Result<()> {
        if !self.server.atomic {
            return f(self);
        }
        for attempt in 0u32.. {
            self.exec.begin()?;
            let result = f(self).and_then(|_| self.exec.commit());
            match result {
                Err(e) if e.is_conflict() && attempt < 100 => {
                    self.exec.abort();
                    std::thread::sleep(std::time::Duration::from_millis(attempt.min(10) as u64));
                }
                Err(e) => {
                    self.exec.abort();
                    return Err(e);
                }
                Ok(()) => return Ok(()),
            }
        }
        unreachable!()
    }

    fn atomic(&self) -> bool {
        self.server.atomic
    }

    fn runs_commands(&self) -> bool {
        true
    }

    fn command(&mut self, command: &Document) -> Result<Document> {
        if command.contains_key("find") {
            // The cursor read to its end: the source's getMores are folded into their find.
            let docs: Vec<Bson> = self.exec.find(command.clone())?.into_iter()
                .map(|raw| Document::try_from(raw.as_ref()).map(Bson::Document)).collect::<std::result::Result<_, _>>()?;
            return Ok(doc! {"ok": 1.0, "cursor": {"id": 0i64, "firstBatch": docs}});
        }
        self.exec.run(command.clone())
    }
}
