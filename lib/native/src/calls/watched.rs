//! A Store that shows every call to a hook before passing it on. The call recorder
//! (recording.rs: one JSON line per call, to compare executors) is one hook; the tests' watchers
//! (which count calls, keep them, or make them slow) are others.
use std::sync::Arc;

use bson::{Bson, Document, RawDocumentBuf};

use super::{Filter, IndexSpec, PageEntry, Range, Store, Update, UpdateResult};
use crate::error::Result;

/// One Store call as a hook sees it, before it runs.
pub struct Call<'c> {
    /// The worker whose Store made it.
    pub worker: usize,
    pub method: &'static str,
    pub collection: &'c str,
    /// Documents an insert_many writes.
    pub docs: &'c [Document],
    /// The key of a get, update or delete; the prefix of a get_many or count_in.
    pub key: &'c [Bson],
    /// The range of a scan or count.
    pub range: Option<&'c Range>,
    /// Every argument as text, made only for a hook that asks (the recorder).
    pub args: &'c dyn Fn() -> String,
}

pub type Hook = Arc<dyn Fn(&Call) + Send + Sync>;

/// Passes every call on to `inner` after showing it to `hook`; a transaction's calls are shown
/// too, as calls of the same worker.
pub struct Watched<'a> {
    pub inner: Box<dyn Store + 'a>,
    pub worker: usize,
    pub hook: Hook,
}

impl<'a> Watched<'a> {
    pub fn new(inner: Box<dyn Store + 'a>, worker: usize, hook: Hook) -> Self {
        Watched { inner, worker, hook }
    }

    fn see(&self, method: &'static str, collection: &str, docs: &[Document], key: &[Bson], range: Option<&Range>,
           args: &dyn Fn() -> String) {
        (self.hook)(&Call { worker: self.worker, method, collection, docs, key, range, args });
    }
}

fn docs_text(d: &[Document]) -> String {
    format!("{:?}", d.iter().map(|x| Bson::Document(x.clone())).collect::<Vec<_>>())
}

impl Store for Watched<'_> {
    fn create_collection(&mut self, name: &str, capped_bytes: Option<i64>) -> Result<()> {
        self.see("create_collection", name, &[], &[], None, &|| format!("{name} {capped_bytes:?}"));
        self.inner.create_collection(name, capped_bytes)
    }
    fn create_index(&mut self, collection: &str, spec: IndexSpec) -> Result<()> {
        self.see("create_index", collection, &[], &[], None, &|| format!("{collection} {spec:?}"));
        self.inner.create_index(collection, spec)
    }
    fn insert_many(&mut self, collection: &str, docs: &[Document]) -> Result<usize> {
        self.see("insert_many", collection, docs, &[], None, &|| format!("{collection} {}", docs_text(docs)));
        self.inner.insert_many(collection, docs)
    }
    fn update(&mut self, collection: &str, index: Option<&str>, key: &[Bson], update: &Update) -> Result<UpdateResult> {
        self.see("update", collection, &[], key, None, &|| format!("{collection} {index:?} {key:?} {update:?}"));
        self.inner.update(collection, index, key, update)
    }
    fn delete(&mut self, collection: &str, index: Option<&str>, key: &[Bson], filter: &Filter) -> Result<bool> {
        self.see("delete", collection, &[], key, None, &|| format!("{collection} {index:?} {key:?} {filter:?}"));
        self.inner.delete(collection, index, key, filter)
    }
    fn get(&mut self, collection: &str, index: Option<&str>, key: &[Bson]) -> Result<Option<RawDocumentBuf>> {
        self.see("get", collection, &[], key, None, &|| format!("{collection} {index:?} {key:?}"));
        self.inner.get(collection, index, key)
    }
    fn get_many(&mut self, collection: &str, index: &str, prefix: &[Bson], last: &[Bson]) -> Result<Vec<RawDocumentBuf>> {
        self.see("get_many", collection, &[], prefix, None, &|| format!("{collection} {index} {prefix:?} {last:?}"));
        self.inner.get_many(collection, index, prefix, last)
    }
    fn scan(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<Vec<RawDocumentBuf>> {
        self.see("scan", collection, &[], &[], Some(range), &|| format!("{collection} {index:?} {range:?}"));
        self.inner.scan(collection, index, range)
    }
    fn count_in(&mut self, collection: &str, index: &str, prefix: &[Bson], last: &[Bson]) -> Result<usize> {
        self.see("count_in", collection, &[], prefix, None, &|| format!("{collection} {index} {prefix:?} {last:?}"));
        self.inner.count_in(collection, index, prefix, last)
    }
    fn count(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<usize> {
        self.see("count", collection, &[], &[], Some(range), &|| format!("{collection} {index:?} {range:?}"));
        self.inner.count(collection, index, range)
    }
    fn index_page(&mut self, collection: &str, index: Option<&str>, after: Option<&[u8]>, n: usize, fetch: bool)
                  -> Result<Vec<PageEntry>> {
        // The mark is the target's own (an engine key, or a server's key values): not shown.
        self.see("index_page", collection, &[], &[], None, &|| format!("{collection} {index:?} {n} {fetch}"));
        self.inner.index_page(collection, index, after, n, fetch)
    }
    fn natural(&mut self, collection: &str, limit: Option<usize>) -> Result<Vec<RawDocumentBuf>> {
        self.see("natural", collection, &[], &[], None, &|| format!("{collection} {limit:?}"));
        self.inner.natural(collection, limit)
    }
    fn transaction_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Store) -> Result<()>) -> Result<()> {
        self.see("transaction", "", &[], &[], None, &String::new);
        let (worker, hook) = (self.worker, self.hook.clone());
        self.inner.transaction_dyn(&mut |s| {
            let mut inner = Watched { inner: Box::new(s), worker, hook: hook.clone() };
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
        self.see("command", "", &[], &[], None, &|| format!("{command:?}"));
        self.inner.command(command)
    }
}
