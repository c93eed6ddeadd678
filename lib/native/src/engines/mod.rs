//! The key-value contract each embedded engine implements, and opening an engine by name.
//!
//! The record store (store/) lays MongoDB's collections and indexes out over these tables; an
//! engine adapter only maps tables, transactions and ordered scans onto its engine, the way
//! ClickBench's per-system scripts only wrap their system.
//!
//! Tables come in two kinds, as in mongod: record tables keyed by a 64-bit record id (passed
//! here as its 8-byte order-preserving encoding, keys::record_key), and index tables
//! keyed by byte strings.
//!
//! An engine is one module here that declares its `ENTRY` (an EngineEntry); build.rs registers
//! every such module (src/engines/), so adding an engine adds no line to a list. The other
//! modules are the engines' helpers: the layouts mongod and MongoRocks gave them, RocksDB's
//! write-conflict tracker and the call recorder the tests use.
pub mod mongod_layout;
mod rocks_conflicts;
mod rocks_throttle;
pub mod traced;

use std::sync::Arc;

use serde_json::Value;

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableKind {
    /// Keyed by record id; a put overwrites.
    Records,
    /// Index entries: a put of an existing key is the same entry (mongod's standard index insert).
    Index,
    /// Byte keys whose values are rewritten in place (the catalog).
    Metadata,
}

/// What one server's record store did differently over its engine (mongod 3.x over WiredTiger
/// and MongoRocks: neither).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordStoreLayout {
    /// Every index entry's key ends with its record id, a unique index's too, whose uniqueness is
    /// then checked by a read of the range first (TokuMXse's KVSortedDataImpl); otherwise a
    /// unique index's key is its fields alone and its value the record id (mongod's).
    pub record_id_in_every_key: bool,
    /// The record store reads a record before it rewrites or deletes it, to keep its size counter
    /// (TokuMXse's KVRecordStore::updateRecord and deleteRecord: the 3.0 API passed no old record;
    /// mongod 3.2's WiredTigerRecordStore and MongoRocks' RocksRecordStore did too, which their
    /// engines' `read_before_write` option keeps or drops).
    pub reads_record_before_write: bool,
}

/// A table handle: an index into the engine's own table list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Table(pub usize);

/// A scan visitor: called with (key, value) in order; returns false to stop the scan.
pub type Visit<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> bool;

pub trait Engine: Send + Sync {
    /// The engine's name as reports show it ("wiredtiger", "wiredtiger-lsm", "rocksdb", "lmdb").
    fn name(&self) -> &str;
    /// How its server trimmed the oplog: from a tracker of entry keys and sizes (MongoRocks),
    /// rather than by stones of whole record-id ranges (mongod's WiredTiger).
    fn trims_oplog_by_key_tracker(&self) -> bool {
        false
    }
    /// It stands in for MMAPv1 (its EngineEntry's `mmap_stand_in`): the store reports the lock
    /// it emulates.
    fn mmap_stand_in(&self) -> bool {
        false
    }
    /// How its server's record store laid mongod's data over it, where the servers differed.
    fn record_store_layout(&self) -> RecordStoreLayout {
        RecordStoreLayout::default()
    }
    fn version(&self) -> String;
    /// The settings it runs with, for the manifest (every config string, as passed).
    fn config(&self) -> Value;
    /// Create the table if needed and return its handle.
    fn table(&self, name: &str, kind: TableKind) -> Result<Table>;
    /// A session for one thread: its transactions and cursors.
    fn session(&self) -> Result<Box<dyn Session>>;
    /// Cumulative engine counters, sampled per interval.
    fn stats(&self) -> Vec<(String, i64)>;
    /// Make everything durable (the quiesce between phases).
    fn checkpoint(&self) -> Result<()>;
    /// Its own checkpoints so far, for marking them in the measured time: how many began and
    /// the milliseconds the finished ones took, each cumulative; None for an engine that
    /// reports neither.
    fn checkpoint_marks(&self) -> Option<CheckpointMarks> {
        None
    }
    /// Close the engine. After a fatal error it must not wait on the engine's threads.
    fn close(&self) -> Result<()>;
}

/// An engine's checkpoint counters at one moment (Engine::checkpoint_marks): a rise of `started`
/// is a checkpoint beginning, a rise of `finished_ms` one ending (a checkpoint quicker than a
/// millisecond ends unseen).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CheckpointMarks {
    pub started: i64,
    pub finished_ms: i64,
}

