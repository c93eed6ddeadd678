//! The call recorder: every call a worker's Store passes on, one JSON line each, so the tests can
//! check that the same seed gives the same operations on every executor (the embedded engines,
//! the Rust driver, the legacy executor); the spec's `record_calls` names the file. It is a hook
//! on the Store watcher (watched.rs).
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::json;

use super::watched::{Call, Watched};
use super::Store;
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
    let Some(out) = OUT.get() else { return inner };
    let phase = phase.to_string();
    let hook = Arc::new(move |call: &Call| {
        let line = json!({"phase": phase, "worker": call.worker, "call": call.method, "args": (call.args)()});
        let _ = writeln!(out.lock().unwrap(), "{line}");
    });
    Box::new(Watched::new(inner, worker, hook))
}

pub fn flush() {
    if let Some(out) = OUT.get() {
        let _ = out.lock().unwrap().flush();
    }
}
