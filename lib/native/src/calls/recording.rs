//! A Store that writes every call it passes on, one JSON line each, so the tests can check that
//! the same seed gives the same operations on every executor (the embedded engines, the Rust
//! driver, the legacy executor): the spec's `record_calls` names the file.
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use bson::{Bson, Document, RawDocumentBuf};
use serde_json::json;

use super::{Filter, IndexSpec, PageEntry, Range, Store, Update, UpdateResult};
use crate::error::Result;

static OUT: OnceLock<Mutex<std::io::BufWriter<std::fs::File>>> = OnceLock::new();

/// Starts recording to `path` (once per process).
pub fn record_to(path: &str) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| crate::error::Error::other(format!("{path}: {e}")))?;
    let _ = OUT.set(Mutex::new(std::io::BufWriter::new(file)));
    Ok(())
}

/// The recording wrapper for a worker's Store, when recording.
pub fn wrap<'a>(inner: Box<dyn Store + 'a>, phase: &str, worker: usize) -> Box<dyn Store + 'a> {
    match OUT.get() {
        Some(_) => Box::new(Recording { inner, phase: phase.to_string(), worker }),
        None => inner,
    }
}

pub fn flush() {
    if let Some(out) = OUT.get() {
        let _ = out.lock().unwrap().flush();
    }
}

struct Recording<'a> {
    inner: Box<dyn Store + 'a>,
    phase: String,
    worker: usize,
}

impl Recording<'_> {
    fn log(&self, call: &str, args: String) {
        if let Some(out) = OUT.get() {
            let line = json!({"phase": self.phase, "worker": self.worker, "call": call, "args": args});
            let _ = writeln!(out.lock().unwrap(), "{line}");
        }
    }
}

fn docs(d: &[Document]) -> String {
    format!("{:?}", d.iter().map(|x| Bson::Document(x.clone())).collect::<Vec<_>>())
}

impl Store for Recording<'_> {
    fn create_collection(&mut self, name: &str, capped_bytes: Option<i64>) -> Result<()> {
        self.log("create_collection", format!("{name} {capped_bytes:?}"));
        self.inner.create_collection(name, capped_bytes)
    }
    fn create_index(&mut self, collection: &str, spec: IndexSpec) -> Result<()> {
        self.log("create_index", format!("{collection} {spec:?}"));
        self.inner.create_index(collection, spec)
    }
    fn insert_many(&mut self, collection: &str, d: &[Document]) -> Result<usize> {
        self.log("insert_many", format!("{collection} {}", docs(d)));
        self.inner.insert_many(collection, d)
    }
    fn update(&mut self, collection: &str, index: Option<&str>, key: &[Bson], update: &Update) -> Result<UpdateResult> {
        self.log("update", format!("{collection} {index:?} {key:?} {update:?}"));
        self.inner.update(collection, index, key, update)
    }
    fn delete(&mut self, collection: &str, index: Option<&str>, key: &[Bson], filter: &Filter) -> Result<bool> {
        self.log("delete", format!("{collection} {index:?} {key:?} {filter:?}"));
        self.inner.delete(collection, index, key, filter)
    }
    fn get(&mut self, collection: &str, index: Option<&str>, key: &[Bson]) -> Result<Option<RawDocumentBuf>> {
        self.log("get", format!("{collection} {index:?} {key:?}"));
        self.inner.get(collection, index, key)
    }
    fn get_many(&mut self, collection: &str, index: &str, prefix: &[Bson], last: &[Bson]) -> Result<Vec<RawDocumentBuf>> {
        self.log("get_many", format!("{collection} {index} {prefix:?} {last:?}"));
        self.inner.get_many(collection, index, prefix, last)
    }
    fn scan(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<Vec<RawDocumentBuf>> {
        self.log("scan", format!("{collection} {index:?} {range:?}"));
        self.inner.scan(collection, index, range)
    }
    fn count_in(&mut self, collection: &str, index: &str, prefix: &[Bson], last: &[Bson]) -> Result<usize> {
        self.log("count_in", format!("{collection} {index} {prefix:?} {last:?}"));
        self.inner.count_in(collection, index, prefix, last)
    }
    fn count(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<usize> {
        self.log("count", format!("{collection} {index:?} {range:?}"));
        self.inner.count(collection, index, range)
    }
    fn index_page(&mut self, collection: &str, index: Option<&str>, after: Option<&[u8]>, n: usize, fetch: bool)
                  -> Result<Vec<PageEntry>> {
        // The mark is the target's own (an engine key, or a server's key values): not compared.
        self.log("index_page", format!("{collection} {index:?} {n} {fetch}"));
        self.inner.index_page(collection, index, after, n, fetch)
    }
    fn natural(&mut self, collection: &str, limit: Option<usize>) -> Result<Vec<RawDocumentBuf>> {
        self.log("natural", format!("{collection} {limit:?}"));
        self.inner.natural(collection, limit)
    }
    fn transaction_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Store) -> Result<()>) -> Result<()> {
        self.log("transaction", String::new());
        let (phase, worker) = (self.phase.clone(), self.worker);
        self.inner.transaction_dyn(&mut |s| {
            // The body's calls are recorded too, as calls of this worker.
            let mut inner = Recording { inner: Box::new(s), phase: phase.clone(), worker };
            f(&mut inner)
        })
    }
    fn atomic(&self) -> bool {
        self.inner.atomic()
    }
    fn runs_commands(&self) -> bool {
        self.inner.runs_commands()
    }
    fn command(&mut self, command: &Document) -> Result<Document> {
        self.log("command", format!("{command:?}"));
        self.inner.command(command)
    }
}
