//! The Store calls on TokuMX's layout (writes.rs and reads.rs say how each reaches the engine).
use bson::{Bson, Document, RawDocumentBuf};

use super::Ctx;
use crate::calls::{Filter, IndexSpec, PageEntry, Range, Store, Update, UpdateResult};
use crate::error::Result;

impl Store for Ctx {
    fn create_collection(&mut self, name: &str, capped_bytes: Option<i64>) -> Result<()> {
        self.create_collection_named(name, capped_bytes)
    }

    fn create_index(&mut self, collection: &str, spec: IndexSpec) -> Result<()> {
        self.create_index_on(collection, spec)
    }

    fn insert_many(&mut self, collection: &str, docs: &[Document]) -> Result<usize> {
        self.insert_documents(collection, docs)
    }

    fn update(&mut self, collection: &str, index: Option<&str>, key: &[Bson], update: &Update) -> Result<UpdateResult> {
        self.update_one(collection, index, key, update)
    }

    fn delete(&mut self, collection: &str, index: Option<&str>, key: &[Bson], filter: &Filter) -> Result<bool> {
        self.delete_one(collection, index, key, filter)
    }

    fn get(&mut self, collection: &str, index: Option<&str>, key: &[Bson]) -> Result<Option<RawDocumentBuf>> {
        self.get_one(collection, index, key)
    }

    fn get_many(&mut self, collection: &str, index: &str, prefix: &[Bson], last_values: &[Bson]) -> Result<Vec<RawDocumentBuf>> {
        self.get_each(collection, index, prefix, last_values)
    }

    fn count_in(&mut self, collection: &str, index: &str, prefix: &[Bson], last_values: &[Bson]) -> Result<usize> {
        Ok(self.get_each(collection, index, prefix, last_values)?.len())
    }

    fn scan(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<Vec<RawDocumentBuf>> {
        self.scan_range(collection, index, range)
    }

    fn count(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<usize> {
        self.count_range(collection, index, range)
    }

    fn index_page(&mut self, collection: &str, index: Option<&str>, after: Option<&[u8]>, n: usize, fetch: bool)
                  -> Result<Vec<PageEntry>> {
        self.page(collection, index, after, n, fetch)
    }

    fn natural(&mut self, collection: &str, limit: Option<usize>) -> Result<Vec<RawDocumentBuf>> {
        self.natural_order(collection, limit)
    }

    /// A multi-statement transaction (TokuMX's beginTransaction, serializable), retried whole
    /// when a lock is not granted.
    fn transaction_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Store) -> Result<()>) -> Result<()> {
        if self.explicit.is_some() {
            return f(self);
        }
        let store = self.store.clone();
        crate::layouts::retry_conflicts(&store.conflicts, || {
            self.begin_explicit()?;
            let result = f(self).and_then(|()| self.commit_explicit());
            self.explicit = None; // aborted as it drops, where the commit did not happen
            result
        })
    }

    fn atomic(&self) -> bool {
        true
    }
}
