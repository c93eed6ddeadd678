//! TokuMX's layout over the fractal tree, as TokuMX 1.0.4 (seed 004's) and Percona TokuMX 2.0.1
//! (seed 002's) made it, from their src/mongo/db sources at those tags (Tokutek/mongo 1.0.4 and
//! tokumx-2.0.1; each rule below names its file):
//!
//! - a collection is its `_id` index: the dictionary `<db>.<collection>.$_id_`, keyed by the KeyV1
//!   of the `_id`, holds each whole document (clustering; namespace_details.cpp /
//!   collection.cpp indexInfo(pk, unique, clustering)); there are no record ids;
//! - a secondary index `<ns>.$<name>` holds the KeyV1 of its values followed by the primary key,
//!   with an empty value (storage/key.h, index.cpp insertPair / env.cpp generate_row_for_put);
//! - every dictionary is compared by TokuMX's comparator with the index's ordering in its
//!   descriptor (storage/env.cpp dbt_key_compare and set_db_descriptor; descriptor.cpp in 2.x);
//!   2.x compares ObjectId `_id` keys by memcmp (set_memcmp_magic);
//! - each write message is one serializable transaction committed DB_TXN_NOSYNC (instance.cpp,
//!   client_transaction.cpp), its reads locking what they read (the locktree: document-level
//!   locks); each query a read-only snapshot that locks nothing; no collection lock;
//! - the writes and reads themselves are in writes.rs and reads.rs, the oplog in oplog.rs, the
//!   update messages (2.x, and fastUpdates) in update_message.rs.
//!
//! What is not modelled: capped and natural-order collections (no experiment runs one on the
//! fractal tree), the bulk loader of a foreground index build (the workloads create their indexes
//! before inserting), multikey indexes (no workload indexes an array), partitioned collections.
mod calls;
pub mod keyv1;
mod oplog;
mod reads;
mod update_message;
mod writes;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use bson::{Bson, Document};
use serde_json::{json, Map, Value};

use crate::calls::IndexSpec;
use crate::engines::fractal::{DictionarySpec, Fractal, Server, Txn};
use crate::engines::{Engine, Table};
use crate::error::{Error, Result};
pub use keyv1::Flavour;

/// The database every workload's collections live in (TokuMX's dictionary names start with it).
const DB: &str = "enginebench";

/// The layout's own options (lib/enginebench/engines.py RecordStoreOptions): whether writes are
/// logged to an oplog, as a replica set's primary logs them.
pub struct Options {
    pub oplog: bool,
}

struct Index {
    spec: IndexSpec,
    table: Table,
    names: Vec<String>,
}

pub struct Collection {
    name: String,
    ns: String,
    /// The clustering `_id` dictionary: the documents themselves.
    pk: Table,
    indexes: RwLock<Arc<Vec<Arc<Index>>>>,
}

impl Collection {
    fn indexes(&self) -> Arc<Vec<Arc<Index>>> {
        self.indexes.read().unwrap().clone()
    }

    fn index(&self, name: &str) -> Result<Arc<Index>> {
        self.indexes().iter().find(|i| i.spec.name == name).cloned()
            .ok_or_else(|| Error::other(format!("collection {:?} has no index {name:?}", self.name)))
    }

    /// The index a call names, or None for the `_id` index.
    fn named(&self, index: Option<&str>) -> Result<Option<Arc<Index>>> {
        index.map(|name| self.index(name)).transpose()
    }
}

pub struct TokuMX {
    pub engine: Arc<Fractal>,
    flavour: Flavour,
    /// `<db>.ns`: each collection's metadata, keyed by the KeyV1 of its namespace
    /// (namespace_index.cpp at 1.0.4, collection_map.cpp at 2.0.1).
    catalog: Table,
    collections: RwLock<HashMap<String, Arc<Collection>>>,
    oplog: Option<oplog::Oplog>,
    pub conflicts: AtomicU64,
}

/// The dictionary names of a collection's indexes (IndexDetails::indexNamespace: `<ns>.$<name>`).
fn dictionary_name(ns: &str, index: &str) -> String {
    format!("{ns}.${index}")
}

impl TokuMX {
    pub fn open(dir: &std::path::Path, engine_options: &Map<String, Value>, options: Options) -> Result<Arc<TokuMX>> {
        let engine = Fractal::open_watched(dir, engine_options, Some(update_message::on_update))?;
        let flavour = match engine.server() {
            Server::TokuMX1 => Flavour::V1,
            Server::TokuMX2 => Flavour::V2,
            Server::TokuMXse => return Err(Error::other("a TokuMXse release runs mongod's record store, not TokuMX's layout")),
        };
        let catalog = engine.dictionary(&format!("{DB}.ns"), &DictionarySpec {
            descriptor: descriptor(flavour, &[("ns".into(), 1)], false), ..Default::default() })?;
        let mut store = TokuMX { engine, flavour, catalog, collections: RwLock::new(HashMap::new()), oplog: None,
                                 conflicts: AtomicU64::new(0) };
        if options.oplog {
            store.oplog = Some(oplog::Oplog::open(&store)?);
        }
        store.load_catalog()?;
        Ok(Arc::new(store))
    }

