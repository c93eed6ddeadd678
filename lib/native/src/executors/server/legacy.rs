//! The legacy executor: a worker's commands through one pymongo 3 process of its own
//! (lib/enginebench/mongod/legacy_executor.py), for servers older than the Rust driver speaks to.
//! The posts' MongoDB 3.0 and 3.2 have no multi-document transactions, so it opens none.
use bson::{Bson, Document, RawDocumentBuf};
use serde_json::json;

use super::child::JsonChild;
use super::{Executor, ServerSpec};
use crate::error::{Error, Result};

pub struct Legacy {
    process: JsonChild,
}

impl Legacy {
    pub fn start(spec: &ServerSpec) -> Result<Legacy> {
        let argv = spec.legacy.as_ref().ok_or_else(|| Error::other("no legacy executor command line"))?;
        let mut process = JsonChild::start("a legacy executor", argv)?;
        process.call("open", json!({"uri": spec.uri, "database": spec.database}))?;
        Ok(Legacy { process })
    }

    fn send(&mut self, cmd: Document) -> Result<Document> {
        let reply = self.process.call("command", json!({"cmd": Bson::Document(cmd).into_canonical_extjson()}))?;
        JsonChild::document(reply)
    }
}

impl Executor for Legacy {
    fn run(&mut self, cmd: Document) -> Result<Document> {
        self.send(cmd)
    }

    fn find(&mut self, cmd: Document) -> Result<Vec<RawDocumentBuf>> {
        let reply = self.send(cmd)?;
        super::commands::check(&reply)?;
        let batch = reply.get_document("cursor").and_then(|c| c.get_array("firstBatch"))
            .map_err(|e| Error::other(format!("a find's reply without cursor.firstBatch: {e}")))?;
        batch.iter().map(|d| match d {
            Bson::Document(d) => Ok(RawDocumentBuf::try_from(d)?),
            other => Err(Error::other(format!("a find returned a non-document: {other}"))),
        }).collect()
    }
}
