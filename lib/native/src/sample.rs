//! `describe`: what a workload's load will leave, before anything runs, so the driver can size a
//! system's data and refuse one that cannot fit (lib/enginebench/resources/space.py).
//!
//! The documents per collection are the workload's own count; their mean BSON size is measured on
//! the first SAMPLE_DOCS documents each of the workload's sampling loaders generates (in all, or in
//! each collection), taken by a Store that keeps only their sizes.
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use bson::{doc, Bson, Document, RawDocumentBuf};
use serde_json::{json, Value};

use crate::calls::{Filter, IndexSpec, PageEntry, Range, Store, Update, UpdateResult};
use crate::error::{Error, Result};
use crate::phase::Env;
use crate::recorder::{Clock, Recorder};
use crate::workloads;

pub const SAMPLE_DOCS: u64 = 1000;
/// The error a sampling store ends a loader with once it has its sample.
const ENOUGH: &str = "sampled";

/// Keeps the BSON sizes of the documents a loader inserts (an upsert counts as the document it
/// inserts), and ends the loader when it has enough.
struct SizingStore {
    per_collection: bool,
    bytes: BTreeMap<String, u64>,
    docs: BTreeMap<String, u64>,
}

impl SizingStore {
    fn take(&mut self, collection: &str, doc: &Document) -> Result<bool> {
        let taken = *self.docs.get(collection).unwrap_or(&0);
        if self.per_collection && taken >= SAMPLE_DOCS {
            return Ok(false);
        }
        if !self.per_collection && self.docs.values().sum::<u64>() >= SAMPLE_DOCS {
            return Err(Error::other(ENOUGH));
        }
        *self.bytes.entry(collection.to_string()).or_default() += doc.to_vec()?.len() as u64;
        *self.docs.entry(collection.to_string()).or_default() += 1;
        Ok(true)
    }
}

impl Store for SizingStore {
    fn create_collection(&mut self, _name: &str, _capped_bytes: Option<i64>) -> Result<()> {
        Ok(())
    }
    fn create_index(&mut self, _collection: &str, _spec: IndexSpec) -> Result<()> {
        Ok(())
    }
    fn insert_many(&mut self, collection: &str, docs: &[Document]) -> Result<usize> {
        for d in docs {
            if !self.take(collection, d)? {
                break;
            }
        }
        Ok(docs.len())
    }
    fn update(&mut self, collection: &str, _index: Option<&str>, _key: &[Bson], update: &Update) -> Result<UpdateResult> {
        if update.upsert {
            let mut inserted = doc! {"_id": bson::oid::ObjectId::new()};
            match &update.replace {
                Some(replacement) => inserted.extend(replacement.to_document()),
                None => {
                    for part in [&update.set_on_insert, &update.set].into_iter().flatten() {
                        inserted.extend(part.to_document());
                    }
                }
            }
            self.take(collection, &inserted)?;
        }
        Ok(UpdateResult { upserted: update.upsert, acknowledged: true, ..Default::default() })
    }
    fn delete(&mut self, _c: &str, _i: Option<&str>, _k: &[Bson], _f: &Filter) -> Result<bool> {
        Ok(false)
    }
    fn get(&mut self, _c: &str, _i: Option<&str>, _k: &[Bson]) -> Result<Option<RawDocumentBuf>> {
        Ok(None)
    }
    fn get_many(&mut self, _c: &str, _i: &str, _p: &[Bson], _l: &[Bson]) -> Result<Vec<RawDocumentBuf>> {
        Ok(Vec::new())
    }
    fn scan(&mut self, _c: &str, _i: Option<&str>, _r: &Range) -> Result<Vec<RawDocumentBuf>> {
        Ok(Vec::new())
    }
    fn count_in(&mut self, _c: &str, _i: &str, _p: &[Bson], _l: &[Bson]) -> Result<usize> {
        Ok(0)
    }
    fn count(&mut self, _c: &str, _i: Option<&str>, _r: &Range) -> Result<usize> {
        Ok(0)
    }
    fn index_page(&mut self, _c: &str, _i: Option<&str>, _a: Option<&[u8]>, _n: usize, _f: bool) -> Result<Vec<PageEntry>> {
        Ok(Vec::new())
    }
    fn natural(&mut self, _c: &str, _l: Option<usize>) -> Result<Vec<RawDocumentBuf>> {
        Ok(Vec::new())
    }
    fn transaction_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Store) -> Result<()>) -> Result<()> {
        f(self)
    }
    fn atomic(&self) -> bool {
        false
    }
}

/// Mean BSON bytes per document, per collection the loaders reached.
fn document_sizes(workload: &mut dyn workloads::Workload) -> Result<BTreeMap<String, f64>> {
    let per_collection = workload.samples_per_collection();
    let (mut bytes, mut docs) = (BTreeMap::<String, u64>::new(), BTreeMap::<String, u64>::new());
    let clock = Clock { start: std::time::Instant::now(), start_wall: 0.0, length_s: 3600.0, ticks: 1 };
    for loader in workload.size_sample()? {
        let mut store = SizingStore { per_collection, bytes: BTreeMap::new(), docs: BTreeMap::new() };
        let (rec, stop) = (Recorder::new(clock, None), AtomicBool::new(false));
        let mut env = Env::new(&mut store, &rec, &stop, 0);
        match loader(&mut env) {
            Err(e) if e.message != ENOUGH && !e.message.ends_with(ENOUGH) => return Err(e),
            _ => {}
        }
        for (collection, n) in store.docs {
            *docs.entry(collection.clone()).or_default() += n;
            *bytes.entry(collection.clone()).or_default() += store.bytes[&collection];
        }
    }
    Ok(docs.iter().filter(|(_, n)| **n > 0).map(|(c, n)| (c.clone(), bytes[c] as f64 / *n as f64)).collect())
}

/// {"expected": documents per collection after the load, "bytes_per_document": mean BSON bytes
/// per sampled collection}.
pub fn describe(name: &str, params: &Value, load_threads: usize) -> Result<Value> {
    workloads::fix_clock(1_700_000_000_000);
    let mut workload = workloads::build(name, params)?;
    let expected = workload.expected_after_load(load_threads);
    let sizes = document_sizes(workload.as_mut())?;
    Ok(json!({"expected": expected, "bytes_per_document": sizes, "sample_docs": SAMPLE_DOCS}))
}

pub fn main(workload: &str, load_threads: usize) -> i32 {
    let result = serde_json::from_str::<Value>(workload)
        .map_err(|e| Error::other(format!("--workload: not JSON: {e}")))
        .and_then(|mut params| {
            let name = params["name"].as_str().unwrap_or_default().to_string();
            params.as_object_mut().map(|o| o.remove("name"));
            describe(&name, &params, load_threads)
        });
    match result {
        Ok(v) => {
            println!("{v}");
            0
        }
        Err(e) => {
            eprintln!("describe: {}", e.message);
            2
        }
    }
}
