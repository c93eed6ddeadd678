//! `run SPEC`: one system, end to end, reporting events (the seam with the Python driver:
//! lib/enginebench/runner/ reads them).
//!
//! SIGINT / SIGTERM stop the phases and the engine is closed cleanly. A fatal engine error (a
//! WiredTiger panic, a full disk) is reported with its cause and the runner exits at once
//! without waiting on the engine, whose threads may never return. After any other failure the
//! engine gets a bounded time to close, then the runner exits all the same: a run that failed
//! keeps what it measured, and its data is deleted afterwards anyway.
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::engines;
use crate::error::{Error, Kind, Result};
use crate::events::{emit, now};
use crate::phase::ABORT;
use crate::plan::{self, Plan, Reopen, Step};
use crate::layouts::mongod_kv::{Locking, RecordStore, StoreOptions};
use crate::executors::server::{Server, ServerSpec};
use crate::executors::embedded::Embedded;
use crate::executors::Target;
use crate::workloads;

#[derive(Deserialize)]
pub struct System {
    pub label: String,
    pub engine: String,
    #[serde(default)]
    pub options: Map<String, Value>,
}

#[derive(Deserialize)]
pub struct WorkloadSpec {
    pub name: String,
    pub params: Value,
}

#[derive(Deserialize)]
pub struct Spec {
    pub system: System,
    pub data_dir: String,
    pub workload: WorkloadSpec,
    pub plan: Vec<Step>,
    #[serde(default = "max_errors")]
    pub max_errors: u64,
    /// Test-only: the runner stops reporting when this phase starts, as a hung runner would.
    #[serde(default)]
    pub hang_at_phase: Option<String>,
    /// A server target: the runner is its client (None: the embedded engine is the server).
    #[serde(default)]
    pub server: Option<ServerSpec>,
    /// Test-only: every Store call of every worker is written to this file (calls::recording;
    /// `{label}` in it is the system's label), with the workloads' clock fixed to this time
    /// (ms), so runs on different targets compare.
    #[serde(default)]
    pub record_calls: Option<String>,
    #[serde(default)]
    pub fixed_clock_ms: Option<i64>,
}

fn max_errors() -> u64 {
    100
}

/// How long a failed run's engine may take to close before the runner leaves it.
const CLOSE_AFTER_FAILURE: std::time::Duration = std::time::Duration::from_secs(10);

/// Ends the process without running exit handlers or static destructors: after a failure they
/// may wait on engine threads that never return (RocksDB's thread pools join theirs). Every
/// event was flushed as it was written.
fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    unsafe { libc::_exit(code) }
}

static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signum: libc::c_int) {
    SIGNAL.store(signum, Ordering::SeqCst);
    ABORT.store(true, Ordering::SeqCst);
}

