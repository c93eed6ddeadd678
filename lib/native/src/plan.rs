//! The declarative phase plan, the same for every workload family: the spec's `plan` is a list
//! of steps the runner executes in order (load → verify → quiesce → cold start → measured
//! phases → rate sweep → check). Params files and the driver build it (lib/enginebench/
//! runner/plan.py); a workload only supplies what each step means for it.
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::events::{emit, now};
use crate::phase::{run_phase, PhaseResult, PhaseSpec, ABORT};
use crate::executors::Target;
use crate::workloads::{MeasureStep, Workload};

#[derive(Deserialize, Debug, Clone)]
#[serde(tag = "step", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// The workload's load, with `threads` loaders (plus any the workload adds).
    Load { threads: usize, interval_s: f64 },
    /// Counts what the load left against what it must have left.
    Verify,
    /// A checkpoint, then a pause, so the measured phase does not pay for the load's writes;
    /// `checkpoint` false: the pause alone, where the post went from load to queries without one.
    Quiesce {
        seconds: f64,
        #[serde(default = "checkpoint_by_default")]
        checkpoint: bool,
    },
    /// Close the engine and evict its files from the page cache (fadvise or drop_caches).
    ColdStart { method: String },
    /// A measured phase; `duration_s` None runs until the workers finish (a replay).
    /// `until_steady` (the driver's rule, e.g. `{"min_s": 60}`): the driver may end the phase at
    /// an interval boundary before `duration_s` once it judges it steady (`control.rs`); the
    /// runner only reports it in the phase's start event.
    Measure {
        name: String,
        threads: usize,
        interval_s: f64,
        duration_s: Option<f64>,
        #[serde(default)]
        rate_per_s: Option<f64>,
        #[serde(default)]
        until_steady: Option<Value>,
    },
    /// Open-loop phases at fractions of the throughput the measured phase `of` reached, each
    /// `seconds` long, continuing its workers' streams.
    RateSweep { of: String, fractions: Vec<f64>, seconds: f64, threads: usize },
    /// The consistency check.
    Check,
    /// The plan starts from a copy of a load kept earlier (the driver copied it into the data
    /// directory): the schema exists, so the workload's setup is skipped. `from` says whose load
    /// it is (run, system, when); it goes into the run's events as it is.
    Restored { from: Value },
    /// Keeps a copy of what the load left for later runs with the same load (`phases.load.reuse`):
    /// the engine is closed, its directory copied to `dir` (through `dir`.partial, so a copy
    /// cut short is never taken for one), `origin` written beside it as `dir`.json, and the
    /// engine opened again.
    KeepLoad { dir: String, origin: Value },
}

/// Why a plan closes its target and opens it again.
pub enum Reopen<'a> {
    /// A cold start: nothing of the data stays in memory (`fadvise` or `drop_caches`).
    Evict(&'a str),
    /// A kept load: the closed data directory is copied to this folder.
    CopyTo(&'a Path),
}

/// What a target does on a Reopen: closes it, does the action and opens it again; returns what
/// was done and the reopened target.
pub type ReopenFn<'a> = &'a dyn Fn(&Arc<dyn Target>, &Reopen) -> Result<(Value, Arc<dyn Target>)>;

pub struct Plan<'a> {
    pub steps: Vec<Step>,
    pub max_errors: u64,
    pub reopen: ReopenFn<'a>,
}

fn phase_outcome(result: &PhaseResult) -> Option<String> {
    result.outcome().map(|s| s.to_string())
}

/// Runs the plan; returns the run's status (complete, aborted, failed) and the error that
/// ended it, if any.
pub fn execute(plan: &Plan, workload: &mut dyn Workload, store: &mut Arc<dyn Target>) -> Result<(String, Option<Error>)> {
    if !matches!(plan.steps.first(), Some(Step::Restored { .. })) {
        let mut ctx = session(store, "setup")?;
        workload.setup(ctx.as_mut())?;
    }
    let mut throughput: HashMap<String, f64> = HashMap::new();
    for step in &plan.steps {
        if ABORT.load(Ordering::SeqCst) {
            return Ok(("aborted".into(), Some(Error::other("interrupted"))));
        }
        let ended = match step {
            Step::Load { threads, interval_s } => load(workload, store, *threads, *interval_s)?,
            Step::Verify => verify(workload, store)?,
            Step::Quiesce { seconds, checkpoint } => quiesce(store, *seconds, *checkpoint)?,
            Step::ColdStart { method } => {
                let (done, reopened) = (plan.reopen)(store, &Reopen::Evict(method))?;
                emit("cold_start", done);
                *store = reopened;
                None
            }
            Step::Restored { from } => {
                emit("load_restored", from.clone());
                None
            }
            Step::KeepLoad { dir, origin } => keep_load(plan, store, dir, origin)?,
            Step::Measure { name, threads, interval_s, duration_s, rate_per_s, until_steady } => {
                let step = MeasureStep { name: name.clone(), threads: *threads, rate_per_s: *rate_per_s };
                let spec = PhaseSpec { name: name.clone(), interval_s: *interval_s, duration_s: *duration_s,
                                       max_errors: plan.max_errors, accounting: workload.measure_accounting(),
                                       slow_us: workload.slow_us(), until_steady: until_steady.clone() };
                measure(workload, store, &step, &spec, &mut throughput)?
            }
            Step::RateSweep { of, fractions, seconds, threads } => {
                rate_sweep(plan, workload, store, &throughput, of, fractions, *seconds, *threads)?
            }
            Step::Check => check(workload, store)?,
        };
        if let Some(outcome) = ended {
            return Ok(outcome);
        }
    }
    Ok(("complete".into(), None))
}