/// One thread's access to the engine. Every read and write happens inside a transaction
/// begun with `begin`; a write conflict surfaces as Kind::WriteConflict from the call that
/// detects it (any write, or the commit).
pub trait Session {
    fn begin(&mut self, write: bool) -> Result<()>;
    fn commit(&mut self) -> Result<()>;
    fn rollback(&mut self);
    /// The value of `key`, appended to `out`; false when the key is absent.
    fn get(&mut self, table: Table, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;
    /// As `get`, for a key the transaction is about to write (engines with row locks lock it).
    fn get_for_update(&mut self, table: Table, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.get(table, key, out)
    }
    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()>;
    /// Insert a key that must not exist yet (a unique index entry): false when it does, and
    /// nothing is written. Each engine does it as its mongod did (WiredTiger: an insert on an
    /// overwrite=false cursor; MongoRocks: a read, then a write).
    fn insert_new(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<bool>;
    fn delete(&mut self, table: Table, key: &[u8]) -> Result<()>;
    /// Writes a key no other transaction can be writing: a record id this transaction has just
    /// allocated, or the oplog key tracker's mirror of an entry. MongoRocks wrote those without
    /// registering them with its conflict tracker (mongo-rocks r3.2.0 rocks_record_store.cpp,
    /// insertRecord: "No need to register the write here, since we just allocated a new
    /// RecordId"; RocksOplogKeyTracker); every other engine writes them as `put` does.
    fn put_unregistered(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.put(table, key, value)
    }
    /// Deletes the oplog key tracker's mirror of an entry whose own delete registered the
    /// write (RocksOplogKeyTracker::deleteKey); every other engine deletes as `delete` does.
    fn delete_unregistered(&mut self, table: Table, key: &[u8]) -> Result<()> {
        self.delete(table, key)
    }
    /// A query's yield (mongod's PlanYieldPolicy): in a read-only transaction, the snapshot is
    /// let go and a new one taken (RecoveryUnit::abandonSnapshot); the next scan then positions
    /// afresh, as the servers' cursors restored (MongoRocks: a new iterator and Seek; WiredTiger:
    /// search_near). A transaction that wrote keeps its snapshot (mongod yields outside a
    /// WriteUnitOfWork only). Engines without snapshots have nothing to do.
    fn yield_snapshot(&mut self) -> Result<()> {
        Ok(())
    }
    /// Asks the engine to compact the keys of `table` below `high`, where a trimmed oplog leaves
    /// its deletes (MongoRocks' SuggestCompactRange every 30 minutes). Engines that reclaim
    /// deleted space by themselves (b-trees) have nothing to do.
    fn suggest_compaction(&mut self, _table: Table, _high: &[u8]) -> Result<()> {
        Ok(())
    }
    /// Deletes every key in [low, high] (both included), as WT_SESSION::truncate of a cursor range
    /// does without reading the values; engines without a range delete remove key by key.
    fn truncate(&mut self, table: Table, low: &[u8], high: &[u8]) -> Result<()> {
        let mut doomed = Vec::new();
        let end = crate::keys::prefix_successor(high);
        self.scan(table, low, end.as_deref(), false, &mut |k, _| {
            if k <= high {
                doomed.push(k.to_vec());
            }
            true
        })?;
        for key in doomed {
            self.delete(table, &key)?;
        }
        Ok(())
    }
    /// Whether any key lies in [low, high]: a unique index's duplicate check where the record id
    /// is part of every key (TokuMXse's dupKeyCheck, which locks the range first).
    fn any_in_range(&mut self, table: Table, low: &[u8], high: &[u8]) -> Result<bool> {
        let mut found = false;
        let end = crate::keys::prefix_successor(high);
        self.scan(table, low, end.as_deref(), false, &mut |k, _| {
            found = k <= high;
            false
        })?;
        Ok(found)
    }
    /// Writes `new` over `old` (the same size) as the engine's own in-place update, where its
    /// server had one (TokuMXse's update message of changed byte ranges); false when it has
    /// none, and the caller writes the value whole.
    fn update_in_place(&mut self, _table: Table, _key: &[u8], _old: &[u8], _new: &[u8]) -> Result<bool> {
        Ok(false)
    }
    /// Keys in [low, high) (high None: to the end of the table), ascending, or descending from
    /// just below `high` when `reverse`.
    fn scan(&mut self, table: Table, low: &[u8], high: Option<&[u8]>, reverse: bool, visit: Visit) -> Result<()>;
}

/// Whether a scan of [low, high) has left its range at `key`: ascending scans end at `high`,
/// descending ones below `low` (the engines' cursors position at the start; this ends them).
pub fn past_range(key: &[u8], low: &[u8], high: Option<&[u8]>, reverse: bool) -> bool {
    if reverse {
        key < low
    } else {
        high.is_some_and(|h| key >= h)
    }
}

/// What the runner knows of an engine before it opens one: each engine module's `ENTRY`.
pub struct EngineEntry {
    /// Its params name (`engine:`), as lib/enginebench/engines.py names it.
    pub name: &'static str,
    /// Opens it in a folder with the system's engine options.
    pub open: fn(&std::path::Path, &serde_json::Map<String, Value>) -> Result<Arc<dyn Engine>>,
    /// The releases this runner was built with.
    pub releases: fn() -> Vec<String>,
    /// It stands in for MMAPv1: capped collections (the oplog too) are rings preallocated and
    /// overwritten in place, and the `mmap_lock` option emulates MMAPv1's lock.
    pub mmap_stand_in: bool,
}

include!(concat!(env!("OUT_DIR"), "/engines.rs"));

/// The registered engine of that params name.
pub fn entry(engine: &str) -> Result<&'static EngineEntry> {
    ENGINES.iter().copied().find(|e| e.name == engine).ok_or_else(|| {
        let names: Vec<&str> = ENGINES.iter().map(|e| e.name).collect();
        Error::other(format!("unknown embedded engine {engine:?}; allowed: {}", names.join(", ")))
    })
}

/// Open an engine by its params name with the system's engine options (already validated by
/// the params schema; an unknown key here is an error, not a default).
pub fn open(engine: &str, dir: &std::path::Path, options: &serde_json::Map<String, Value>) -> Result<Arc<dyn Engine>> {
    let entry = entry(engine)?;
    std::fs::create_dir_all(dir)?;
    (entry.open)(dir, options)
}

/// Reads engine options by name. The params schema (lib/enginebench/engines.py) declares every
/// option and its default once and sends them all: a key it gives a value must be here (a
/// missing one is an error, never a second default), a key it leaves unset (null) takes the
/// server's own setting (mongod_layout.rs names each one's source), and a key nobody asked for
/// is refused, so a misspelt knob never falls back silently.
pub struct Options<'a> {
    engine: &'static str,
    map: &'a serde_json::Map<String, Value>,
    used: std::cell::RefCell<Vec<&'static str>>,
}

