//! MongoDB's record-store layout over an embedded engine, as mongod 3.x lays it out.
//!
//! A collection is a record table keyed by a 64-bit record id holding the BSON document, plus
//! a unique `_id` index mapping the `_id` to the record id; each secondary index is a table of
//! its own (store::keys describes the keys). A lookup by `_id` or any index is an index probe
//! and then a record fetch, as in mongod. Every Store call is one engine transaction, as a
//! mongod write of a document and its index entries is one storage transaction; inserts of a
//! batch commit one document per transaction, as MongoDB 3.0/3.2 did, or in groups of
//! `insert_group` (64 from 3.4: internalInsertMaxBatchSize). Write conflicts roll back and
//! retry the call with mongod's backoff.
//!
//! With `oplog` every write also appends an entry to a capped oplog in the same transaction,
//! as a replica-set member does (the posts' op1 setups); op0 is the standalone server.
//! For the mmap stand-in, capped collections (the oplog included) are preallocated rings
//! overwritten in place, as MMAPv1's were, and MMAPv1's database or collection lock can be
//! emulated (see `Locking`).
pub mod capped;
pub mod document;
pub mod keys;
pub mod lock;
pub mod oplog;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use bson::{Bson, Document, RawDocument, RawDocumentBuf};
use serde_json::{json, Value};

use crate::engines::{Engine, Session, Table, TableKind};
use crate::error::{Error, Result};
use capped::Capped;
use crate::calls::{Filter, IndexSpec, PageEntry, Range, Store, Update, UpdateResult};
pub use lock::Locking;
use lock::{Held, Latch};

/// Documents per storage transaction when a batch is inserted outside one: 1 in MongoDB 3.0 and
/// 3.2, whose write commands inserted each document in a WriteUnitOfWork of its own
/// (mongo@r3.2.0 src/mongo/db/commands/write_commands/batch_executor.cpp, insertOne); 64 from
/// 3.4 on (write_ops_exec.cpp insertBatchAndHandleErrors, internalInsertMaxBatchSize). A batch
/// is never atomic, as insertMany is not. The `insert_group` option; this is its default.
pub const INSERT_GROUP: usize = 1;
const CATALOG: &str = "_mdb_catalog";

struct Index {
    spec: IndexSpec,
    table: Table,
    directions: Vec<i8>,
    names: Vec<String>,
}

impl Index {
    fn new(spec: IndexSpec, table: Table) -> Self {
        let directions = spec.fields.iter().map(|(_, d)| *d).collect();
        let names = spec.names();
        Index { spec, table, directions, names }
    }
}

pub struct Collection {
    pub name: String,
    records: Table,
    /// The unique `_id` index ("_id_"); None for the oplog, which has none.
    id_index: Option<Table>,
    indexes: RwLock<Vec<Arc<Index>>>,
    next_id: AtomicI64,
    /// Documents in the collection, as mongod's RecordStore::numRecords keeps them: changed when
    /// a write commits, kept in the catalog across a reopen (mongod's size storer), read by a
    /// count with no query (CountStage::trivialCount).
    pub num_records: AtomicI64,
    pub capped: Option<Capped>,
    lock: Arc<Latch>,
}

impl Collection {
    fn index(&self, name: &str) -> Result<Arc<Index>> {
        self.indexes.read().unwrap().iter().find(|i| i.spec.name == name).cloned()
            .ok_or_else(|| Error::other(format!("collection {:?} has no index {name:?}", self.name)))
    }
}

pub struct StoreOptions {
    /// Documents per storage transaction of a batch insert (INSERT_GROUP).
    pub insert_group: usize,
    pub oplog: bool,
    pub oplog_bytes: i64,
    pub locking: Locking,
    /// Capped collections as preallocated rings overwritten in place (the mmap stand-in).
    pub ring_capped: bool,
}

pub struct RecordStore {
    pub engine: Arc<dyn Engine>,
    catalog: Table,
    collections: RwLock<HashMap<String, Arc<Collection>>>,
    pub options: StoreOptions,
    db_lock: Arc<Latch>,
    oplog: Option<Arc<Collection>>,
    /// How the oplog is trimmed (engines that delete; a ring needs none).
    pub oplog_trim: Option<oplog::Trim>,
    trimmer: std::sync::Mutex<Option<oplog::Trimmer>>,
    pub conflicts: AtomicU64,
}

impl RecordStore {
    pub fn open(engine: Arc<dyn Engine>, options: StoreOptions) -> Result<Arc<RecordStore>> {
        let catalog = engine.table(CATALOG, TableKind::Metadata)?;
        let mut store = RecordStore {
            engine,
            catalog,
            collections: RwLock::new(HashMap::new()),
            options,
            db_lock: Latch::new(),
            oplog: None,
            oplog_trim: None,
            trimmer: std::sync::Mutex::new(None),
            conflicts: AtomicU64::new(0),
        };
        store.load_catalog()?;
        if store.options.oplog {
            if !store.options.ring_capped {
                store.oplog_trim = Some(oplog::Trim::for_engine(store.engine.as_ref(), store.options.oplog_bytes)?);
            }
            store.oplog = Some(store.open_oplog()?);
        }
        let store = Arc::new(store);
        if let Some(oplog) = &store.oplog {
            if !store.options.ring_capped {
                *store.trimmer.lock().unwrap() = Some(oplog::Trimmer::start(Arc::downgrade(&store), oplog.clone())?);
            }
        }
        Ok(store)
    }

    pub fn session(self: &Arc<Self>) -> Result<Ctx> {
        Ok(Ctx { store: self.clone(), kv: self.engine.session()?, in_txn: false, txn_locks: Vec::new(),
                 capped_inserts: Vec::new(), record_deltas: Vec::new(), scratch: Vec::with_capacity(256) })
    }

