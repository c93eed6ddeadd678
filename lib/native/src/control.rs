//! What the driver tells a running runner on its stdin, one JSON object per line:
//! - replies to the runner's requests (`request` below): the driver restarted a server for a
//!   cold start, and says what it did;
//! - `{"end_phase": "<name>"}`: end that measured phase at its next interval boundary (the
//!   driver judged it steady).
//! A runner whose stdin is closed or never written to runs its plan as written.
use std::io::BufRead;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::events::{emit, now};
use crate::phase::ABORT;

static REPLIES: OnceLock<Mutex<Receiver<Value>>> = OnceLock::new();
static ENDED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Starts reading stdin (once).
pub fn listen() {
    let (tx, rx) = channel();
    if REPLIES.set(Mutex::new(rx)).is_err() {
        return;
    }
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { return };
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                emit("control_ignored", json!({"line": line, "why": "not JSON"}));
                continue;
            };
            if let Some(phase) = message["end_phase"].as_str() {
                ENDED.lock().unwrap().push(phase.to_string());
            } else if tx.send(message).is_err() {
                return;
            }
        }
    });
}

/// Whether the driver asked to end this phase.
pub fn phase_ended(name: &str) -> bool {
    ENDED.lock().unwrap().iter().any(|p| p == name)
}

/// Asks the driver to do something only it can (restart the server it launched) and waits for
/// its reply, at most `limit`; an interrupt ends the wait.
pub fn request(kind: &str, fields: Value, limit: Duration) -> Result<Value> {
    let Some(replies) = REPLIES.get() else {
        crate::bail!("the runner does not listen to its driver (control::listen was not called)")
    };
    let mut event = json!({"kind": kind, "t": now()});
    if let Value::Object(map) = fields {
        event.as_object_mut().unwrap().extend(map);
    }
    emit("request", event);
    let deadline = Instant::now() + limit;
    let replies = replies.lock().unwrap();
    loop {
        if ABORT.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::other("interrupted"));
        }
        match replies.recv_timeout(Duration::from_millis(100)) {
            Ok(reply) if reply["reply"] == kind => {
                return match reply.get("error").and_then(|e| e.as_str()) {
                    Some(e) => Err(Error::other(format!("{kind}: {e}"))),
                    None => Ok(reply["done"].clone()),
                };
            }
            Ok(other) => emit("control_ignored", json!({"line": other, "why": format!("waiting for {kind}")})),
            Err(RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
            Err(RecvTimeoutError::Timeout) => crate::bail!("{kind}: the driver did not answer within {} s", limit.as_secs()),
            Err(RecvTimeoutError::Disconnected) => crate::bail!("{kind}: the driver closed the runner's stdin"),
        }
    }
}
