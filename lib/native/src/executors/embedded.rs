//! The embedded target: the record store over an engine linked into this process.
use std::sync::Arc;

use serde_json::{json, Value};

use super::Target;
use crate::calls::Store;
use crate::error::Result;
use crate::layouts::mongod_kv::RecordStore;

impl Target for RecordStore {
    fn session(self: Arc<Self>) -> Result<Box<dyn Store>> {
        Ok(Box::new(RecordStore::session(&self)?))
    }

    fn checkpoint(&self) -> Result<()> {
        RecordStore::checkpoint(self)
    }

    fn stats(&self) -> Value {
        Value::Object(RecordStore::stats(self).into_iter().map(|(k, v)| (k, json!(v))).collect())
    }

    fn close(&self) -> Result<()> {
        RecordStore::close(self)
    }
}
