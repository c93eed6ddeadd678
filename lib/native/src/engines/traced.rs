//! An engine that records every call its sessions make, by table, before passing it on: the
//! engine-call tests (lib/native/tests/engine_calls.rs) read what each workload operation asks
//! of the engine and set it against the plan mongod chose for the same operation.
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{Engine, Session, Table, TableKind, Visit};
use crate::error::Result;

/// One engine call: what it was, and on which table (its name as the record store created it).
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// get (a point lookup), seek (a scan that read at most one entry), scan, put, insert (a
    /// key that must not exist yet), delete, put-unregistered and delete-unregistered (a key no
    /// other transaction can be writing: Session::put_unregistered), truncate,
    /// suggest-compaction, commit (a write transaction's end)
    pub kind: &'static str,
    pub table: String,
    /// Entries a scan read.
    pub entries: usize,
}

pub struct Traced {
    inner: Arc<dyn Engine>,
    names: Arc<Mutex<Vec<(Table, String)>>>,
    pub log: Arc<Mutex<Vec<Call>>>,
}

impl Traced {
    pub fn new(inner: Arc<dyn Engine>) -> Traced {
        Traced { inner, names: Arc::new(Mutex::new(Vec::new())), log: Arc::new(Mutex::new(Vec::new())) }
    }

    /// The calls recorded so far, and a fresh start.
    pub fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl Engine for Traced {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn trims_oplog_by_key_tracker(&self) -> bool {
        self.inner.trims_oplog_by_key_tracker()
    }
    fn mmap_stand_in(&self) -> bool {
        self.inner.mmap_stand_in()
    }
    fn record_store_layout(&self) -> super::RecordStoreLayout {
        self.inner.record_store_layout()
    }
    fn version(&self) -> String {
        self.inner.version()
    }
    fn config(&self) -> Value {
        self.inner.config()
    }
    fn table(&self, name: &str, kind: TableKind) -> Result<Table> {
        let table = self.inner.table(name, kind)?;
        self.names.lock().unwrap().push((table, name.to_string()));
        Ok(table)
    }
    fn session(&self) -> Result<Box<dyn Session>> {
        Ok(Box::new(TracedSession { inner: self.inner.session()?, names: self.names.clone(),
                                    log: self.log.clone() }))
    }
    fn stats(&self) -> Vec<(String, i64)> {
        self.inner.stats()
    }
    fn checkpoint(&self) -> Result<()> {
        self.inner.checkpoint()
    }
    fn checkpoint_marks(&self) -> Option<super::CheckpointMarks> {
        self.inner.checkpoint_marks()
    }
    fn close(&self) -> Result<()> {
        self.inner.close()
    }
}

struct TracedSession {
    inner: Box<dyn Session>,
    names: Arc<Mutex<Vec<(Table, String)>>>,
    log: Arc<Mutex<Vec<Call>>>,
}

impl TracedSession {
    fn record(&self, kind: &'static str, table: Table, entries: usize) {
        let name = self.names.lock().unwrap().iter().rev().find(|(t, _)| *t == table).map(|(_, n)| n.clone()).unwrap_or_default();
        self.log.lock().unwrap().push(Call { kind, table: name, entries });
    }
}

impl Session for TracedSession {
    fn begin(&mut self, write: bool) -> Result<()> {
        self.inner.begin(write)
    }
    fn commit(&mut self) -> Result<()> {
        self.log.lock().unwrap().push(Call { kind: "commit", table: String::new(), entries: 0 });
        self.inner.commit()
    }
    fn rollback(&mut self) {
        self.inner.rollback()
    }
    fn get(&mut self, table: Table, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.record("get", table, 0);
        self.inner.get(table, key, out)
    }
    fn get_for_update(&mut self, table: Table, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.record("get", table, 0);
        self.inner.get_for_update(table, key, out)
    }
    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.record("put", table, 0);
        self.inner.put(table, key, value)
    }
    fn insert_new(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<bool> {
        self.record("insert", table, 0);
        self.inner.insert_new(table, key, value)
    }
    fn delete(&mut self, table: Table, key: &[u8]) -> Result<()> {
        self.record("delete", table, 0);
        self.inner.delete(table, key)
    }
    fn put_unregistered(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.record("put-unregistered", table, 0);
        self.inner.put_unregistered(table, key, value)
    }
    fn delete_unregistered(&mut self, table: Table, key: &[u8]) -> Result<()> {
        self.record("delete-unregistered", table, 0);
        self.inner.delete_unregistered(table, key)
    }
    fn yield_snapshot(&mut self) -> Result<()> {
        self.log.lock().unwrap().push(Call { kind: "yield", table: String::new(), entries: 0 });
        self.inner.yield_snapshot()
    }
    fn suggest_compaction(&mut self, table: Table, high: &[u8]) -> Result<()> {
        self.record("suggest-compaction", table, 0);
        self.inner.suggest_compaction(table, high)
    }
    fn truncate(&mut self, table: Table, low: &[u8], high: &[u8]) -> Result<()> {
        self.record("truncate", table, 0);
        self.inner.truncate(table, low, high)
    }
    fn scan(&mut self, table: Table, low: &[u8], high: Option<&[u8]>, reverse: bool, visit: Visit) -> Result<()> {
        let mut entries = 0usize;
        let result = self.inner.scan(table, low, high, reverse, &mut |k, v| {
            entries += 1;
            visit(k, v)
        });
        self.record(if entries <= 1 { "seek" } else { "scan" }, table, entries);
        result
    }
}