    // -- catalog ------------------------------------------------------------------------------
    fn load_catalog(&mut self) -> Result<()> {
        let mut session = self.engine.session()?;
        session.begin(false)?;
        let mut entries = Vec::new();
        session.scan(self.catalog, b"", None, false, &mut |k, v| {
            entries.push((String::from_utf8_lossy(k).into_owned(), v.to_vec()));
            true
        })?;
        session.rollback();
        drop(session);
        for (name, meta) in entries {
            let meta: Value = serde_json::from_slice(&meta).map_err(|e| Error::other(format!("catalog entry {name}: {e}")))?;
            if name == oplog::NAME {
                continue; // opened by open_oplog
            }
            let capped = meta["capped_bytes"].as_i64();
            let coll = self.new_collection(&name, capped, true, &meta)?;
            for spec in meta["indexes"].as_array().cloned().unwrap_or_default() {
                let spec = IndexSpec::from_json(&spec)?;
                let table = self.engine.table(&format!("index-{name}-{}", spec.name), TableKind::Index)?;
                coll.indexes.write().unwrap().push(Arc::new(Index::new(spec, table)));
            }
            self.collections.write().unwrap().insert(name, Arc::new(coll));
        }
        Ok(())
    }

    fn new_collection(&self, name: &str, capped_bytes: Option<i64>, id_index: bool, meta: &Value) -> Result<Collection> {
        let records = self.engine.table(&format!("collection-{name}"), TableKind::Records)?;
        let id_index = if id_index { Some(self.engine.table(&format!("index-{name}-_id_"), TableKind::Index)?) } else { None };
        let capped = match capped_bytes {
            Some(bytes) => Some(Capped::new(name, bytes, self.options.ring_capped, meta)?),
            None => None,
        };
        let coll = Collection {
            name: name.to_string(),
            records,
            id_index,
            indexes: RwLock::new(Vec::new()),
            next_id: AtomicI64::new(1),
            num_records: AtomicI64::new(meta["num_records"].as_i64().unwrap_or(-1)),
            capped,
            lock: Latch::new(),
        };
        self.recover(&coll)?;
        if coll.capped.as_ref().map(|c| c.is_ring()).unwrap_or(false) && coll.next_id.load(Ordering::Relaxed) == 1 {
            capped::preallocate(self.engine.as_ref(), records, coll.capped.as_ref().unwrap().cap_bytes)?;
        }
        Ok(coll)
    }

    /// After a reopen: the next record id is the largest + 1 (mongod scans backwards for it),
    /// and a capped collection's size is counted again.
    fn recover(&self, coll: &Collection) -> Result<()> {
        let mut session = self.engine.session()?;
        session.begin(false)?;
        let mut last = 0i64;
        session.scan(coll.records, b"", None, true, &mut |k, _| {
            last = keys::record_id(k);
            false
        })?;
        coll.next_id.store(last + 1, Ordering::Relaxed);
        if coll.num_records.load(Ordering::Relaxed) < 0 {
            // Not in the catalog (a new collection, or one written before counts were kept).
            let mut n = 0i64;
            session.scan(coll.records, b"", None, false, &mut |_, v| {
                n += !capped::is_filler(v) as i64;
                true
            })?;
            coll.num_records.store(n, Ordering::Relaxed);
        }
        if let Some(capped) = &coll.capped {
            capped.recount(session.as_mut(), coll.records)?;
        }
        session.rollback();
        Ok(())
    }

    /// Writes a collection's catalog entry in a transaction of its own (DDL is rare and
    /// single-threaded in every workload).
    fn save_catalog(&self, coll: &Collection) -> Result<()> {
        let indexes: Vec<Value> = coll.indexes.read().unwrap().iter().map(|i| i.spec.to_json()).collect();
        let mut meta = json!({"indexes": indexes, "num_records": coll.num_records.load(Ordering::Relaxed)});
        if let Some(capped) = &coll.capped {
            meta["capped_bytes"] = json!(capped.cap_bytes);
            capped.save_state(&mut meta);
        }
        let bytes = serde_json::to_vec(&meta).unwrap();
        let mut session = self.engine.session()?;
        session.begin(true)?;
        if let Err(e) = session.put(self.catalog, coll.name.as_bytes(), &bytes) {
            session.rollback();
            return Err(e);
        }
        session.commit()
    }

    fn open_oplog(&self) -> Result<Arc<Collection>> {
        let mut session = self.engine.session()?;
        session.begin(false)?;
        let mut meta = Vec::new();
        session.get(self.catalog, oplog::NAME.as_bytes(), &mut meta)?;
        session.rollback();
        drop(session);
        let meta: Value = if meta.is_empty() { json!({}) } else { serde_json::from_slice(&meta).unwrap_or(json!({})) };
        let coll = Arc::new(self.new_collection(oplog::NAME, Some(self.options.oplog_bytes), false, &meta)?);
        if let Some(trim) = &self.oplog_trim {
            let mut session = self.engine.session()?;
            session.begin(false)?;
            let counted = trim.recount(session.as_mut(), coll.records);
            session.rollback();
            counted?;
        }
        self.save_catalog(&coll)?;
        Ok(coll)
    }

    /// A collection by name; the oplog (`oplog.rs`) can be read by name too.
    pub fn collection(&self, name: &str) -> Result<Arc<Collection>> {
        if let Some(oplog) = self.oplog.as_ref().filter(|o| o.name == name) {
            return Ok(oplog.clone());
        }
        self.collections.read().unwrap().get(name).cloned()
            .ok_or_else(|| Error::other(format!("collection {name:?} does not exist")))
    }

    // -- lifecycle ----------------------------------------------------------------------------
    pub fn info(&self) -> Value {
        let mut config = self.engine.config();
        config["oplog"] = json!(self.options.oplog);
        config["insert_group"] = json!(self.options.insert_group);
        config["oplog_size_mb"] = json!(self.options.oplog_bytes >> 20);
        config["layout"] = json!("mongod's: record ids, a unique _id index, KeyString-shaped index keys");
        if self.engine.name() == "lmdb" {
            config["emulated_lock"] = json!(self.options.locking.name());
        }
        if self.options.ring_capped {
            config["capped_collections"] = json!("preallocated rings, overwritten in place (MMAPv1)");
        }
        config
    }

