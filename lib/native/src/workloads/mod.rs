//! Workloads by name, and what every workload provides to the phase plan (plan.rs).
//!
//! Each module of this folder is one family's loops, with `pub fn build(params)`; build.rs
//! registers them all (the modules, NAMES and `registered`), so none is listed here.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::phase::{Env, Worker};
use crate::calls::Store;
use crate::executors::Target;

/// One measured phase of the plan, as the workload sees it.
pub struct MeasureStep {
    pub name: String,
    pub threads: usize,
    /// Open loop: requests per second over all threads on a fixed schedule.
    pub rate_per_s: Option<f64>,
}

pub trait Workload: Send {
    /// Collections and indexes, created before the load as the originals did.
    fn setup(&mut self, ctx: &mut dyn Store) -> Result<()>;
    /// The load's workers (`threads` as the plan says; a workload may add its own, e.g.
    /// LinkBench's node loader or iibench's query thread).
    fn load(&mut self, threads: usize) -> Result<Vec<Worker>>;
    fn load_accounting(&self) -> Value;
    /// Before the load, what the target must do for the workload (iibench: a server's profiler
    /// starts recording slow inserts).
    fn before_load(&mut self, _target: &dyn Target) -> Result<()> {
        Ok(())
    }
    /// After the load: an event of what the target recorded of it (iibench: the server's count
    /// of slow inserts), if any.
    fn after_load(&mut self, _target: &dyn Target) -> Result<Option<Value>> {
        Ok(None)
    }
    /// Documents the load leaves, per collection (the progress display counts to it, and the
    /// driver sizes a system's data from it before it starts).
    fn expected_after_load(&self, load_threads: usize) -> Value;
    /// Loaders whose first documents are representative, for sizing a run before it starts
    /// (sample.rs): sampled up to a number of documents in all, or in each collection.
    fn size_sample(&mut self) -> Result<Vec<Worker>> {
        self.load(1)
    }
    fn samples_per_collection(&self) -> bool {
        false
    }
    /// (expected, found) after the load: what the load must have left.
    fn verify(&mut self, ctx: &mut dyn Store) -> Result<(Value, Value)>;
    fn measure(&mut self, step: &MeasureStep) -> Result<Vec<Worker>>;
    fn measure_accounting(&self) -> Value {
        json!({"rate": "count", "rate_ops": null, "per_op": null})
    }
    /// After a measured phase: what the workload reports of it (flashback: the replay summary).
    fn after_measure(&mut self, _name: &str) -> Result<()> {
        Ok(())
    }
    /// The consistency check after the measured phases: the event's fields.
    fn check(&mut self, ctx: &mut dyn Store) -> Result<Value>;
    /// An op whose calls at or above a latency count as slow (iibench's 2 s inserts).
    fn slow_us(&self) -> Option<(&'static str, u64)> {
        None
    }
}

include!(concat!(env!("OUT_DIR"), "/workloads.rs"));

pub fn build(name: &str, params: &Value) -> Result<Box<dyn Workload>> {
    registered(name, params).unwrap_or_else(|| {
        Err(Error::other(format!("unknown workload {name:?}; this runner has {}", NAMES.join(", "))))
    })
}

/// Reads a workload's params, naming the workload and key on a mismatch.
pub fn params<T: serde::de::DeserializeOwned>(workload: &str, params: &Value) -> Result<T> {
    serde_json::from_value(params.clone()).map_err(|e| Error::other(format!("workload {workload}: params: {e}")))
}

// -- the clock the workloads put into documents ------------------------------------------------
/// 0: the wall clock; otherwise a fixed time (ms), so trace mode gives comparable streams.
static FIXED_MS: AtomicI64 = AtomicI64::new(0);

pub fn fix_clock(ms: i64) {
    FIXED_MS.store(ms, Ordering::Relaxed);
}

pub fn wall_ms() -> i64 {
    match FIXED_MS.load(Ordering::Relaxed) {
        0 => (crate::events::now() * 1000.0) as i64,
        fixed => fixed,
    }
}

pub fn wall_s() -> i64 {
    match FIXED_MS.load(Ordering::Relaxed) {
        0 => crate::events::now() as i64,
        fixed => fixed / 1000,
    }
}

/// Issues requests until the phase stops: closed loop (the next starts when the last ends),
/// or, with a rate, open loop on a fixed schedule (YCSB's method, LinkbenchX's requestrate):
/// request k is due at start + k/rate and its latency is also recorded from that intended
/// start, so time spent queued behind a slow engine is not lost (no coordinated omission).
/// `offset` (a fraction of the gap) staggers the workers' schedules.
pub fn request_loop(env: &mut Env, rate_per_worker: Option<f64>, offset: f64,
                    mut request: impl FnMut(&mut Env, Option<Instant>) -> Result<()>) -> Result<()> {
    let Some(rate) = rate_per_worker else {
        while !env.stopped() {
            request(env, None)?;
        }
        return Ok(());
    };
    let gap = Duration::from_secs_f64(1.0 / rate);
    let mut due = Instant::now() + gap.mul_f64(offset);
    while wait_until(env, due) {
        request(env, Some(due))?;
        due += gap;
    }
    Ok(())
}

/// Sleeps until `due` (in steps of at most 50 ms, so a stop is seen quickly); false when the
/// phase stopped first.
pub fn wait_until(env: &Env, due: Instant) -> bool {
    loop {
        if env.stopped() {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(Duration::from_millis(50)));
    }
}
