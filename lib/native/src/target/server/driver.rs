//! The modern executor: a worker's commands through the official Rust driver (the `mongodb`
//! crate's sync API), on the worker's own thread. One client (its connection pool) serves every
//! worker of a system; a worker keeps an explicit session only for a multi-document transaction.
//!
//! The commands are sent as commands.rs built them (`run_command`, `run_cursor_command` for
//! finds), so every executor sends the same documents; the driver adds what every driver adds
//! (its handshake, `$db`, `lsid`, cluster time).
use bson::{Document, RawDocumentBuf};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::sync::{Client, ClientSession, Database};

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

/// Connects (the driver's own server selection decides when the server is reachable).
pub fn connect(uri: &str) -> Result<Client> {
    Client::with_uri_str(uri).map_err(error)
}

pub struct Driver {
    client: Client,
    db: Database,
    session: Option<ClientSession>,
}

impl Driver {
    pub fn new(client: &Client, database: &str) -> Driver {
        Driver { client: client.clone(), db: client.database(database), session: None }
    }
}

impl Executor for Driver {
    fn run(&mut self, cmd: Document) -> Result<Document> {
        let action = self.db.run_command(cmd);
        let reply = match self.session.as_mut() {
            Some(session) => action.session(session).run(),
            None => action.run(),
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
            Some(session) => {
                let mut cursor = action.session(&mut *session).run().map_err(error)?;
                while cursor.advance(session).map_err(error)? {
                    out.push(cursor.current().to_owned());
                }
            }
            None => {
                let mut cursor = action.run().map_err(error)?;
                while cursor.advance().map_err(error)? {
                    out.push(cursor.current().to_owned());
                }
            }
        }
        Ok(out)
    }

    fn begin(&mut self) -> Result<()> {
        if self.session.is_none() {
            self.session = Some(self.client.start_session().run().map_err(error)?);
        }
        self.session.as_mut().unwrap().start_transaction().run().map_err(error)
    }

    fn commit(&mut self) -> Result<()> {
        let session = self.session.as_mut().ok_or_else(|| Error::other("no transaction is open"))?;
        session.commit_transaction().run().map_err(error)
    }

    fn abort(&mut self) {
        if let Some(session) = self.session.as_mut() {
            let _ = session.abort_transaction().run();
        }
    }
}