    pub fn stats(&self) -> Vec<(String, i64)> {
        let mut out = self.engine.stats();
        out.push(("write_conflicts_retried".into(), self.conflicts.load(Ordering::Relaxed) as i64));
        out
    }

    /// Persists what the catalog must know across a reopen (record counts, capped rings' positions).
    pub fn checkpoint(&self) -> Result<()> {
        self.save_catalogs()?;
        self.engine.checkpoint()
    }

    fn save_catalogs(&self) -> Result<()> {
        let colls: Vec<Arc<Collection>> = self.collections.read().unwrap().values().cloned().collect();
        for coll in colls.iter().chain(self.oplog.iter()) {
            self.save_catalog(coll)?;
        }
        Ok(())
    }

    pub fn close(&self) -> Result<()> {
        if let Some(trimmer) = self.trimmer.lock().unwrap().take() {
            trimmer.stop();
        }
        let saved = self.save_catalogs();
        let closed = self.engine.close();
        saved.and(closed)
    }
}

/// One thread's access to the store: its engine session and transaction state.
pub struct Ctx {
    pub store: Arc<RecordStore>,
    kv: Box<dyn Session>,
    /// Inside a transaction every call joins it; a multi-call transaction on a store with
    /// emulated locks holds the database lock for its whole length, so calls inside it take none.
    in_txn: bool,
    /// The emulated lock an explicit transaction holds until it ends.
    txn_locks: Vec<Held>,
    /// Capped collections this transaction inserted into: (collection, record id, bytes).
    capped_inserts: Vec<(Arc<Collection>, i64, i64)>,
    /// Documents this transaction added to (or removed from) each collection it wrote.
    record_deltas: Vec<(Arc<Collection>, i64)>,
    scratch: Vec<u8>,
}

impl Ctx {
    // -- locking and transactions -------------------------------------------------------------
    /// Takes the emulated MMAPv1 locks for one call (none on engines with document-level
    /// concurrency, or inside a multi-call transaction that holds the database lock).
    fn lock(&self, coll: &Collection, write: bool) -> Vec<Held> {
        let store = &self.store;
        lock::acquire(store.options.locking, &store.db_lock, &coll.lock, store.oplog.as_ref().map(|o| &o.lock), write)
    }

    /// A transaction of several calls may touch several collections: it holds its database
    /// exclusively (under either emulated lock) from begin to end.
    fn transaction_lock(&self) -> Option<Held> {
        (self.store.options.locking != Locking::None).then(|| self.store.db_lock.write())
    }

    /// Runs `f` in one write transaction, retried on write conflicts with mongod's backoff
    /// (write_conflict_exception.cpp: none for 4 attempts, then 1 ms below 10, 5 ms below 100,
    /// then 10 ms). Inside a transaction already, `f` joins it.
    pub fn transaction<T>(&mut self, mut f: impl FnMut(&mut Ctx) -> Result<T>) -> Result<T> {
        if self.in_txn {
            return f(self);
        }
        let _held = self.transaction_lock();
        for attempt in 0u32.. {
            let result = self.attempt(&mut f);
            match result {
                Err(e) if e.is_conflict() => {
                    self.store.conflicts.fetch_add(1, Ordering::Relaxed);
                    let ms = match attempt { 0..=3 => 0, 4..=9 => 1, 10..=99 => 5, _ => 10 };
                    if ms > 0 {
                        std::thread::sleep(std::time::Duration::from_millis(ms));
                    }
                }
                other => return other,
            }
        }
        unreachable!()
    }

    fn attempt<T>(&mut self, f: &mut impl FnMut(&mut Ctx) -> Result<T>) -> Result<T> {
        self.kv.begin(true)?;
        self.in_txn = true;
        self.capped_inserts.clear();
        self.record_deltas.clear();
        let result = f(self);
        self.in_txn = false;
        match result {
            Ok(value) => match self.kv.commit() {
                Ok(()) => {
                    self.after_commit()?;
                    Ok(value)
                }
                Err(e) => {
                    self.kv.rollback();
                    Err(e)
                }
            },
            Err(e) => {
                self.kv.rollback();
                Err(e)
            }
        }
    }

    /// An explicit transaction (the serve protocol's begin / commit / abort): every call joins
    /// it until it ends. A conflict surfaces to the caller, who aborts and retries.
    pub fn begin_explicit(&mut self) -> Result<()> {
        if self.in_txn {
            return Err(Error::other("a transaction is already open on this session"));
        }
        // The emulated lock first, then the engine's writer: the order every call takes them in.
        self.txn_locks.extend(self.transaction_lock());
        if let Err(e) = self.kv.begin(true) {
            self.txn_locks.clear();
            return Err(e);
        }
        self.in_txn = true;
        self.capped_inserts.clear();
        self.record_deltas.clear();
        Ok(())
    }

    pub fn commit_explicit(&mut self) -> Result<()> {
        if !self.in_txn {
            return Err(Error::other("no transaction is open on this session"));
        }
        self.in_txn = false;
        let result = match self.kv.commit() {
            Ok(()) => self.after_commit(),
            Err(e) => {
                self.kv.rollback();
                Err(e)
            }
        };
        self.txn_locks.clear();
        result
    }

    pub fn abort_explicit(&mut self) {
        if self.in_txn {
            self.in_txn = false;
            self.kv.rollback();
        }
        self.txn_locks.clear();
    }

    /// One call: its own write transaction, after the emulated locks.
    fn write_call<T>(&mut self, coll: &Arc<Collection>, mut f: impl FnMut(&mut Ctx) -> Result<T>) -> Result<T> {
        if self.in_txn {
            return f(self);
        }
        let store = self.store.clone();
        let _held = self.lock(coll, true);
        for attempt in 0u32.. {
            match self.attempt(&mut f) {
                Err(e) if e.is_conflict() => {
                    store.conflicts.fetch_add(1, Ordering::Relaxed);
                    let ms = match attempt { 0..=3 => 0, 4..=9 => 1, 10..=99 => 5, _ => 10 };
                    if ms > 0 {
                        std::thread::sleep(std::time::Duration::from_millis(ms));
                    }
                }
                other => return other,
            }
        }
        unreachable!()
    }

