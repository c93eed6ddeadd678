//! MongoDB's record-store layout over an embedded engine, as mongod 3.x lays it out.
//!
//! A collection is a record table keyed by a 64-bit record id holding the BSON document, plus
//! a unique `_id` index mapping the `_id` to the record id; each secondary index is a table of
//! its own (crate::keys describes the keys). A lookup by `_id` or any index is an index probe
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
pub use super::document;
use super::fields;
// The key encoding is a leaf below the engines (they decode record ids with it); the store
// keeps its old path to it.
pub use crate::keys;
pub mod lock;
pub mod oplog;
mod access;
mod calls;
mod transactions;
mod writes;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use bson::{Bson, Document, RawDocument, RawDocumentBuf};
use serde_json::{json, Value};

use crate::engines::{Engine, Session, Table, TableKind, Visit};
use crate::error::{Error, Result};
use capped::Capped;
use fields::Fields;
use crate::calls::{Filter, IndexSpec, PageEntry, Range, Store, Update, UpdateResult};
pub use lock::Locking;
use lock::{Held, Latch};

const CATALOG: &str = "_mdb_catalog";

struct Index {
    spec: IndexSpec,
    table: Table,
    directions: Vec<i8>,
    /// The fields, shared: an upsert names them for its new document on every call.
    names: Arc<[String]>,
}

impl Index {
    fn new(spec: IndexSpec, table: Table) -> Self {
        let directions = spec.fields.iter().map(|(_, d)| *d).collect();
        let names = spec.names().into();
        Index { spec, table, directions, names }
    }
}

pub struct Collection {
    pub name: String,
    /// "enginebench.<name>", as the oplog's entries name it.
    ns: String,
    records: Table,
    /// The unique `_id` index ("_id_"); None for the oplog, which has none.
    id_index: Option<Table>,
    /// Replaced whole when an index is added, so a write takes the list with one reference count.
    indexes: RwLock<Arc<Vec<Arc<Index>>>>,
    /// How many times the index list was replaced: a thread's copy of the list is current while
    /// this is unchanged (Ctx::with_index).
    index_generation: AtomicU64,
    next_id: AtomicI64,
    /// Documents in the collection, as mongod's RecordStore::numRecords keeps them: changed when
    /// a write commits, kept in the catalog across a reopen (mongod's size storer), read by a
    /// count with no query (CountStage::trivialCount).
    pub num_records: AtomicI64,
    pub capped: Option<Capped>,
    lock: Arc<Latch>,
}

impl Collection {
    fn indexes(&self) -> Arc<Vec<Arc<Index>>> {
        self.indexes.read().unwrap().clone()
    }

    fn add_index(&self, index: Arc<Index>) {
        let mut indexes = self.indexes.write().unwrap();
        let mut more = Vec::clone(&indexes);
        more.push(index);
        *indexes = Arc::new(more);
        self.index_generation.fetch_add(1, Ordering::Release);
    }

    fn index(&self, name: &str) -> Result<Arc<Index>> {
        self.named(&self.indexes.read().unwrap(), name).cloned()
    }

    /// The index `name` in a list of this collection's indexes.
    fn named<'a>(&self, indexes: &'a [Arc<Index>], name: &str) -> Result<&'a Arc<Index>> {
        indexes.iter().find(|i| i.spec.name == name)
            .ok_or_else(|| Error::other(format!("collection {:?} has no index {name:?}", self.name)))
    }
}

