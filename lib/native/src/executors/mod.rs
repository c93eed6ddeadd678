//! Where a system's Store calls run: a target opens one Store per worker thread and answers
//! for the system as a whole (checkpoints, counters, closing).
//!
//! - `embedded`: the engine inside this process, through mongod's record-store layout
//!   (layouts::mongod_kv::RecordStore); the runner is then the database server.
//! - `server`: a MongoDB server the driver started or was given; the runner is its client.
pub mod embedded;
pub mod server;

use std::sync::Arc;

use serde_json::Value;

use crate::calls::Store;
use crate::error::Result;

pub trait Target: Send + Sync {
    /// A Store for the calling thread (an engine session, or a connection to the server).
    fn session(self: Arc<Self>) -> Result<Box<dyn Store>>;
    /// Make everything durable (the quiesce between phases).
    fn checkpoint(&self) -> Result<()>;
    /// Cumulative counters, sampled at every interval (the engine's, or the server's).
    fn stats(&self) -> Value;
    /// The engine's own checkpoints so far (engines::Engine::checkpoint_marks), polled during a
    /// phase to mark each in its time; None where they cannot be seen.
    fn checkpoint_marks(&self) -> Option<crate::engines::CheckpointMarks> {
        None
    }
    fn close(&self) -> Result<()>;
    /// What the target reports after a measured phase (a server's dbStats and collStats).
    fn after_phase(&self, _phase: &str) -> Option<(&'static str, Value)> {
        None
    }
    /// A request to the server's companion (lib/enginebench/mongod/companion.py), for what only
    /// a server has (its profiler); None on the embedded target.
    fn companion(&self, _op: &str, _args: Value) -> Option<Result<Value>> {
        None
    }
    /// A finding that ends the current phase as a result, not a failure (a replica set's
    /// secondary too stale to catch up, as in the TokuMX post); polled about once a second.
    fn finding(&self) -> Option<Value> {
        None
    }
}