    pub fn session(self: &Arc<Self>) -> Result<Ctx> {
        Ok(Ctx { store: self.clone(), explicit: None, pending_ops: Vec::new() })
    }

    fn flags(&self) -> &'static crate::engines::fractal::Flags {
        self.engine.flags()
    }

    /// The primary-key dictionary's spec: `{_id: 1}`, unique, clustering (2.x: ObjectId keys by memcmp).
    fn pk_spec(&self) -> DictionarySpec {
        DictionarySpec {
            descriptor: descriptor(self.flavour, &[("_id".into(), 1)], true),
            clustering: true,
            memcmp_magic: (self.flavour == Flavour::V2).then_some(keyv1::OID_MAGIC),
        }
    }

    fn open_collection(&self, name: &str, specs: &[IndexSpec]) -> Result<Arc<Collection>> {
        let ns = format!("{DB}.{name}");
        let pk = self.engine.dictionary(&dictionary_name(&ns, "_id_"), &self.pk_spec())?;
        let coll = Collection { name: name.to_string(), ns, pk, indexes: RwLock::new(Arc::new(Vec::new())) };
        for spec in specs {
            let index = self.open_index(&coll, spec.clone())?;
            let mut list = Vec::clone(&coll.indexes());
            list.push(index);
            *coll.indexes.write().unwrap() = Arc::new(list);
        }
        Ok(Arc::new(coll))
    }

    fn open_index(&self, coll: &Collection, spec: IndexSpec) -> Result<Arc<Index>> {
        let table = self.engine.dictionary(&dictionary_name(&coll.ns, &spec.name), &DictionarySpec {
            descriptor: descriptor(self.flavour, &spec.fields, false), ..Default::default() })?;
        let names = spec.names();
        Ok(Arc::new(Index { spec, table, names }))
    }

    // -- the catalog ---------------------------------------------------------------------------
    fn catalog_key(&self, ns: &str) -> Result<Vec<u8>> {
        keyv1::primary_key(&Bson::String(ns.to_string()), self.flavour)
    }

    fn load_catalog(&self) -> Result<()> {
        let f = self.flags();
        let txn = self.engine.begin(f.snapshot | f.read_only, None)?;
        let mut entries: Vec<Vec<u8>> = Vec::new();
        let mut cursor = self.engine.cursor(&txn, self.catalog, 0)?;
        let mut each = |_: &[u8], v: &[u8]| {
            entries.push(v.to_vec());
            true
        };
        if cursor.seek(0, &[], false, &mut each)? {
            while cursor.step(0, false, &mut each)? {}
        }
        drop(cursor);
        drop(txn);
        for raw in entries {
            let meta = Document::from_reader(raw.as_slice())?;
            let name = meta.get_str("name").map_err(|e| Error::other(format!("TokuMX catalog: {e}")))?.to_string();
            let specs = meta.get_array("indexes").map(|a| a.to_vec()).unwrap_or_default().into_iter()
                .filter_map(|s| match s { Bson::String(json) => serde_json::from_str(&json).ok(), _ => None })
                .map(|v: Value| IndexSpec::from_json(&v))
                .collect::<Result<Vec<_>>>()?;
            let coll = self.open_collection(&name, &specs)?;
            self.collections.write().unwrap().insert(name, coll);
        }
        Ok(())
    }

    /// Writes a collection's metadata: its name, primary key and secondary index specs (as
    /// TokuMX's Collection::serialize lists them), in a transaction of its own (DDL).
    fn save_catalog(&self, coll: &Collection) -> Result<()> {
        let specs: Vec<Bson> = coll.indexes().iter().map(|i| Bson::String(i.spec.to_json().to_string())).collect();
        let meta = bson::doc! {"ns": &coll.ns, "name": &coll.name, "pk": {"_id": 1}, "indexes": specs};
        let txn = self.engine.begin(self.flags().serializable, None)?;
        self.engine.put(&txn, self.catalog, &self.catalog_key(&coll.ns)?, &meta.to_vec()?, 0)?;
        txn.commit(self.engine.commit_flags())
    }

    fn collection(&self, name: &str) -> Result<Arc<Collection>> {
        self.collections.read().unwrap().get(name).cloned()
            .ok_or_else(|| Error::other(format!("no collection {name:?}")))
    }

    pub fn info(&self) -> Value {
        let mut config = self.engine.config();
        config["oplog"] = json!(self.oplog.is_some());
        config["insert_group"] = json!("each insert call in one transaction (TokuMX's insert message)");
        config["layout"] = json!(format!(
            "TokuMX {}'s: each collection clustered in its _id dictionary (KeyV1 keys, whole documents), secondary \
             keys carrying the primary key, one serializable transaction per write with document-level locks{}",
            if self.flavour == Flavour::V1 { "1.0.4" } else { "2.0.1" },
            if self.flavour == Flavour::V2 { ", put_multiple and update messages" } else { "" }));
        if self.oplog.is_some() {
            config["oplog_kept"] = json!("TokuMX's oplog is a collection keyed by GTID, never capped; trimmed only \
                                          after expireOplogDays (days), so a run keeps all of it: oplog_size_mb does \
                                          not apply");
        }
        config
    }

    pub fn stats(&self) -> Vec<(String, i64)> {
        let mut out = self.engine.stats();
        out.push(("write_conflicts_retried".into(), self.conflicts.load(Ordering::Relaxed) as i64));
        out.push(("fast_update_errors".into(), update_message::errors() as i64));
        out
    }

    pub fn checkpoint(&self) -> Result<()> {
        self.engine.checkpoint()
    }

    pub fn close(&self) -> Result<()> {
        self.engine.close()
    }
}