/// What a step leaves the plan: None to go on, or the outcome that ends it here.
type Next = Option<(String, Option<Error>)>;

/// A phase that failed, was interrupted or was stopped by a finding ends the plan.
fn phase_ended(result: &PhaseResult, workload: &mut dyn Workload, store: &Arc<dyn Target>) -> Result<Next> {
    if let Some(status) = phase_outcome(result) {
        return Ok(Some((status, result.error.clone())));
    }
    match &result.stopped_by {
        Some(by) => stopped(workload, store, by).map(Some),
        None => Ok(None),
    }
}

fn load(workload: &mut dyn Workload, store: &Arc<dyn Target>, threads: usize, interval_s: f64) -> Result<Next> {
    let spec = PhaseSpec { name: "load".into(), interval_s, duration_s: None, max_errors: 0,
                           accounting: workload.load_accounting(), slow_us: workload.slow_us(), until_steady: None };
    workload.before_load(store.as_ref())?;
    let result = run_phase(&spec, workload.load(threads)?, store);
    if let Some(event) = workload.after_load(store.as_ref())? {
        let kind = event["event"].as_str().unwrap_or("after_load").to_string();
        emit(&kind, event);
    }
    after_phase(store.as_ref(), "load");
    phase_ended(&result, workload, store)
}

fn verify(workload: &mut dyn Workload, store: &Arc<dyn Target>) -> Result<Next> {
    let mut ctx = session(store, "verify")?;
    let (expected, found) = workload.verify(ctx.as_mut())?;
    emit("load_verified", json!({"expected": expected, "found": found, "ok": expected == found}));
    Ok(None)
}

fn checkpoint_by_default() -> bool {
    true
}

fn quiesce(store: &Arc<dyn Target>, seconds: f64, checkpoint: bool) -> Result<Next> {
    let started = Instant::now();
    if checkpoint {
        store.checkpoint()?;
    }
    pause(seconds);
    emit("quiesce", json!({"seconds": started.elapsed().as_secs_f64(), "checkpoint": checkpoint}));
    Ok(None)
}

fn keep_load(plan: &Plan, store: &mut Arc<dyn Target>, dir: &str, origin: &Value) -> Result<Next> {
    let (mut done, reopened) = (plan.reopen)(store, &Reopen::CopyTo(Path::new(dir)))?;
    *store = reopened;
    std::fs::write(format!("{dir}.json"), serde_json::to_string_pretty(origin).unwrap_or_default())?;
    done["dir"] = json!(dir);
    emit("load_kept", done);
    Ok(None)
}

fn measure(workload: &mut dyn Workload, store: &Arc<dyn Target>, step: &MeasureStep, spec: &PhaseSpec,
           throughput: &mut HashMap<String, f64>) -> Result<Next> {
    let result = run_phase(spec, workload.measure(step)?, store);
    workload.after_measure(&step.name)?;
    after_phase(store.as_ref(), &step.name);
    let ended = phase_ended(&result, workload, store)?;
    throughput.insert(step.name.clone(), result.ops as f64 / result.seconds.max(1e-9));
    Ok(ended)
}

#[allow(clippy::too_many_arguments)]
fn rate_sweep(plan: &Plan, workload: &mut dyn Workload, store: &Arc<dyn Target>, throughput: &HashMap<String, f64>,
              of: &str, fractions: &[f64], seconds: f64, threads: usize) -> Result<Next> {
    let capacity = *throughput.get(of).ok_or_else(|| Error::other(format!(
        "rate_sweep: no measured phase named {of:?} ran before it")))?;
    for fraction in fractions {
        let rate = fraction * capacity;
        let name = format!("sweep {fraction}x");
        emit("sweep", json!({"phase": name, "fraction": fraction, "offered_per_s": rate, "closed_loop_per_s": capacity}));
        let step = MeasureStep { name: name.clone(), threads, rate_per_s: Some(rate) };
        let spec = PhaseSpec { name, interval_s: seconds, duration_s: Some(seconds), max_errors: plan.max_errors,
                               accounting: workload.measure_accounting(), slow_us: workload.slow_us(), until_steady: None };
        let result = run_phase(&spec, workload.measure(&step)?, store);
        if let Some(status) = phase_outcome(&result) {
            return Ok(Some((status, result.error)));
        }
    }
    Ok(None)
}

