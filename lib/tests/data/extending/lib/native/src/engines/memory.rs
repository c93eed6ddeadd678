//! A throwaway engine for lib/tests/test_extending.py: ordered maps in memory behind one lock,
//! with no durability and no rollback (a write applies at once). It shows only that an engine
//! registers itself by its ENTRY; it is never part of the collection.
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use super::{past_range, Engine, Options, Session, Table, TableKind, Visit};
use crate::error::Result;

pub const ENTRY: super::EngineEntry = super::EngineEntry {
    name: "memory",
    open,
    releases: || vec!["1".to_string()],
    mmap_stand_in: false,
};

type Tables = Arc<Mutex<Vec<(String, BTreeMap<Vec<u8>, Vec<u8>>)>>>;

struct Memory {
    tables: Tables,
}

fn open(_dir: &std::path::Path, options: &Map<String, Value>) -> Result<Arc<dyn Engine>> {
    Options::new("memory", options).finish()?;
    Ok(Arc::new(Memory { tables: Arc::default() }))
}

impl Engine for Memory {
    fn name(&self) -> &str {
        "memory"
    }
    fn version(&self) -> String {
        "1".to_string()
    }
    fn config(&self) -> Value {
        json!({"durability": "none"})
    }
    fn table(&self, name: &str, _kind: TableKind) -> Result<Table> {
        let mut tables = self.tables.lock().unwrap();
        if let Some(i) = tables.iter().position(|(n, _)| n == name) {
            return Ok(Table(i));
        }
        tables.push((name.to_string(), BTreeMap::new()));
        Ok(Table(tables.len() - 1))
    }
    fn session(&self) -> Result<Box<dyn Session>> {
        Ok(Box::new(MemorySession { tables: self.tables.clone() }))
    }
    fn stats(&self) -> Vec<(String, i64)> {
        Vec::new()
    }
    fn checkpoint(&self) -> Result<()> {
        Ok(())
    }
    fn close(&self) -> Result<()> {
        Ok(())
    }
}

struct MemorySession {
    tables: Tables,
}

impl Session for MemorySession {
    fn begin(&mut self, _write: bool) -> Result<()> {
        Ok(())
    }
    fn commit(&mut self) -> Result<()> {
        Ok(())
    }
    fn rollback(&mut self) {}
    fn get(&mut self, table: Table, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let tables = self.tables.lock().unwrap();
        Ok(tables[table.0].1.get(key).map(|v| out.extend_from_slice(v)).is_some())
    }
    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.tables.lock().unwrap()[table.0].1.insert(key.to_vec(), value.to_vec());
        Ok(())
    }
    fn insert_new(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<bool> {
        let mut tables = self.tables.lock().unwrap();
        let map = &mut tables[table.0].1;
        if map.contains_key(key) {
            return Ok(false);
        }
        map.insert(key.to_vec(), value.to_vec());
        Ok(true)
    }
    fn delete(&mut self, table: Table, key: &[u8]) -> Result<()> {
        self.tables.lock().unwrap()[table.0].1.remove(key);
        Ok(())
    }
    fn scan(&mut self, table: Table, low: &[u8], high: Option<&[u8]>, reverse: bool, visit: Visit) -> Result<()> {
        // A copy of the range, so the visitor may call back into this session.
        let rows: Vec<(Vec<u8>, Vec<u8>)> = {
            let tables = self.tables.lock().unwrap();
            let upper = high.map_or(Bound::Unbounded, |h| Bound::Excluded(h.to_vec()));
            tables[table.0].1.range((Bound::Included(low.to_vec()), upper)).map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        let ordered: Box<dyn Iterator<Item = &(Vec<u8>, Vec<u8>)>> =
            if reverse { Box::new(rows.iter().rev()) } else { Box::new(rows.iter()) };
        for (key, value) in ordered {
            if past_range(key, low, high, reverse) || !visit(key, value) {
                break;
            }
        }
        Ok(())
    }
}