    /// A read-only call: a snapshot read (or the caller's transaction).
    fn read_call<T>(&mut self, coll: &Arc<Collection>, f: impl FnOnce(&mut Ctx) -> Result<T>) -> Result<T> {
        if self.in_txn {
            return f(self);
        }
        let _held = self.lock(coll, false);
        self.kv.begin(false)?;
        let result = f(self);
        self.kv.rollback();
        result
    }

    /// Capped collections past their size lose their oldest documents, in a transaction of
    /// their own after the insert's commit, as mongod's cappedDeleteAsNeeded does.
    fn after_commit(&mut self) -> Result<()> {
        for (coll, delta) in self.record_deltas.drain(..) {
            coll.num_records.fetch_add(delta, Ordering::Relaxed);
        }
        let inserts = std::mem::take(&mut self.capped_inserts);
        for (coll, rid, added) in inserts {
            let capped = coll.capped.as_ref().unwrap();
            if capped.background {
                if let Some(trim) = &self.store.oplog_trim {
                    trim.on_commit(rid, added);
                }
            }
            if capped.added(added) {
                capped::delete_oldest(self, &coll)?;
            }
        }
        Ok(())
    }

    // -- index entries ------------------------------------------------------------------------
    fn key_values<'d>(doc: &'d Document, names: &[String]) -> Vec<&'d Bson> {
        Self::key_values_with_id(doc, None, names)
    }

    /// A document's values for an index's fields; `id` stands for an `_id` the document is
    /// being given as it is inserted.
    fn key_values_with_id<'d>(doc: &'d Document, id: Option<&'d Bson>, names: &[String]) -> Vec<&'d Bson> {
        const NULL: &Bson = &Bson::Null;
        names.iter().map(|n| doc.get(n).or(if n == "_id" { id } else { None }).unwrap_or(NULL)).collect()
    }

    fn put_index_entry(&mut self, index: &Index, doc: &Document, generated_id: Option<&Bson>, rid: i64) -> Result<()> {
        let values = Self::key_values_with_id(doc, generated_id, &index.names);
        let mut tb = Vec::new();
        let mut key = keys::encode(&values, &index.directions, &mut tb)?;
        let bits = keys::type_bits_value(&tb, &values);
        if index.spec.unique {
            let mut value = Vec::with_capacity(9 + bits.len());
            keys::append_record_id(&mut value, rid);
            value.extend_from_slice(&bits);
            if !self.kv.insert_new(index.table, &key, &value)? {
                return Err(Error::duplicate(format!("E11000 duplicate key error index: {}", index.spec.name)));
            }
        } else {
            keys::append_record_id(&mut key, rid);
            self.kv.put(index.table, &key, &bits)?;
        }
        Ok(())
    }

    fn delete_index_entry(&mut self, index: &Index, doc: &Document, rid: i64) -> Result<()> {
        let values = Self::key_values(doc, &index.names);
        let mut key = keys::encode(&values, &index.directions, &mut Vec::new())?;
        if !index.spec.unique {
            keys::append_record_id(&mut key, rid);
        }
        self.kv.delete(index.table, &key)
    }

    fn put_id_entry(&mut self, coll: &Collection, id: &Bson, rid: i64) -> Result<()> {
        let Some(table) = coll.id_index else { return Ok(()) };
        let mut tb = Vec::new();
        let key = keys::encode(&[id], &[1], &mut tb)?;
        let mut value = Vec::with_capacity(10);
        keys::append_record_id(&mut value, rid);
        value.extend_from_slice(&keys::type_bits_value(&tb, &[id]));
        if !self.kv.insert_new(table, &key, &value)? {
            return Err(Error::duplicate(format!("E11000 duplicate key error collection: {} index: _id_", coll.name)));
        }
        Ok(())
    }

    fn delete_id_entry(&mut self, coll: &Collection, id: &Bson) -> Result<()> {
        let Some(table) = coll.id_index else { return Ok(()) };
        let key = keys::encode(&[id], &[1], &mut Vec::new())?;
        self.kv.delete(table, &key)
    }

    // -- documents ----------------------------------------------------------------------------
    /// Writes a new document: record, `_id` entry, index entries, oplog entry. Returns its
    /// record id and size. A document without `_id` gets a new ObjectId, first, as mongod gives
    /// it (fixDocumentForInsert); the oplog's entries get none (it has no `_id` index).
    fn insert_one(&mut self, coll: &Arc<Collection>, doc: &Document) -> Result<(i64, i64)> {
        let generated = (coll.id_index.is_some() && !doc.contains_key("_id"))
            .then(|| Bson::ObjectId(bson::oid::ObjectId::new()));
        let raw = match (&generated, document::with_id_first(doc)) {
            (Some(Bson::ObjectId(id)), _) => document::encode_with_id(doc, id)?,
            (_, Some(reordered)) => document::encode(&reordered)?,
            _ => document::encode(doc)?,
        };
        let rid = self.next_record_id(coll, raw.len() as i64)?;
        if let Some(id) = generated.as_ref().or_else(|| doc.get("_id")) {
            self.put_id_entry(coll, id, rid)?;
        }
        self.finish_insert(coll, doc, generated.as_ref(), rid, raw)
    }

    fn next_record_id(&mut self, coll: &Arc<Collection>, size: i64) -> Result<i64> {
        Ok(match &coll.capped {
            Some(capped) if capped.is_ring() => capped::ring_place(self, coll, size)?,
            _ => coll.next_id.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// The index entries, the record and the oplog entry of a new document.
    fn finish_insert(&mut self, coll: &Arc<Collection>, doc: &Document, generated_id: Option<&Bson>, rid: i64,
                     raw: Vec<u8>) -> Result<(i64, i64)> {
        let indexes = coll.indexes.read().unwrap().clone();
        for index in &indexes {
            self.put_index_entry(index, doc, generated_id, rid)?;
        }
        let size = self.put_record(coll, rid, &raw)?;
        self.log("i", coll, document::raw_ref(&raw)?, None)?;
        Ok((rid, size))
    }

    /// Stores a new record's bytes and counts it (and, in a capped collection, its space).
    fn put_record(&mut self, coll: &Arc<Collection>, rid: i64, raw: &[u8]) -> Result<i64> {
        let size = raw.len() as i64;
        self.kv.put(coll.records, &keys::record_key(rid), raw)?;
        if let Some(capped) = &coll.capped {
            if capped.background {
                if let Some(trim) = &self.store.oplog_trim {
                    trim.on_insert(self.kv.as_mut(), rid, size)?;
                }
            }
            self.capped_inserts.push((coll.clone(), rid, size));
        }
        self.record_deltas.push((coll.clone(), 1));
        Ok(size)
    }

    /// Removes a document and its index entries (not logged: callers log what they mean).
    fn remove_record(&mut self, coll: &Arc<Collection>, rid: i64, doc: &Document) -> Result<()> {
        self.record_deltas.push((coll.clone(), -1));
        if let Some(id) = doc.get("_id") {
            self.delete_id_entry(coll, id)?;
        }
        let indexes = coll.indexes.read().unwrap().clone();
        for index in &indexes {
            self.delete_index_entry(index, doc, rid)?;
        }
        self.kv.delete(coll.records, &keys::record_key(rid))
    }

    /// Appends the oplog entry of a write, in its transaction: built from the write's own bytes
    /// (`o`, `o2`), never from a copy of its document.
    fn log(&mut self, op: &str, coll: &Collection, o: &RawDocument, o2: Option<&RawDocument>) -> Result<()> {
        let Some(oplog) = self.store.oplog.clone() else { return Ok(()) };
        if coll.name == oplog::NAME {
            return Ok(());
        }
        let entry = oplog::entry(op, &coll.name, o, o2);
        let rid = self.next_record_id(&oplog, entry.as_bytes().len() as i64)?;
        self.put_record(&oplog, rid, entry.as_bytes())?;
        Ok(())
    }

    /// The record id and stored bytes of the document with this key, or None, reached the way
    /// mongod 3.2's planner reached it (mongo@r3.2.0 src/mongo/db/query/get_executor.cpp):
    /// - IDHACK, only for an `_id`-only equality (`idhack`: no other condition,
    ///   CanonicalQuery::isSimpleIdQuery): a point lookup in the `_id` index (IDHackStage,
    ///   IndexAccessMethod::findSingle: WiredTigerIndexUnique seekExact is WT_CURSOR::search,
    ///   RocksUniqueIndex's a Get), then the record;
    /// - every other equality, on `_id` with more conditions or on any other index, unique or
    ///   not: an index cursor seek (IXSCAN: IndexScan::initIndexScan calls seek(), which is
    ///   search_near on WiredTiger and an iterator Seek on MongoRocks, no bloom filter), then the
    ///   record (FETCH: a point lookup, WT search / Rocks Get).
    fn locate(&mut self, coll: &Collection, index: Option<&str>, key: &[Bson], idhack: bool, for_update: bool)
              -> Result<Option<(i64, Vec<u8>)>> {
        let rid = match index {
            None if idhack => {
                let table = coll.id_index.ok_or_else(|| Error::other(format!("{} has no _id index", coll.name)))?;
                let id = key.first().ok_or_else(|| Error::other("a lookup by _id needs the _id value"))?;
                let encoded = keys::encode(&[id], &[1], &mut Vec::new())?;
                self.scratch.clear();
                let mut value = std::mem::take(&mut self.scratch);
                let found = self.kv.get(table, &encoded, &mut value)?;
                let rid = if found { Some(keys::read_record_id(&value).0) } else { None };
                self.scratch = value;
                rid
            }
            None => {
                let table = coll.id_index.ok_or_else(|| Error::other(format!("{} has no _id index", coll.name)))?;
                self.seek(table, &[1], true, key, 1)?
            }
            Some(name) => {
                let index = coll.index(name)?;
                self.seek(index.table, &index.directions, index.spec.unique, key, index.names.len())?
            }
        };
        let Some(rid) = rid else { return Ok(None) };
        let mut raw = Vec::new();
        let found = if for_update {
            self.kv.get_for_update(coll.records, &keys::record_key(rid), &mut raw)?
        } else {
            self.kv.get(coll.records, &keys::record_key(rid), &mut raw)?
        };
        Ok(if found { Some((rid, raw)) } else { None })
    }

    /// IXSCAN's first entry for an equality on the index's leading fields: a cursor positioned
    /// at the key (Session::scan stops after one entry) and the record id it points at.
    fn seek(&mut self, table: Table, directions: &[i8], unique: bool, key: &[Bson], fields: usize) -> Result<Option<i64>> {
        let refs: Vec<&Bson> = key.iter().collect();
        let mut prefix = Vec::new();
        keys::append_fields(&mut prefix, &refs, &directions[..refs.len().min(directions.len())], &mut Vec::new())?;
        if key.len() == fields {
            prefix.push(keys::END);
        }
        let end = keys::prefix_successor(&prefix);
        let mut rid = None;
        self.kv.scan(table, &prefix, end.as_deref(), false, &mut |k, v| {
            rid = Some(if unique { keys::read_record_id(v).0 } else { keys::split_record_id(k).1 });
            false
        })?;
        Ok(rid)
    }

    fn key_field_names(coll: &Collection, index: Option<&str>) -> Result<Vec<String>> {
        Ok(match index {
            None => vec!["_id".to_string()],
            Some(name) => coll.index(name)?.names.clone(),
        })
    }

    /// The table and [start, end) byte range of a Range over an index (or the _id index).
    fn range_bounds(&self, coll: &Collection, index: Option<&Index>, range: &Range) -> Result<(Table, Vec<u8>, Option<Vec<u8>>)> {
        let (table, directions): (Table, &[i8]) = match index {
            Some(i) => (i.table, &i.directions),
            None => (coll.id_index.ok_or_else(|| Error::other("no _id index"))?, &[1]),
        };
        let prefix: Vec<&Bson> = range.prefix.iter().collect();
        let mut base = Vec::new();
        keys::append_fields(&mut base, &prefix, &directions[..prefix.len().min(directions.len())], &mut Vec::new())?;
        let rest = &directions[prefix.len().min(directions.len())..];
        let (mut low, mut high) = (range.low.as_ref(), range.high.as_ref());
        let width = low.map(|l| l.len()).max(high.map(|h| h.len())).unwrap_or(0);
        if rest.iter().take(width).any(|d| *d < 0) {
            if width > 1 {
                return Err(Error::other("tuple bounds over descending index fields are not supported"));
            }
            std::mem::swap(&mut low, &mut high); // a descending field stores high values first
        }
        let bound = |values: &Vec<Bson>| -> Result<Vec<u8>> {
            let refs: Vec<&Bson> = values.iter().collect();
            let mut out = base.clone();
            keys::append_fields(&mut out, &refs, &rest[..refs.len().min(rest.len())], &mut Vec::new())?;
            Ok(out)
        };
        let start = match low { Some(l) => bound(l)?, None => base.clone() };
        let end = match high { Some(h) => keys::prefix_successor(&bound(h)?), None => keys::prefix_successor(&base) };
        Ok((table, start, end))
    }

    /// Index entries in range, in order (or reversed), as (key, value) copies, after `skip`,
    /// at most `limit`.
    fn entries(&mut self, coll: &Collection, index: Option<&Index>, range: &Range) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let scans = if range.as_or { self.or_clauses(coll, index, range)? } else { vec![self.range_bounds(coll, index, range)?] };
        let mut out = Vec::new();
        let mut skipped = 0usize;
        let limit = range.limit.unwrap_or(usize::MAX);
        for (table, start, end) in scans {
            if out.len() >= limit {
                break;
            }
            self.kv.scan(table, &start, end.as_deref(), range.reverse, &mut |k, v| {
                if skipped < range.skip {
                    skipped += 1;
                    return true;
                }
                out.push((k.to_vec(), v.to_vec()));
                out.len() < limit
            })?;
        }
        Ok(out)
    }

    /// The index ranges of a tuple bound's `$or` clauses, most specific first, as mongod's OR
    /// stage scans them: (a = x, b = y, c >= z), then (a = x, b > y), then (a > x). Each clause is
    /// a seek of its own; their ranges follow one another, so no entry is returned twice.
    fn or_clauses(&self, coll: &Collection, index: Option<&Index>, range: &Range) -> Result<Vec<(Table, Vec<u8>, Option<Vec<u8>>)>> {
        let (table, directions): (Table, &[i8]) = match index {
            Some(i) => (i.table, &i.directions),
            None => (coll.id_index.ok_or_else(|| Error::other("no _id index"))?, &[1]),
        };
        let low = range.low.as_ref().ok_or_else(|| Error::other("an $or range needs a low tuple bound"))?;
        let base: Vec<&Bson> = range.prefix.iter().collect();
        if directions.iter().any(|d| *d < 0) {
            return Err(Error::other("$or ranges over descending index fields are not supported"));
        }
        let mut clauses = Vec::new();
        for depth in (1..=low.len()).rev() {
            let mut equal = base.clone();
            equal.extend(low[..depth - 1].iter());
            let mut bound = equal.clone();
            bound.push(&low[depth - 1]);
            let encoded = |values: &[&Bson]| -> Result<Vec<u8>> {
                let mut out = Vec::new();
                keys::append_fields(&mut out, values, &directions[..values.len().min(directions.len())], &mut Vec::new())?;
                Ok(out)
            };
            let at = encoded(&bound)?;
            // The last clause's bound is inclusive ($gte); the others' strict ($gt): past every
            // key that starts with that value.
            let start = if depth == low.len() { at } else { keys::prefix_successor(&at).unwrap_or(at) };
            let end = if equal.is_empty() { None } else { keys::prefix_successor(&encoded(&equal)?) };
            clauses.push((table, start, end));
        }
        Ok(clauses)
    }

    fn entry_record_id(unique: bool, key: &[u8], value: &[u8]) -> i64 {
        if unique { keys::read_record_id(value).0 } else { keys::split_record_id(key).1 }
    }
}

impl Store for Ctx {
    // -- schema -------------------------------------------------------------------------------
    fn create_collection(&mut self, name: &str, capped_bytes: Option<i64>) -> Result<()> {
        if self.store.collections.read().unwrap().contains_key(name) {
            return Ok(());
        }
        let coll = Arc::new(self.store.new_collection(name, capped_bytes, true, &json!({}))?);
        self.store.save_catalog(&coll)?;
        self.store.collections.write().unwrap().entry(name.to_string()).or_insert(coll);
        Ok(())
    }

    fn create_index(&mut self, collection: &str, spec: IndexSpec) -> Result<()> {
        let coll = self.store.collection(collection)?;
        if coll.indexes.read().unwrap().iter().any(|i| i.spec.name == spec.name) {
            return Ok(());
        }
        let table = self.store.engine.table(&format!("index-{collection}-{}", spec.name), TableKind::Index)?;
        let index = Arc::new(Index::new(spec, table));
        // Entries for documents already present (the workloads create their indexes first).
        let mut docs = Vec::new();
        self.read_call(&coll, |c| {
            c.kv.scan(coll.records, b"", None, false, &mut |k, v| {
                if !capped::is_filler(v) {
                    docs.push((keys::record_id(k), v.to_vec()));
                }
                true
            })
        })?;
        self.write_call(&coll, |c| {
            for (rid, raw) in &docs {
                c.put_index_entry(&index, &document::decode(raw)?, None, *rid)?;
            }
            Ok(())
        })?;
        coll.indexes.write().unwrap().push(index);
        self.store.save_catalog(&coll)
    }

    // -- the Store calls ----------------------------------------------------------------------
    /// Inserts documents; a duplicate key fails the group it is in (DuplicateKey).
    fn insert_many(&mut self, collection: &str, docs: &[Document]) -> Result<usize> {
        let coll = self.store.collection(collection)?;
        if self.in_txn {
            for doc in docs {
                self.insert_one(&coll, doc)?;
            }
            return Ok(docs.len());
        }
        for group in docs.chunks(self.store.options.insert_group.max(1)) {
            self.write_call(&coll, |c| {
                for doc in group {
                    c.insert_one(&coll, doc)?;
                }
                Ok(())
            })?;
        }
        Ok(docs.len())
    }

    fn update(&mut self, collection: &str, index: Option<&str>, key: &[Bson], update: &Update) -> Result<UpdateResult> {
        let coll = self.store.collection(collection)?;
        if coll.capped.is_some() && update.upsert {
            return Err(Error::other(format!("upserts into capped collection {collection:?} are not supported; insert instead")));
        }
        let key_fields = Self::key_field_names(&coll, index)?;
        self.write_call(&coll, |c| {
            let found = c.locate(&coll, index, key, update.filter.is_empty(), true)?;
            let before = match &found {
                Some((_, raw)) => Some(document::decode(raw)?),
                None => None,
            };
            let matched = before.as_ref().map(|d| document::matches(d, &update.filter)).unwrap_or(false);
            if !matched {
                if !update.upsert {
                    return Ok(UpdateResult { matched: false, upserted: false, before: None, acknowledged: true });
                }
                let doc = document::upsert_document(&key_fields, key, update);
                c.insert_one(&coll, &doc)?;
                return Ok(UpdateResult { matched: false, upserted: true, before: None, acknowledged: true });
            }
            let (rid, raw) = found.unwrap();
            let before = before.unwrap();
            let (after, modified) = document::apply(&before, update)?;
            let encoded = document::encode(&after)?;
            if !modified || (update.replace.is_some() && encoded == raw) {
                // A no-op: nothing written, nothing logged (UpdateStage::transformAndUpdate).
                return Ok(UpdateResult { matched: true, upserted: false, acknowledged: true,
                                         before: if update.return_before { Some(before) } else { None } });
            }
            if coll.capped.is_some() && encoded.len() != raw.len() {
                // As MongoDB before 3.2 required: a capped document keeps its size.
                return Err(Error::other(format!("an update may not change the size of a document in capped collection {collection:?}")));
            }
            let indexes = coll.indexes.read().unwrap().clone();
            for index in &indexes {
                let old = Self::key_values(&before, &index.names);
                let new = Self::key_values(&after, &index.names);
                if old.iter().zip(&new).any(|(a, b)| a != b) {
                    c.delete_index_entry(index, &before, rid)?;
                    c.put_index_entry(index, &after, None, rid)?;
                }
            }
            c.kv.put(coll.records, &keys::record_key(rid), &encoded)?;
            let id = document::id_only(before.get("_id"))?;
            let change = match &update.replace {
                Some(_) => document::raw(encoded)?,
                None => document::modifiers(update)?,
            };
            c.log("u", &coll, &change, Some(&id))?;
            Ok(UpdateResult { matched: true, upserted: false, before: if update.return_before { Some(before) } else { None },
                               acknowledged: true })
        })
    }

    fn delete(&mut self, collection: &str, index: Option<&str>, key: &[Bson], filter: &Filter) -> Result<bool> {
        let coll = self.store.collection(collection)?;
        if coll.capped.is_some() {
            return Err(Error::other(format!("cannot delete from capped collection {collection:?} (as MongoDB before 5.0 refused)")));
        }
        self.write_call(&coll, |c| {
            let Some((rid, raw)) = c.locate(&coll, index, key, filter.is_empty(), true)? else { return Ok(false) };
            let doc = document::decode(&raw)?;
            if !document::matches(&doc, filter) {
                return Ok(false);
            }
            c.remove_record(&coll, rid, &doc)?;
            c.log("d", &coll, &document::id_only(doc.get("_id"))?, None)?;
            Ok(true)
        })
    }

    fn get(&mut self, collection: &str, index: Option<&str>, key: &[Bson]) -> Result<Option<RawDocumentBuf>> {
        let coll = self.store.collection(collection)?;
        self.read_call(&coll, |c| match c.locate(&coll, index, key, true, false)? {
            Some((_, raw)) => Ok(Some(document::raw(raw)?)),
            None => Ok(None),
        })
    }

    /// Documents whose index key is prefix + (v,) for v in last_values ($in on the last
    /// field), in index order.
    fn get_many(&mut self, collection: &str, index: &str, prefix: &[Bson], last_values: &[Bson]) -> Result<Vec<RawDocumentBuf>> {
        let coll = self.store.collection(collection)?;
        let idx = coll.index(index)?;
        let descending = idx.directions.get(prefix.len()).copied().unwrap_or(1) < 0;
        let mut keyed: Vec<(Vec<u8>, &Bson)> = last_values.iter()
            .map(|v| Ok((keys::encode(&[v], &[1], &mut Vec::new())?, v)))
            .collect::<Result<_>>()?;
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        if descending {
            keyed.reverse();
        }
        self.read_call(&coll, |c| {
            let mut out = Vec::new();
            let mut key = prefix.to_vec();
            for (_, value) in &keyed {
                key.push((*value).clone());
                if let Some((_, raw)) = c.locate(&coll, Some(index), &key, false, false)? {
                    out.push(document::raw(raw)?);
                }
                key.pop();
            }
            Ok(out)
        })
    }

    fn count_in(&mut self, collection: &str, index: &str, prefix: &[Bson], last_values: &[Bson]) -> Result<usize> {
        // COUNT over IXSCAN + FETCH: the same index seeks and record fetches as the find.
        Ok(self.get_many(collection, index, prefix, last_values)?.len())
    }

    fn scan(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<Vec<RawDocumentBuf>> {
        let coll = self.store.collection(collection)?;
        let idx = match index { Some(name) => Some(coll.index(name)?), None => None };
        let names = Self::key_field_names(&coll, index)?;
        // A projection inside the index is answered from the index alone (a covered query).
        let covered = match (&idx, &range.fields) {
            (Some(_), Some(fields)) => fields.iter().all(|f| names.contains(f) && f != "_id"),
            _ => false,
        };
        self.read_call(&coll, |c| {
            let entries = c.entries(&coll, idx.as_deref(), range)?;
            let unique = idx.as_ref().map(|i| i.spec.unique).unwrap_or(true);
            let mut out = Vec::with_capacity(entries.len());
            for (key, value) in entries {
                if covered {
                    let bits = if unique { &value[keys::read_record_id(&value).1..] } else { &value[..] };
                    let (fields_end, _) = if unique { (key.len(), 0) } else { keys::split_record_id(&key) };
                    let decoded = keys::decode(&key[..fields_end], bits)?;
                    let mut doc = Document::new();
                    for field in range.fields.as_ref().unwrap() {
                        let i = names.iter().position(|n| n == field).unwrap();
                        doc.insert(field.clone(), decoded[i].clone());
                    }
                    out.push(RawDocumentBuf::try_from(&doc)?);
                    continue;
                }
                let rid = Self::entry_record_id(unique, &key, &value);
                let mut raw = Vec::new();
                if c.kv.get(coll.records, &keys::record_key(rid), &mut raw)? {
                    match &range.fields {
                        None => out.push(document::raw(raw)?),
                        Some(fields) => {
                            let full = document::decode(&raw)?;
                            let mut doc = Document::new();
                            for f in fields {
                                if let Some(v) = full.get(f) {
                                    doc.insert(f.clone(), v.clone());
                                }
                            }
                            out.push(RawDocumentBuf::try_from(&doc)?);
                        }
                    }
                }
            }
            Ok(out)
        })
    }

    /// Index entries in range (a count scan: no document is read).
    fn count(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<usize> {
        let coll = self.store.collection(collection)?;
        if index.is_none() && range.prefix.is_empty() && range.low.is_none() && range.high.is_none() {
            // No query: the collection's record count (mongod 3.2's CountStage::trivialCount).
            let n = coll.num_records.load(Ordering::Relaxed).max(0) as usize;
            return Ok(n.saturating_sub(range.skip).min(range.limit.unwrap_or(usize::MAX)));
        }
        let idx = match index { Some(name) => Some(coll.index(name)?), None => None };
        self.read_call(&coll, |c| {
            let (table, start, end) = c.range_bounds(&coll, idx.as_deref(), range)?;
            // COUNT_SCAN: index entries only; skip and limit as the count command applies them.
            let limit = range.limit.unwrap_or(usize::MAX);
            let mut n = 0usize;
            if limit > 0 {
                c.kv.scan(table, &start, end.as_deref(), false, &mut |_, _| {
                    n += 1;
                    n < limit.saturating_add(range.skip)
                })?;
            }
            Ok(n.saturating_sub(range.skip).min(limit))
        })
    }

    /// One page of an index (or of the `_id` index) in key order: up to `n` entries after the
    /// raw key `after` (None: from the start), each as its raw key, its decoded fields and,
    /// with `fetch`, its document. Read in one short transaction, so a caller can walk an
    /// index page by page while doing other calls (the consistency check does).
    fn index_page(&mut self, collection: &str, index: Option<&str>, after: Option<&[u8]>, n: usize, fetch: bool)
                      -> Result<Vec<PageEntry>> {
        let coll = self.store.collection(collection)?;
        let idx = match index { Some(name) => Some(coll.index(name)?), None => None };
        let (table, unique) = match &idx {
            Some(i) => (i.table, i.spec.unique),
            None => (coll.id_index.ok_or_else(|| Error::other("no _id index"))?, true),
        };
        let mut start = after.map(|a| a.to_vec()).unwrap_or_default();
        if after.is_some() {
            start.push(0); // the smallest key after `after`
        }
        self.read_call(&coll, |c| {
            let mut raw: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            c.kv.scan(table, &start, None, false, &mut |k, v| {
                raw.push((k.to_vec(), v.to_vec()));
                raw.len() < n
            })?;
            let mut page = Vec::with_capacity(raw.len());
            for (key, value) in raw {
                let (end, bits, rid) = if unique {
                    let (rid, used) = keys::read_record_id(&value);
                    (key.len(), &value[used..], rid)
                } else {
                    let (end, rid) = keys::split_record_id(&key);
                    (end, &value[..], rid)
                };
                let fields = keys::decode(&key[..end], bits)?;
                let doc = if fetch {
                    let mut bytes = Vec::new();
                    if c.kv.get(coll.records, &keys::record_key(rid), &mut bytes)? { Some(document::raw(bytes)?) } else { None }
                } else {
                    None
                };
                page.push((key, fields, doc));
            }
            Ok(page)
        })
    }

    /// Documents in natural (insertion) order, oldest first.
    fn natural(&mut self, collection: &str, limit: Option<usize>) -> Result<Vec<RawDocumentBuf>> {
        let coll = self.store.collection(collection)?;
        self.read_call(&coll, |c| {
            let mut out = Vec::new();
            let limit = limit.unwrap_or(usize::MAX);
            let order = capped::natural_order(c, &coll)?;
            for rid in order.into_iter().take(limit) {
                let mut raw = Vec::new();
                if c.kv.get(coll.records, &keys::record_key(rid), &mut raw)? {
                    out.push(document::raw(raw)?);
                }
            }
            Ok(out)
        })
    }

    fn transaction_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Store) -> Result<()>) -> Result<()> {
        self.transaction(|c| f(c))
    }

    fn atomic(&self) -> bool {
        true
    }
}