fn check(workload: &mut dyn Workload, store: &Arc<dyn Target>) -> Result<Next> {
    let started = Instant::now();
    let mut ctx = session(store, "check")?;
    let mut result = workload.check(ctx.as_mut())?;
    result["seconds"] = json!(started.elapsed().as_secs_f64());
    result["atomic"] = json!(ctx.atomic());
    emit("consistency", result);
    Ok(None)
}

/// A Store for one of the plan's own steps (recorded as that step when the calls are recorded).
fn session(store: &Arc<dyn Target>, step: &str) -> Result<Box<dyn crate::calls::Store>> {
    Ok(crate::calls::recording::wrap(store.clone().session()?, step, 0))
}

/// What the target reports after a phase (a server's sizes), as an event of its own.
fn after_phase(target: &dyn Target, phase: &str) {
    if let Some((kind, mut fields)) = target.after_phase(phase) {
        fields["phase"] = json!(phase);
        emit(kind, fields);
    }
}

/// A phase ended by a finding (a stale secondary) ends the plan as a result: what the load left
/// is counted, and says why it is short.
fn stopped(workload: &mut dyn Workload, store: &Arc<dyn Target>, by: &str) -> Result<(String, Option<Error>)> {
    let mut ctx = store.clone().session()?;
    let (expected, found) = workload.verify(ctx.as_mut())?;
    emit("load_verified", json!({"expected": expected, "found": found, "ok": expected == found, "stopped_by": by}));
    Ok(("complete".into(), None))
}

/// Sleeps, waking early on an interrupt.
fn pause(seconds: f64) {
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < until && !ABORT.load(Ordering::SeqCst) {
        std::thread::sleep((until - Instant::now()).min(Duration::from_millis(50)));
    }
}

/// Copies a closed engine's directory to `dir`, through `dir`.partial; returns the files and
/// bytes copied and the seconds it took.
pub fn copy_dir(data_dir: &Path, dir: &Path) -> Result<Value> {
    let started = Instant::now();
    let partial = dir.with_extension("partial");
    for stale in [&partial, &dir.to_path_buf()] {
        if stale.exists() {
            std::fs::remove_dir_all(stale)?;
        }
    }
    let (mut files, mut bytes) = (0u64, 0u64);
    let mut stack = vec![(data_dir.to_path_buf(), partial.clone())];
    while let Some((from, to)) = stack.pop() {
        std::fs::create_dir_all(&to)?;
        for entry in std::fs::read_dir(&from)? {
            let path = entry?.path();
            let target = to.join(path.file_name().unwrap_or_default());
            if path.is_dir() {
                stack.push((path, target));
            } else {
                bytes += std::fs::copy(&path, &target)?;
                files += 1;
            }
        }
    }
    std::fs::rename(&partial, dir)?;
    Ok(json!({"files": files, "bytes": bytes, "seconds": started.elapsed().as_secs_f64()}))
}

/// Cold start: nothing of the database stays in memory. The engine is closed first (closing
/// writes back dirty pages); then its files are evicted, file by file with
/// posix_fadvise(DONTNEED), which touches only this system's files, or with drop_caches (root
/// only, the whole machine). What was done is reported and ends up in the manifest.
pub fn evict(data_dir: &Path, method: &str) -> Result<Value> {
    let started = Instant::now();
    let mut files = Vec::new();
    let mut stack = vec![data_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    let total: u64 = files.iter().filter_map(|p| p.metadata().ok()).map(|m| m.len()).sum();
    unsafe { libc::sync() }; // dirty pages cannot be dropped
    let mut note = None;
    if method == "drop_caches" {
        match std::fs::write("/proc/sys/vm/drop_caches", "1") {
            Ok(()) => return Ok(json!({"method": "drop_caches", "files": files.len(), "bytes": total,
                                       "seconds": started.elapsed().as_secs_f64(), "t": now()})),
            Err(e) => note = Some(format!("drop_caches not permitted ({e}); used fadvise")),
        }
    } else if method != "fadvise" {
        return Err(Error::other(format!("cold_start method {method:?}; allowed: fadvise, drop_caches")));
    }
    for path in &files {
        let file = std::fs::File::open(path)?;
        unsafe { libc::posix_fadvise(std::os::fd::AsRawFd::as_raw_fd(&file), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    let mut out = json!({"method": "fadvise", "files": files.len(), "bytes": total, "seconds": started.elapsed().as_secs_f64()});
    if let Some(n) = note {
        out["note"] = json!(n);
    }
    Ok(out)
}
