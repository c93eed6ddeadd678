//! A Python process beside the runner, spoken to in JSON lines (lib/enginebench/mongod/
//! jsonlines.py): the server's companion, or a legacy executor. One request at a time.
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bson::Bson;
use serde_json::{json, Value};

use crate::error::{Error, Kind, Result};
use crate::executors::server::commands::failure;

/// The children running now, and the CPU of those that ended: a server target's client is the
/// runner and these processes, and the interval events count their CPU together.
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static ENDED_NS: AtomicU64 = AtomicU64::new(0);

/// A process's CPU (user + system) so far, from /proc/<pid>/stat, in ns.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0 };
    // Fields after the command name (which may hold spaces, inside parentheses): utime is the
    // 14th field of the line, stime the 15th.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { return 0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    ticks * 1_000_000_000 / per_s
}

/// CPU of every child process so far (the companion, the legacy executors), in ns.
pub fn children_cpu_ns() -> u64 {
    let live: u64 = LIVE.lock().unwrap().iter().map(|pid| cpu_ns(*pid)).sum();
    ENDED_NS.load(Ordering::Relaxed) + live
}

pub struct JsonChild {
    what: String,
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl JsonChild {
    /// Starts `argv` (its stderr goes to the runner's log, the driver's runner.log).
    pub fn start(what: &str, argv: &[String]) -> Result<Self> {
        let (program, args) = argv.split_first().ok_or_else(|| Error::other(format!("{what}: no command to start")))?;
        let mut child = Command::new(program).args(args).stdin(Stdio::piped()).stdout(Stdio::piped())
            .stderr(Stdio::inherit()).spawn()
            .map_err(|e| Error::other(format!("{what}: cannot start {}: {e}", argv.join(" "))))?;
        let input = child.stdin.take().expect("piped stdin");
        let output = BufReader::new(child.stdout.take().expect("piped stdout"));
        LIVE.lock().unwrap().push(child.id());
        Ok(JsonChild { what: what.to_string(), child, input, output, next_id: 1 })
    }

    /// One request: `fields` (a JSON object) plus the op; the reply's `ok` value, or the error
    /// it names (a server's error code keeps its kind: a duplicate key stays one).
    pub fn call(&mut self, op: &str, fields: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let mut request = json!({"id": id, "op": op});
        if let Value::Object(map) = fields {
            request.as_object_mut().unwrap().extend(map);
        }
        let line = serde_json::to_string(&request).map_err(|e| Error::other(format!("{}: {e}", self.what)))?;
        writeln!(self.input, "{line}").and_then(|_| self.input.flush())
            .map_err(|e| Error::other(format!("{} is gone (writing {op}): {e}", self.what)))?;
        let mut reply = String::new();
        let n = self.output.read_line(&mut reply).map_err(|e| Error::other(format!("{}: {e}", self.what)))?;
        if n == 0 {
            return Err(Error::other(format!("{} ended without answering {op} (its stderr is in the runner's log)", self.what)));
        }
        let reply: Value = serde_json::from_str(&reply)
            .map_err(|e| Error::other(format!("{}: a reply that is not JSON: {e}: {}", self.what, reply.trim())))?;
        if let Some(error) = reply.get("error") {
            let message = error["message"].as_str().unwrap_or("failed");
            return Err(match error["code"].as_i64() {
                Some(code) => failure(code as i32, message),
                None => Error::new(Kind::Other, format!("{}: {op}: {}: {message}", self.what,
                                                        error["type"].as_str().unwrap_or("error"))),
            });
        }
        Ok(reply.get("ok").cloned().unwrap_or(Value::Null))
    }

    /// A reply value as a BSON document (canonical Extended JSON).
    pub fn document(value: Value) -> Result<bson::Document> {
        match Bson::try_from(value) {
            Ok(Bson::Document(d)) => Ok(d),
            Ok(other) => Err(Error::other(format!("expected a document, got {other}"))),
            Err(e) => Err(Error::other(format!("not Extended JSON: {e}"))),
        }
    }
}

impl Drop for JsonChild {
    fn drop(&mut self) {
        let pid = self.child.id();
        ENDED_NS.fetch_add(cpu_ns(pid), Ordering::Relaxed);
        LIVE.lock().unwrap().retain(|p| *p != pid);
        let _ = self.call("close", json!({}));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
