//! Running one op of a stream, what the workers record of it, and the recorder's capture.
//!
//! An op carries its exact Store call (a Store-level capture, or the bundled mix), which runs on
//! any target; or only the command a mongod received (a profiler capture), which a server target
//! is sent as captured and the embedded target runs where it translates to a Store call
//! (translate.rs). A find continued by getMores on the source is read to its end by the replayed
//! find, so its getMores are counted as folded into it.
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use bson::{Bson, Document};
use hdrhistogram::Histogram;
use serde_json::{json, Value};

use super::translate;
use crate::calls::json::{docs_of, filter_of, index_name, list_of, range_of, to_doc, update_of};
use crate::calls::{IndexSpec, Store};
use crate::error::{Error, Result};
use crate::events::now;
use crate::recorder::new_histogram;
use crate::executors::server::commands;

/// What one or more workers replayed: ops read, run and skipped (per label, with the reasons),
/// how late they started, and per query and count its (documents, latency, due time).
#[derive(Default)]
pub struct Stats {
    pub read: BTreeMap<&'static str, u64>,
    pub run: BTreeMap<&'static str, u64>,
    pub skipped: BTreeMap<&'static str, BTreeMap<String, u64>>,
    pub lag: Option<Histogram<u64>>,
    pub rows: Vec<(&'static str, u64, u64, Option<f64>)>,
}

impl Stats {
    pub fn worker() -> Stats {
        Stats { lag: Some(new_histogram()), ..Default::default() }
    }

    pub fn skip(&mut self, label: &'static str, reason: String) {
        *self.skipped.entry(label).or_default().entry(reason).or_default() += 1;
    }

