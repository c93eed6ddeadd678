//! The embedded target: a server's layout over an engine linked into this process.
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::Target;
use crate::calls::Store;
use crate::engines::fractal::Server;
use crate::error::Result;
use crate::layouts::mongod_kv::RecordStore;
use crate::layouts::tokumx_ft::{self, TokuMX};

/// An embedded system: mongod's record store over any engine, or TokuMX's layout over the
/// fractal tree (a `tokumx-*` release of it).
#[derive(Clone)]
pub enum Embedded {
    Mongod(Arc<RecordStore>),
    TokuMX(Arc<TokuMX>),
}

impl Embedded {
    pub fn open(engine: &str, dir: &Path, options: &Map<String, Value>) -> Result<Embedded> {
        let release = options.get("version").and_then(|v| v.as_str()).unwrap_or_default();
        if engine == "fractal" && Server::of_release(release)?.is_tokumx() {
            let (store, engine_options) = crate::run::store_options(engine, options)?;
            std::fs::create_dir_all(dir)?;
            // insert_group is mongod's: TokuMX committed each insert call as one transaction, whatever
            // its size (the layout's info says so).
            let opened = TokuMX::open(dir, &engine_options, tokumx_ft::Options { oplog: store.oplog })?;
            return Ok(Embedded::TokuMX(opened));
        }
        Ok(Embedded::Mongod(crate::run::open_store(engine, dir, options)?))
    }

    pub fn target(&self) -> Arc<dyn Target> {
        match self {
            Embedded::Mongod(store) => store.clone(),
            Embedded::TokuMX(store) => store.clone(),
        }
    }

    /// The engine, its release and every setting, as a run's manifest records them.
    pub fn info(&self) -> Value {
        match self {
            Embedded::Mongod(store) => json!({"engine": store.engine.name(), "version": store.engine.version(),
                                              "config": store.info()}),
            Embedded::TokuMX(store) => json!({"engine": "fractal", "version": crate::engines::Engine::version(store.engine.as_ref()),
                                              "config": store.info()}),
        }
    }
}

impl Target for RecordStore {
    fn session(self: Arc<Self>) -> Result<Box<dyn Store>> {
        Ok(Box::new(RecordStore::session(&self)?))
    }

    fn checkpoint(&self) -> Result<()> {
        RecordStore::checkpoint(self)
    }

    fn checkpoint_marks(&self) -> Option<crate::engines::CheckpointMarks> {
        RecordStore::checkpoint_marks(self)
    }

    fn stats(&self) -> Value {
        Value::Object(RecordStore::stats(self).into_iter().map(|(k, v)| (k, json!(v))).collect())
    }

    fn close(&self) -> Result<()> {
        RecordStore::close(self)
    }
}

impl Target for TokuMX {
    fn session(self: Arc<Self>) -> Result<Box<dyn Store>> {
        Ok(Box::new(TokuMX::session(&self)?))
    }

    fn checkpoint(&self) -> Result<()> {
        TokuMX::checkpoint(self)
    }

    fn stats(&self) -> Value {
        Value::Object(TokuMX::stats(self).into_iter().map(|(k, v)| (k, json!(v))).collect())
    }

    fn close(&self) -> Result<()> {
        TokuMX::close(self)
    }
}