pub struct StoreOptions {
    /// Documents per storage transaction when a batch is inserted outside one (the `insert_group`
    /// option): 1 in MongoDB 3.0 and 3.2, whose write commands inserted each document in a
    /// WriteUnitOfWork of its own (mongo@r3.2.0 src/mongo/db/commands/write_commands/
    /// batch_executor.cpp, insertOne); 64 from 3.4 on (write_ops_exec.cpp
    /// insertBatchAndHandleErrors, internalInsertMaxBatchSize). A batch is never atomic, as
    /// insertMany is not.
    pub insert_group: usize,
    pub oplog: bool,
    pub oplog_bytes: i64,
    pub locking: Locking,
    /// Capped collections as preallocated rings overwritten in place (the mmap stand-in).
    pub ring_capped: bool,
    /// A query's scan yields every so many entries or so much time, whichever comes first
    /// (mongo@r3.2.0 src/mongo/db/query/query_knobs.cpp: internalQueryExecYieldIterations 128,
    /// internalQueryExecYieldPeriodMS 10; PlanYieldPolicy): its snapshot let go, the scan
    /// resumed past its last entry with a new seek (access.rs scan_yielding). None: no yields.
    pub yields: Option<(usize, std::time::Duration)>,
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
    /// What the engine's server did differently (Engine::record_store_layout).
    layout: crate::engines::RecordStoreLayout,
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
            layout: Default::default(),
        };
        store.layout = store.engine.record_store_layout();
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
                 capped_inserts: Vec::new(), capped_allocated: Vec::new(), record_deltas: Vec::new(),
                 scratch: Vec::with_capacity(256),
                 keys: KeyBuffers::default(),
                 known: Default::default(), index_lists: Vec::new() })
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
                coll.add_index(Arc::new(Index::new(spec, table)));
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
            ns: format!("enginebench.{name}"),
            records,
            id_index,
            indexes: RwLock::new(Arc::new(Vec::new())),
            index_generation: AtomicU64::new(0),
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
    /// Whether an index keeps its record ids in its values (a unique index of mongod's layout)
    /// rather than at the end of its keys.
    pub(super) fn rid_in_value(&self, unique: bool) -> bool {
        unique && !self.layout.record_id_in_every_key
    }

    pub fn info(&self) -> Value {
        let mut config = self.engine.config();
        config["oplog"] = json!(self.options.oplog);
        config["insert_group"] = json!(self.options.insert_group);
        config["oplog_size_mb"] = json!(self.options.oplog_bytes >> 20);
        config["layout"] = json!(if self.layout.record_id_in_every_key {
            "mongod 3.0's as TokuMXse's tokuft engine made it: record ids, an _id index, KeyString-shaped index keys \
             each ending with its record id (unique ones too, checked by a read first), a read of each record \
             before it is rewritten or deleted, same-size updates as update messages"
        } else {
            "mongod's: record ids, a unique _id index, KeyString-shaped index keys"
        });
        if self.engine.mmap_stand_in() {
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

    pub fn checkpoint_marks(&self) -> Option<crate::engines::CheckpointMarks> {
        self.engine.checkpoint_marks()
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
    /// Capped record ids this transaction allocated, open until it ends (Capped::allocate).
    capped_allocated: Vec<(Arc<Collection>, i64)>,
    /// Documents this transaction added to (or removed from) each collection it wrote.
    record_deltas: Vec<(Arc<Collection>, i64)>,
    scratch: Vec<u8>,
    /// The index key, value and type bits the write path builds, reused from call to call.
    keys: KeyBuffers,
    /// The collections this thread has used, by name. A collection, once created, stays for the
    /// store's life, so this never goes stale; it spares each call the store's shared map (its
    /// lock, and SipHash of the name: 5% of a read phase on the mmap stand-in).
    known: foldhash::HashMap<Box<str>, Arc<Collection>>,
    /// This thread's copies of the index lists of the collections it read through an index.
    index_lists: Vec<IndexList>,
}

/// A collection's index list as one thread last read it (Ctx::with_index).
struct IndexList {
    /// The collection's address: a collection stays for the store's life, which the Ctx holds.
    collection: usize,
    generation: u64,
    indexes: Arc<Vec<Arc<Index>>>,
}

/// Buffers for building index entries: one set per thread, so writing an entry allocates
/// nothing (a key, a value and type bits per entry were most of the runner's allocations in a
/// LinkBench load).
#[derive(Default)]
pub(super) struct KeyBuffers {
    key: Vec<u8>,
    value: Vec<u8>,
    type_bits: Vec<u8>,
}

impl Ctx {
    /// The collection named `name`, from this thread's list when it has used it before.
    pub(crate) fn collection(&mut self, name: &str) -> Result<Arc<Collection>> {
        if let Some(coll) = self.known.get(name) {
            return Ok(coll.clone());
        }
        let coll = self.store.collection(name)?;
        self.known.insert(name.into(), coll.clone());
        Ok(coll)
    }

    /// Runs `f` with the index `name` of `coll`, taken from this thread's copy of the collection's
    /// index list. Reading the shared list takes its lock and a reference count to the index:
    /// atomic writes to cache lines every client thread shares, 13% of a four-client LMDB read
    /// phase in Collection::index and the drop of its reference. The copy is read again only
    /// when an index was added since (the collection's index_generation, read before the list,
    /// so a copy is never newer than its generation says and at worst read once more).
    fn with_index<R>(&mut self, coll: &Collection, name: &str,
                     f: impl FnOnce(&mut Self, &Index) -> Result<R>) -> Result<R> {
        let address = coll as *const Collection as usize;
        let generation = coll.index_generation.load(Ordering::Acquire);
        let cached = self.index_lists.iter().position(|l| l.collection == address).map(|i| self.index_lists.swap_remove(i));
        let list = match cached {
            Some(list) if list.generation == generation => list,
            _ => IndexList { collection: address, generation, indexes: coll.indexes() },
        };
        let result = coll.named(&list.indexes, name).and_then(|index| f(self, index));
        self.index_lists.push(list);
        result
    }
}