    pub fn merge(&mut self, other: Stats) {
        for (k, v) in other.read {
            *self.read.entry(k).or_default() += v;
        }
        for (k, v) in other.run {
            *self.run.entry(k).or_default() += v;
        }
        for (label, reasons) in other.skipped {
            for (reason, n) in reasons {
                *self.skipped.entry(label).or_default().entry(reason).or_default() += n;
            }
        }
        if let Some(theirs) = other.lag {
            let mine = self.lag.get_or_insert_with(new_histogram);
            let _ = mine.add(&theirs);
        }
        self.rows.extend(other.rows);
    }
}

fn collection_of(record: &Value) -> Result<String> {
    record["ns"].as_str().and_then(|ns| ns.split_once('.')).map(|(_, c)| c.to_string())
        .ok_or_else(|| Error::other(format!("ns must be 'database.collection': {}", record["ns"])))
}

/// How an op runs here: its Store call, its captured command (server targets), or the reason it
/// cannot (counted, never dropped silently).
pub enum Plan {
    Call(Value),
    Command(Document),
    Skip(String),
}

/// `whole_counts`: a count runs on the whole collection, as Flashback's replayer ran every count.
pub fn plan(record: &Value, runs_commands: bool, whole_counts: bool) -> Result<Plan> {
    let op = record["op"].as_str().unwrap_or("command");
    if op == "count" && whole_counts {
        return Ok(Plan::Call(json!({"method": "count", "args": {"index": null}})));
    }
    if !record["store"].is_null() {
        return Ok(Plan::Call(record["store"].clone()));
    }
    if runs_commands {
        if op == "getmore" {
            return Ok(Plan::Skip("folded into its find: the replayed find reads its cursor to the end".into()));
        }
        return match to_doc(&record["command"])? {
            Some(cmd) if !cmd.is_empty() => Ok(Plan::Command(cmd)),
            _ => Ok(Plan::Skip(format!("{op}: no command captured"))),
        };
    }
    Ok(match translate::store_call(op, &record["command"]) {
        Ok(call) => Plan::Call(call),
        Err(why) => Plan::Skip(why),
    })
}

/// Runs one op; returns the documents it scanned or wrote.
pub fn execute(ctx: &mut dyn Store, record: &Value, plan: &Plan) -> Result<u64> {
    let collection = collection_of(record)?;
    match plan {
        Plan::Call(call) => store_call(ctx, &collection, call, record),
        Plan::Command(cmd) => command(ctx, cmd),
        Plan::Skip(why) => Err(Error::other(why.clone())),
    }
}

fn store_call(ctx: &mut dyn Store, collection: &str, call: &Value, record: &Value) -> Result<u64> {
    let args = &call["args"];
    let index = index_name(&args["index"]);
    match call["method"].as_str().unwrap_or_default() {
        "insert_many" => {
            let docs = if args["docs"].is_null() { &record["command"]["documents"] } else { &args["docs"] };
            ctx.insert_many(collection, &docs_of(docs)?).map(|n| n as u64)
        }
        "get" => Ok(ctx.get(collection, index, &list_of(&args["key"])?)?.is_some() as u64),
        "get_many" => Ok(ctx.get_many(collection, index.unwrap_or_default(), &list_of(&args["prefix"])?,
                                      &list_of(&args["last_values"])?)?.len() as u64),
        "scan" => Ok(ctx.scan(collection, index, &range_of(args)?)?.len() as u64),
        "count" => ctx.count(collection, index, &range_of(args)?).map(|n| n as u64),
        "update" => Ok(ctx.update(collection, index, &list_of(&args["key"])?, &update_of(args)?)?.matched as u64),
        "delete" => Ok(ctx.delete(collection, index, &list_of(&args["key"])?, &filter_of(args)?)? as u64),
        "create_collection" => ctx.create_collection(collection, args["capped_bytes"].as_i64()).map(|_| 0),
        "create_index" => ctx.create_index(collection, IndexSpec::from_json(&args["spec"])?).map(|_| 0),
        other => Err(Error::other(format!("unknown Store method {other:?}"))),
    }
}

/// A captured command on a server: documents returned (a find reads its cursor to the end) or
/// affected.
fn command(ctx: &mut dyn Store, cmd: &Document) -> Result<u64> {
    let reply = ctx.command(cmd)?;
    commands::check(&reply)?;
    if let Ok(cursor) = reply.get_document("cursor") {
        return Ok(cursor.get_array("firstBatch").map(|b| b.len()).unwrap_or(0) as u64);
    }
    if cmd.contains_key("findAndModify") || cmd.contains_key("findandmodify") {
        return Ok(matches!(reply.get("value"), Some(Bson::Document(_))) as u64);
    }
    Ok(crate::calls::as_i64(reply.get("n")).unwrap_or(0).max(0) as u64)
}

/// The command a Store call stands for, as the recorder writes it beside the call (so a
/// Store-level capture also replays on a server as commands, and reads like a profiler capture).
pub fn command_of(call: &Value, record: &Value, specs: &BTreeMap<(String, String), IndexSpec>) -> Result<Document> {
    let collection = collection_of(record)?;
    let args = &call["args"];
    let spec = |index: &Value| -> Result<Option<IndexSpec>> {
        match index.as_str() {
            None => Ok(None),
            Some(name) => specs.get(&(collection.clone(), name.to_string())).cloned().map(Some)
                .ok_or_else(|| Error::other(format!("index {name:?} of {collection:?} is not in the capture's header"))),
        }
    };
    let fields = |index: &Value| -> Result<Vec<(String, i8)>> { Ok(commands::index_fields(spec(index)?.as_ref())) };
    Ok(match call["method"].as_str().unwrap_or_default() {
        "insert_many" => commands::insert(&collection, &docs_of(&args["docs"])?),
        "get" => commands::get(&collection, &fields(&args["index"])?, &list_of(&args["key"])?),
        "scan" => commands::scan(&collection, spec(&args["index"])?.as_ref(), &range_of(args)?)?,
        "count" => commands::count(&collection, spec(&args["index"])?.as_ref(), &range_of(args)?)?,
        "update" => commands::update(&collection, &fields(&args["index"])?, &list_of(&args["key"])?, &update_of(args)?),
        "delete" => commands::delete(&collection, &fields(&args["index"])?, &list_of(&args["key"])?, &filter_of(args)?),
        other => crate::bail!("no command for Store method {other:?}"),
    })
}

/// The capture the recorder writes: a writer thread encodes and appends, so the calls being
/// captured pay for a lock and a channel send (in this process, as Flashback's profiler capture
/// added load to the server it recorded).
pub struct CaptureWriter {
    send: Mutex<Option<Sender<(f64, Value)>>>,
    thread: Mutex<Option<JoinHandle<Result<u64>>>>,
}

impl CaptureWriter {
    pub fn start(path: &str, header: &Value) -> Result<CaptureWriter> {
        let mut file = std::io::BufWriter::new(File::create(path).map_err(|e| Error::other(format!("{path}: {e}")))?);
        writeln!(file, "{header}")?;
        let (send, receive) = channel::<(f64, Value)>();
        let path = path.to_string();
        let thread = std::thread::Builder::new().name("capture-writer".into()).spawn(move || -> Result<u64> {
            let mut written = 0;
            for (ts, mut record) in receive {
                record["ts"] = json!(ts);
                writeln!(file, "{record}").map_err(|e| Error::other(format!("{path}: {e}")))?;
                written += 1;
            }
            file.flush()?;
            Ok(written)
        })?;
        Ok(CaptureWriter { send: Mutex::new(Some(send)), thread: Mutex::new(Some(thread)) })
    }

    /// Timestamped and queued under one lock, so the file is in time order.
    pub fn add(&self, record: Value) {
        let send = self.send.lock().unwrap();
        if let Some(s) = send.as_ref() {
            let _ = s.send((now(), record));
        }
    }

    pub fn finish(&self) -> Result<u64> {
        self.send.lock().unwrap().take();
        match self.thread.lock().unwrap().take() {
            Some(t) => t.join().map_err(|_| Error::other("the capture writer panicked"))?,
            None => Ok(0),
        }
    }
}
