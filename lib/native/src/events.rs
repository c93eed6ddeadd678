//! The runner's events: one JSON object per line on stdout, written whole and flushed, so the
//! driver keeps everything measured before a failure or an interrupt. The event vocabulary is
//! the one the driver and the results tables read (lib/enginebench/runner/ documents it).
use std::io::Write;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

static OUT: Mutex<()> = Mutex::new(());

/// Seconds since the epoch, as the events' `t` fields carry them.
pub fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Writes one event: `kind` plus the fields of `fields` (an object).
pub fn emit(kind: &str, fields: Value) {
    let mut event = json!({"event": kind});
    if let Value::Object(map) = fields {
        event.as_object_mut().unwrap().extend(map);
    }
    let line = serde_json::to_string(&event).unwrap_or_else(|e| format!("{{\"event\":\"failed\",\"error\":\"{e}\"}}"));
    let _guard = OUT.lock().unwrap_or_else(|p| p.into_inner());
    let mut out = std::io::stdout().lock();
    // A closed pipe (the driver is gone) leaves nothing to report to; the runner goes on to
    // close the engine cleanly and exits.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