/// SIGINT/SIGTERM set the abort flag (all a handler may safely do); a watcher thread reports
/// the signal as an event.
fn install_signal_handlers() {
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    std::thread::spawn(|| loop {
        let signum = SIGNAL.load(Ordering::SeqCst);
        if signum != 0 {
            let name = if signum == libc::SIGINT { "SIGINT" } else { "SIGTERM" };
            emit("signal", json!({"signal": name, "t": now()}));
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    });
}

/// Splits a system's options into the record store's and the engine's.
pub fn store_options(engine: &str, options: &Map<String, Value>) -> Result<(StoreOptions, Map<String, Value>)> {
    // Given by the params schema (lib/enginebench/engines.py, RecordStoreOptions) for every system.
    let mut rest = options.clone();
    let missing = |key: &str| Error::other(format!("{engine}: option {key} is missing; the params schema (lib/enginebench/engines.py) gives every engine option"));
    let oplog = rest.remove("oplog").ok_or_else(|| missing("oplog"))?.as_bool()
        .ok_or_else(|| Error::other("oplog must be true or false".to_string()))?;
    let oplog_mb = rest.remove("oplog_size_mb").ok_or_else(|| missing("oplog_size_mb"))?.as_i64()
        .ok_or_else(|| Error::other("oplog_size_mb must be an integer".to_string()))?;
    let group = rest.remove("insert_group").ok_or_else(|| missing("insert_group"))?;
    let insert_group = group.as_u64().filter(|n| *n >= 1)
        .ok_or_else(|| Error::other(format!("insert_group must be a whole number of at least 1 (got {group})")))? as usize;
    let locking = match rest.remove("mmap_lock").as_ref().and_then(|v| v.as_str()) {
        None | Some("none") => Locking::None,
        Some("collection") => Locking::Collection,
        Some("database") => Locking::Database,
        Some(other) => return Err(Error::other(format!("mmap_lock is {other:?}; allowed: none, collection, database"))),
    };
    let mut whole = |key: &str| -> Result<u64> {
        let value = rest.remove(key).ok_or_else(|| missing(key))?;
        value.as_u64().ok_or_else(|| Error::other(format!("{key} must be a whole number (got {value})")))
    };
    let (iterations, period_ms) = (whole("yield_iterations")?, whole("yield_period_ms")?);
    let yields = (iterations > 0).then(|| (iterations as usize, std::time::Duration::from_millis(period_ms)));
    let stand_in = engines::entry(engine)?.mmap_stand_in;
    if locking != Locking::None && !stand_in {
        return Err(Error::other(format!("mmap_lock emulates MMAPv1 and applies to its stand-in engine only (system engine: {engine})")));
    }
    Ok((StoreOptions { insert_group, oplog, oplog_bytes: oplog_mb << 20, locking, ring_capped: stand_in, yields }, rest))
}

pub fn open_store(engine: &str, dir: &Path, options: &Map<String, Value>) -> Result<Arc<RecordStore>> {
    let (store_options, engine_options) = store_options(engine, options)?;
    RecordStore::open(engines::open(engine, dir, &engine_options)?, store_options)
}

pub fn engines_json() -> Value {
    let mut out: Map<String, Value> = engines::ENGINES.iter().map(|e| (e.name.to_string(), json!((e.releases)()))).collect();
    out.insert("runner".into(), json!(env!("CARGO_PKG_VERSION")));
    out.insert("workloads".into(), json!(crate::workloads::NAMES));
    Value::Object(out)
}

pub fn main(spec_path: &Path) -> i32 {
    install_signal_handlers();
    crate::control::listen();
    emit("runner", json!({"runner": "native", "version": env!("CARGO_PKG_VERSION"), "pid": std::process::id(), "t": now()}));
    match run(spec_path) {
        Ok((status, None)) => {
            emit("done", json!({"status": status, "t": now(), "error": null}));
            if status == "complete" { 0 } else { 3 }
        }
        Ok((status, Some(e))) => {
            let interrupted = e.message == "interrupted";
            let error = if interrupted { e.message.clone() } else { format!("{}: {}", e.type_name(), e.message) };
            emit("done", json!({"status": status, "t": now(), "error": error, "fatal": e.kind == Kind::Fatal}));
            if e.kind == Kind::Fatal {
                exit_now(2); // the engine is not closed after a fatal error
            }
            if !interrupted {
                exit_now(3); // the engine may have been left closing (CLOSE_AFTER_FAILURE)
            }
            3
        }
        Err(e) => {
            emit("failed", json!({"error": format!("{}: {}", e.type_name(), e.message), "fatal": e.kind == Kind::Fatal, "t": now()}));
            exit_now(2)
        }
    }
}

fn run(spec_path: &Path) -> Result<(String, Option<Error>)> {
    let text = std::fs::read_to_string(spec_path).map_err(|e| Error::other(format!("{}: {e}", spec_path.display())))?;
    let spec: Spec = serde_json::from_str(&text).map_err(|e| Error::other(format!("{}: {e}", spec_path.display())))?;
    if let Some(phase) = &spec.hang_at_phase {
        crate::phase::hang_at(phase);
    }
    if let Some(path) = &spec.record_calls {
        crate::calls::recording::record_to(&path.replace("{label}", &spec.system.label))?;
    }
    if let Some(ms) = spec.fixed_clock_ms {
        workloads::fix_clock(ms);
    }
    let mut workload = workloads::build(&spec.workload.name, &spec.workload.params)?;
    let plan_steps = spec.plan.clone();
    let (mut store, reopen) = match spec.server.clone() {
        Some(server) => open_server(server, &spec.system.label)?,
        None => open_embedded(&spec)?,
    };
    let plan = Plan { steps: plan_steps, max_errors: spec.max_errors, reopen: reopen.as_ref() };
    let outcome = plan::execute(&plan, workload.as_mut(), &mut store);
    crate::calls::recording::flush();
    let fatal = matches!(&outcome, Ok((_, Some(e))) if e.kind == Kind::Fatal) || matches!(&outcome, Err(e) if e.kind == Kind::Fatal);
    if !fatal {
        drop(workload);
        let failed = matches!(&outcome, Ok((_, Some(e))) if e.message != "interrupted") || outcome.is_err();
        let closed = if failed { close_within(&store, CLOSE_AFTER_FAILURE) } else { store.close() };
        if let Err(e) = closed {
            emit("close_failed", json!({"error": e.message}));
            // A run whose engine could not close (its last checkpoint found the disk full, a
            // panic on the way down) did not leave what it measured durable: it failed, and a
            // panic is fatal as it would have been mid-phase.
            if !failed && !matches!(&outcome, Ok((_, Some(_)))) {
                let message = format!("closing the engine failed: {}", e.message);
                let error = if e.message.contains("WT_PANIC") || e.kind == Kind::Fatal { Error::fatal(message) } else { Error::other(message) };
                return Ok(("failed".to_string(), Some(error)));
            }
        }
    }
    outcome
}

type ReopenFn = Box<dyn Fn(&Arc<dyn Target>, &Reopen) -> Result<(Value, Arc<dyn Target>)>>;

/// The embedded target: the engine in this process, with mongod's record-store layout.
fn open_embedded(spec: &Spec) -> Result<(Arc<dyn Target>, ReopenFn)> {
    let dir = std::path::PathBuf::from(&spec.data_dir);
    let (engine, options) = (spec.system.engine.clone(), spec.system.options.clone());
    let opened = Embedded::open(&engine, &dir, &options)?;
    let mut info = opened.info();
    info["atomic"] = json!(true);
    info["label"] = json!(spec.system.label);
    info["executor"] = json!("embedded");
    emit("store_info", info);
    // Close the engine (writing back its dirty pages), evict its files or copy them, open it again.
    let reopen: ReopenFn = Box::new(move |current: &Arc<dyn Target>, action: &Reopen| {
        current.close()?;
        let done = match action {
            Reopen::Evict(method) => plan::evict(&dir, method)?,
            Reopen::CopyTo(to) => plan::copy_dir(&dir, to)?,
        };
        let reopened: Arc<dyn Target> = Embedded::open(&engine, &dir, &options)?.target();
        Ok((done, reopened))
    });
    Ok((opened.target(), reopen))
}

/// How long a server restart for a cold start may take (a replica set elects its primary again).
const RESTART_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

/// A server target: the runner is its client. Cold start: the driver, which launched the
/// server, restarts it on the same data (its caches go with the process) and evicts its files.
fn open_server(spec: ServerSpec, label: &str) -> Result<(Arc<dyn Target>, ReopenFn)> {
    let server = Server::open(spec)?;
    let mut info = server.info.clone();
    info["label"] = json!(label);
    info["executor"] = json!(server.executor_name());
    info["config"]["executor"] = json!(server.executor_name());
    emit("store_info", info);
    let restarted = server.clone();
    let reopen: ReopenFn = Box::new(move |current: &Arc<dyn Target>, action: &Reopen| {
        let Reopen::Evict(method) = action else {
            return Err(Error::other("a kept load (phases.load.reuse) is for the embedded engines only"));
        };
        let done = crate::control::request("restart_server", json!({"method": method}), RESTART_LIMIT)?;
        restarted.await_ready(RESTART_LIMIT)?;
        Ok((done, current.clone()))
    });
    Ok((server, reopen))
}

/// Closes the store on a thread of its own and waits at most `limit`: an engine that failed
/// (a disk that filled without a fatal error code, say) may never finish closing.
fn close_within(store: &Arc<dyn Target>, limit: std::time::Duration) -> Result<()> {
    let (done, wait) = std::sync::mpsc::channel();
    let closing = store.clone();
    std::thread::spawn(move || {
        let _ = done.send(closing.close());
    });
    match wait.recv_timeout(limit) {
        Ok(result) => result,
        Err(_) => Err(Error::other(format!("the engine did not close within {} s after the failure; left to the \
                                            process's exit", limit.as_secs()))),
    }
}