/// A dictionary's descriptor: 1.x the Ordering's 4 bytes alone (storage/env.cpp
/// set_db_descriptor); 2.x the Descriptor of descriptor.cpp: the Ordering, version 2, type
/// Basic, sparse, clustering, a zero hash seed, the field count and the names' length, each
/// name's offset, then the names.
fn descriptor(flavour: Flavour, fields: &[(String, i8)], clustering: bool) -> Vec<u8> {
    let ordering = fields.iter().enumerate().filter(|(_, (_, d))| *d < 0).fold(0u32, |bits, (i, _)| bits | 1 << i);
    let mut out = ordering.to_le_bytes().to_vec();
    if flavour == Flavour::V1 {
        return out;
    }
    let names_len: usize = fields.iter().map(|(f, _)| f.len() + 1).sum();
    out.extend_from_slice(&[2, 0, 0, clustering as u8]);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(fields.len() as u32).to_le_bytes());
    out.extend_from_slice(&(names_len as u32).to_le_bytes());
    let mut offset = 0u32;
    for (f, _) in fields {
        out.extend_from_slice(&offset.to_le_bytes());
        offset += f.len() as u32 + 1;
    }
    for (f, _) in fields {
        out.extend_from_slice(f.as_bytes());
        out.push(0);
    }
    out
}

/// One thread's access: its explicit transaction, if any, and the oplog operations of the
/// current one.
pub struct Ctx {
    store: Arc<TokuMX>,
    explicit: Option<Txn>,
    /// The current write's oplog operations, logged as one entry at its commit.
    pending_ops: Vec<bson::RawDocumentBuf>,
}

impl Ctx {
    /// Runs `f` in one write transaction (DB_SERIALIZABLE), committed DB_TXN_NOSYNC; a lock
    /// that was not granted (another transaction held the document past lockTimeout, or a
    /// deadlock) rolls it back and retries with mongod's backoff. Inside an explicit
    /// transaction, `f` joins it.
    fn write_call<T>(&mut self, mut f: impl FnMut(&mut Ctx, &Txn) -> Result<T>) -> Result<T> {
        if let Some(txn) = self.explicit.take() {
            let result = f(self, &txn);
            self.explicit = Some(txn);
            return result;
        }
        let store = self.store.clone();
        crate::layouts::retry_conflicts(&store.conflicts, || {
            self.pending_ops.clear();
            let txn = store.engine.begin(store.flags().serializable, None)?;
            let value = f(self, &txn)?;
            self.log_pending(&txn)?;
            txn.commit(store.engine.commit_flags())?;
            Ok(value)
        })
    }

    /// A query: a read-only snapshot transaction (DB_TXN_SNAPSHOT | DB_TXN_READ_ONLY; ops/query.cpp
    /// runQuery), or the caller's transaction.
    fn read_call<T>(&mut self, f: impl FnOnce(&mut Ctx, &Txn) -> Result<T>) -> Result<T> {
        if let Some(txn) = self.explicit.take() {
            let result = f(self, &txn);
            self.explicit = Some(txn);
            return result;
        }
        let flags = self.store.flags();
        let txn = self.store.engine.begin(flags.snapshot | flags.read_only, None)?;
        f(self, &txn)
    }

    fn collection(&self, name: &str) -> Result<Arc<Collection>> {
        self.store.collection(name)
    }

    /// The multi-statement transaction of the serve protocol and of Store::transaction_dyn:
    /// TokuMX's beginTransaction with serializable isolation.
    fn begin_explicit(&mut self) -> Result<()> {
        if self.explicit.is_some() {
            return Err(Error::other("a transaction is already open on this session"));
        }
        self.pending_ops.clear();
        self.explicit = Some(self.store.engine.begin(self.store.flags().serializable, None)?);
        Ok(())
    }

    fn commit_explicit(&mut self) -> Result<()> {
        let txn = self.explicit.take().ok_or_else(|| Error::other("no transaction is open on this session"))?;
        self.log_pending(&txn)?;
        txn.commit(self.store.engine.commit_flags())
    }
}
