//! The modern executor: a worker's commands through the official Rust driver (the `mongodb`
//! crate), on the worker's own thread. Each worker has a client of its own, driven by a
//! single-threaded runtime on that thread: a command is written and its reply read by the
//! worker itself, as a blocking client (LinkBench's Java, pymongo) does. The driver's sync API
//! hands every command to a shared multi-threaded runtime and parks the caller until a runtime
//! thread wakes it: two thread switches per command, which took 60% of the client's CPU (most of
//! it the kernel's scheduler) against the Java stand-in. A worker keeps an explicit session
//! only for a multi-document transaction.
//!
//! The commands are sent as commands.rs built them (`run_command`, `run_cursor_command` for
//! finds), so every executor sends the same documents; the driver adds what every driver adds
//! (its handshake, `$db`, `lsid`, cluster time).
use std::future::IntoFuture;

use bson::{Document, RawDocumentBuf};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::{Client, ClientSession, Database};
use tokio::runtime::Runtime;

use super::Executor;
use crate::error::{Error, Kind, Result};

/// The driver's error as the runner's: a server's error code keeps its kind (duplicate key,
/// write conflict), a transient transaction failure is a write conflict (the caller retries).
pub fn error(e: mongodb::error::Error) -> Error {
    if e.contains_label("TransientTransactionError") || e.contains_label("UnknownTransactionCommitResult") {
        return Error::conflict(format!("transient transaction failure: {e}"));
    }
    match e.kind.as_ref() {
        ErrorKind::Command(c) => super::commands::failure(c.code, &c.message),
        ErrorKind::Write(WriteFailure::WriteError(w)) => super::commands::failure(w.code, &w.message),
        _ => Error::new(Kind::Other, format!("driver: {e}")),
    }
}

pub struct Driver {
    runtime: Runtime,
    client: Option<Client>,
    db: Database,
    session: Option<ClientSession>,
}

impl Driver {
    /// A client of this worker's own (the driver's server selection decides when the server is
    /// reachable).
    pub fn connect(uri: &str, database: &str) -> Result<Driver> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()
            .map_err(|e| Error::other(format!("could not start the driver's runtime: {e}")))?;
        let client = runtime.block_on(Client::with_uri_str(uri)).map_err(error)?;
        let db = client.database(database);
        Ok(Driver { runtime, client: Some(client), db, session: None })
    }
}

impl Drop for Driver {
    /// The driver's cleanup (returning a session, ending the client's sessions) spawns tasks on
    /// the runtime it runs in: done here, inside this worker's runtime, not after it is gone.
    fn drop(&mut self) {
        let _inside = self.runtime.enter();
        self.session.take();
        if let Some(client) = self.client.take() {
            self.runtime.block_on(client.shutdown().immediate(true).into_future());
        }
    }
}

impl Executor for Driver {
    fn run(&mut self, cmd: Document) -> Result<Document> {
        let action = self.db.run_command(cmd);
        let reply = match self.session.as_mut() {
            Some(session) => self.runtime.block_on(action.session(session).into_future()),
            None => self.runtime.block_on(action.into_future()),
        };
        match reply {
            Ok(reply) => Ok(reply),
            // A command error is a reply with ok: 0 (commands::check reads it), unless it is a
            // transaction's transient failure, which the transaction loop retries.
            Err(e) => match e.kind.as_ref() {
                ErrorKind::Command(c) if !e.contains_label("TransientTransactionError") => {
                    Ok(bson::doc! {"ok": 0.0, "code": c.code, "errmsg": c.message.clone()})
                }
                _ => Err(error(e)),
            },
        }
    }

    fn find(&mut self, cmd: Document) -> Result<Vec<RawDocumentBuf>> {
        let action = self.db.run_cursor_command(cmd);
        // Each document is copied as the server sent it (raw BSON), never parsed here.
        let mut out = Vec::new();
        match self.session.as_mut() {
            Some(session) => self.runtime.block_on(async {
                let mut cursor = action.session(&mut *session).await.map_err(error)?;
                while cursor.advance(session).await.map_err(error)? {
                    out.push(cursor.current().to_owned());
                }
                Ok::<_, Error>(())
            })?,
            None => self.runtime.block_on(async {
                let mut cursor = action.await.map_err(error)?;
                while cursor.advance().await.map_err(error)? {
                    out.push(cursor.current().to_owned());
                }
                Ok::<_, Error>(())
            })?,
        }
        Ok(out)
    }

    fn begin(&mut self) -> Result<()> {
        let client = self.client.as_ref().expect("a driver's client lives as long as the driver");
        if self.session.is_none() {
            self.session = Some(self.runtime.block_on(client.start_session().into_future()).map_err(error)?);
        }
        let session = self.session.as_mut().unwrap();
        self.runtime.block_on(session.start_transaction().into_future()).map_err(error)
    }

    fn commit(&mut self) -> Result<()> {
        let session = self.session.as_mut().ok_or_else(|| Error::other("no transaction is open"))?;
        self.runtime.block_on(session.commit_transaction().into_future()).map_err(error)
    }

    fn abort(&mut self) {
        if let Some(session) = self.session.as_mut() {
            let _ = self.runtime.block_on(session.abort_transaction().into_future());
        }
    }
}