impl<'a> Options<'a> {
    pub fn new(engine: &'static str, map: &'a serde_json::Map<String, Value>) -> Self {
        Options { engine, map, used: Default::default() }
    }
    fn raw(&self, key: &'static str) -> Option<&Value> {
        self.used.borrow_mut().push(key);
        self.map.get(key).filter(|v| !v.is_null())
    }
    fn required(&self, key: &'static str) -> Result<&Value> {
        self.raw(key).ok_or_else(|| Error::other(format!(
            "{}: option {key} is missing; the params schema (lib/enginebench/engines.py) gives every engine option", self.engine)))
    }
    fn as_int(&self, key: &'static str, v: &Value) -> Result<i64> {
        v.as_i64().ok_or_else(|| Error::other(format!("{}: option {key} must be an integer (got {v})", self.engine)))
    }
    fn as_bool(&self, key: &'static str, v: &Value) -> Result<bool> {
        v.as_bool().ok_or_else(|| Error::other(format!("{}: option {key} must be true or false (got {v})", self.engine)))
    }
    pub fn int(&self, key: &'static str) -> Result<i64> {
        let v = self.required(key)?;
        self.as_int(key, v)
    }
    /// An integer the params may leave unset (null): then None, the engine's own default.
    pub fn optional_int(&self, key: &'static str) -> Result<Option<i64>> {
        self.raw(key).map(|v| self.as_int(key, v)).transpose()
    }
    /// An integer the params may leave unset (null): then the server's setting, `server`.
    pub fn int_or_server(&self, key: &'static str, server: i64) -> Result<i64> {
        Ok(self.optional_int(key)?.unwrap_or(server))
    }
    /// A flag the params may leave unset (null): then None, the engine's own default.
    pub fn raw_bool(&self, key: &'static str) -> Result<Option<bool>> {
        self.raw(key).map(|v| self.as_bool(key, v)).transpose()
    }
    pub fn boolean(&self, key: &'static str) -> Result<bool> {
        let v = self.required(key)?;
        self.as_bool(key, v)
    }
    /// A flag the params may leave unset (null): then the server's setting, `server`.
    pub fn boolean_or_server(&self, key: &'static str, server: bool) -> Result<bool> {
        Ok(self.raw(key).map(|v| self.as_bool(key, v)).transpose()?.unwrap_or(server))
    }
    pub fn float(&self, key: &'static str) -> Result<f64> {
        let v = self.required(key)?;
        v.as_f64().ok_or_else(|| Error::other(format!("{}: option {key} must be a number (got {v})", self.engine)))
    }
    pub fn string(&self, key: &'static str, allowed: &[&str]) -> Result<String> {
        let v = self.required(key)?;
        let value = v.as_str().ok_or_else(|| Error::other(format!("{}: option {key} must be a string (got {v})", self.engine)))?;
        if !allowed.is_empty() && !allowed.contains(&value) {
            return Err(Error::other(format!("{}: option {key} is {value:?}; allowed: {}", self.engine, allowed.join(", "))));
        }
        Ok(value.to_string())
    }
    /// Call once every option was read: names any key left over.
    pub fn finish(&self) -> Result<()> {
        let used = self.used.borrow();
        let unknown: Vec<&String> = self.map.keys().filter(|k| !used.contains(&k.as_str())).collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let mut allowed: Vec<&str> = used.clone();
        allowed.sort();
        Err(Error::other(format!("{}: unknown option(s) {:?}; allowed: {}", self.engine, unknown, allowed.join(", "))))
    }
}
