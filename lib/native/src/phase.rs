//! Running one phase: worker threads, interval closing, and the events that report them.
//!
//! A phase is a set of workers, each on its own OS thread with its own store session. It ends
//! when every worker has returned (a load) or when its duration is over (a measured phase).
//! Every `interval_s` the coordinator closes the interval that just ended, merges the workers'
//! histograms exactly and emits one `interval` event; the driver pairs it with its OS samples
//! of the same time span.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

use crate::error::{Error, Kind, Result};
use crate::events::{emit, now};
use crate::recorder::{Clock, Outcome, Recorder, Share, CPU_SAMPLE_EVERY};
use crate::calls::Store;
use crate::executors::Target;

/// How often a phase asks its target for a finding that ends it (a stale secondary).
const FINDING_POLL: Duration = Duration::from_secs(1);

/// How often a phase reads its engine's checkpoint counters (engines::Engine::checkpoint_marks),
/// so a report can mark each checkpoint on the per-second rate to within this.
const CHECKPOINT_POLL: Duration = Duration::from_millis(500);

/// Let ops finishing on a boundary land before the interval is closed.
const GRACE: Duration = Duration::from_millis(20);

/// Set by SIGINT / SIGTERM: every phase stops, the engine is closed cleanly.
pub static ABORT: AtomicBool = AtomicBool::new(false);

static HANG_AT: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Test-only: when this phase starts the runner stops reporting and never returns, as a hung
/// runner would (the driver must notice and kill it).
pub fn hang_at(phase: &str) {
    let _ = HANG_AT.set(phase.to_string());
}

/// What a worker sees: its store session, its recorder, and the phase's stop flag.
pub struct Env<'a> {
    pub ctx: &'a mut dyn Store,
    pub rec: &'a Recorder,
    pub stop: &'a AtomicBool,
    errors: u64,
    max_errors: u64,
}

impl<'a> Env<'a> {
    pub fn new(ctx: &'a mut dyn Store, rec: &'a Recorder, stop: &'a AtomicBool, max_errors: u64) -> Self {
        Env { ctx, rec, stop, errors: 0, max_errors }
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Runs one operation timed; `f` returns the documents it wrote or returned. A failed
    /// operation is counted and the worker goes on, unless it was fatal (the engine cannot go
    /// on) or the phase's error budget is spent.
    pub fn op(&mut self, name: &'static str, intended: Option<Instant>, f: impl FnOnce(&mut dyn Store) -> Result<u64>) -> Result<Option<u64>> {
        let ctx = &mut *self.ctx;
        let mut failure = None;
        let outcome = self.rec.call(name, intended, || match f(ctx) {
            Ok(items) => Outcome { items, failed: false },
            Err(e) => {
                failure = Some(e);
                Outcome { items: 0, failed: true }
            }
        });
        match failure {
            None => Ok(Some(outcome.items)),
            Some(e) if e.kind == Kind::Fatal => Err(e),
            Some(e) => {
                self.errors += 1;
                if self.errors > self.max_errors {
                    return Err(Error::new(e.kind.clone(), format!(
                        "more than {} failed operations; last: {name}: {}: {}", self.max_errors, e.type_name(), e.message)));
                }
                Ok(None)
            }
        }
    }

    /// Counts an untimed event (e.g. a retry whose time is inside a timed call).
    pub fn count(&self, name: &'static str, items: u64) {
        self.rec.count(name, items);
    }
}

pub type Worker = Box<dyn FnOnce(&mut Env) -> Result<()> + Send>;

pub struct PhaseSpec {
    pub name: String,
    pub interval_s: f64,
    pub duration_s: Option<f64>,
    pub max_errors: u64,
    /// How the tables count this phase's throughput (results/tables.py).
    pub accounting: Value,
    /// An op whose calls at or above this latency count as slow.
    pub slow_us: Option<(&'static str, u64)>,
    /// The driver may end this phase once steady (plan.rs `Step::Measure`): reported only.
    pub until_steady: Option<Value>,
}

pub struct PhaseResult {
    pub seconds: f64,
    pub ops: u64,
    pub aborted: bool,
    pub error: Option<Error>,
    /// A finding that ended the phase early as a result (target::Target::finding).
    pub stopped_by: Option<String>,
    /// The last interval of a phase the driver ended once it judged it steady.
    pub steady_at: Option<i64>,
}

impl PhaseResult {
    /// None if the phase completed, else the run's status.
    pub fn outcome(&self) -> Option<&'static str> {
        if !self.aborted {
            return None;
        }
        match &self.error {
            Some(e) if e.message == "interrupted" => Some("aborted"),
            _ => Some("failed"),
        }
    }
}

/// The runner's own CPU and its children's so far, in ns: on a server target, the client's.
fn client_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64 + crate::executors::server::child::children_cpu_ns()
}

/// How long workers may take to return once one of them met a fatal engine error.
const FATAL_JOIN: Duration = Duration::from_secs(5);

/// Waits for the workers. After a fatal engine error a worker may be blocked inside the engine
/// for ever (waiting on an eviction server that panicked), so the wait is bounded: such a
/// worker is left behind, the runner reports and exits without it.
fn join_workers(threads: Vec<std::thread::JoinHandle<()>>, failures: &Mutex<Vec<Error>>) {
    let mut deadline: Option<Instant> = None;
    let mut pending = threads;
    while !pending.is_empty() {
        let (finished, running): (Vec<_>, Vec<_>) = pending.into_iter().partition(|t| t.is_finished());
        for t in finished {
            let _ = t.join();
        }
        pending = running;
        if pending.is_empty() {
            break;
        }
        if deadline.is_none() && failures.lock().unwrap().iter().any(|e| e.kind == Kind::Fatal) {
            deadline = Some(Instant::now() + FATAL_JOIN);
        }
        if deadline.map(|d| Instant::now() >= d).unwrap_or(false) {
            emit("workers_abandoned", json!({"workers": pending.len(), "after_s": FATAL_JOIN.as_secs_f64(), "t": now()}));
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn encode(h: &Histogram<u64>) -> Option<String> {
    if h.is_empty() {
        return None;
    }
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The histogram's mean as the report's histogram library defines it (each recorded bucket's count
/// times the bucket's median-equivalent value, summed exactly, over the total count): sent with
/// every interval because that library walks every bucket to find it, seconds a run in Python.
fn mean_us(h: &Histogram<u64>) -> Option<f64> {
    if h.is_empty() {
        return None;
    }
    let total: u128 = h.iter_recorded()
        .map(|v| v.count_at_value() as u128 * h.median_equivalent(v.value_iterated_to()) as u128)
        .sum();
    Some(total as f64 / h.len() as f64)
}

fn encode_share(share: &Share) -> Value {
    let mut ops = Map::new();
    let mut sorted: Vec<_> = share.ops.iter().collect();
    sorted.sort_by_key(|(name, _)| *name);
    for (name, s) in sorted {
        ops.insert(name.to_string(), json!({
            "count": s.histogram.len(), "items": s.items, "errors": s.errors, "cpu_ns": s.cpu_ns(),
            "cpu_samples": s.cpu_samples, "slow": s.slow, "hist": encode(&s.histogram),
            "mean_us": mean_us(&s.histogram),
            "intended_hist": s.intended.as_ref().and_then(encode),
            "ticks": s.ticks.iter().map(|(calls, items)| [*calls, *items]).collect::<Vec<_>>(),
        }));
    }
    Value::Object(ops)
}

pub fn run_phase(spec: &PhaseSpec, workers: Vec<Worker>, target: &Arc<dyn Target>) -> PhaseResult {
    let mut phase = Coordinator::new(spec, target, workers.len());
    phase.announce();
    let threads = phase.spawn(workers);
    let (stopped_by, steady_at) = phase.coordinate(&threads);
    join_workers(threads, &phase.failures);
    phase.finish(stopped_by, steady_at)
}

/// One phase's coordinator: it starts the workers, closes each interval as its time passes,
/// watches for the end (duration, the driver's steady verdict, a finding, a signal, the
/// workers' finishing) and reports the phase.
struct Coordinator<'a> {
    spec: &'a PhaseSpec,
    target: &'a Arc<dyn Target>,
    start: Instant,
    clock: Clock,
    last_index: Option<i64>,
    end: Option<Instant>,
    recorders: Vec<Arc<Recorder>>,
    stop: Arc<AtomicBool>,
    failures: Arc<Mutex<Vec<Error>>>,
    // When the last worker returned: a phase that ends by its workers' finishing ends then, not
    // when the coordinator next wakes (which may be past an interval boundary).
    last_done: Arc<Mutex<Option<Instant>>>,
    client_cpu: u64,
    next_k: i64,
    total_ops: u64,
    /// The engine's checkpoint counters when last read (None: it reports none).
    checkpoints: Option<crate::engines::CheckpointMarks>,
}

impl<'a> Coordinator<'a> {
    fn new(spec: &'a PhaseSpec, target: &'a Arc<dyn Target>, workers: usize) -> Self {
        let start = Instant::now();
        let clock = Clock::new(start, now(), spec.interval_s);
        Coordinator {
            spec, target, start, clock,
            last_index: spec.duration_s.map(|d| ((d / spec.interval_s).round() as i64 - 1).max(0)),
            end: spec.duration_s.map(|d| start + Duration::from_secs_f64(d)),
            recorders: (0..workers).map(|_| Arc::new(Recorder::new(clock, spec.slow_us))).collect(),
            stop: Arc::new(AtomicBool::new(false)),
            failures: Arc::new(Mutex::new(Vec::new())),
            last_done: Arc::new(Mutex::new(None)),
            client_cpu: client_cpu_ns(),
            next_k: 0,
            total_ops: 0,
            checkpoints: target.checkpoint_marks(),
        }
    }

    fn announce(&self) {
        let spec = self.spec;
        emit("phase_start", json!({"phase": spec.name, "t": self.clock.start_wall, "workers": self.recorders.len(),
                                   "interval_s": spec.interval_s, "tick_s": self.clock.tick_s(),
                                   "duration_s": spec.duration_s,
                                   "until_steady": spec.until_steady,
                                   "cpu_sample_every": CPU_SAMPLE_EVERY}));
        if HANG_AT.get() == Some(&spec.name) {
            // After phase_start, as a runner stuck inside a phase: the driver sees a phase that
            // never reports an interval, and a SIGTERM that is not acted on (only SIGKILL ends it).
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
    }

    /// One thread per worker, each with its recorder and a session of its own.
    fn spawn(&self, workers: Vec<Worker>) -> Vec<std::thread::JoinHandle<()>> {
        let mut threads = Vec::new();
        for (i, (work, rec)) in workers.into_iter().zip(self.recorders.iter().cloned()).enumerate() {
            let (stop, failures, target) = (self.stop.clone(), self.failures.clone(), self.target.clone());
            let done = self.last_done.clone();
            let (max_errors, phase_name) = (self.spec.max_errors, self.spec.name.clone());
            let handle = std::thread::Builder::new().name(format!("{}-{i}", self.spec.name)).spawn(move || {
                rec.start_thread();
                let result = target.session().and_then(|ctx| {
                    let mut ctx = crate::calls::recording::wrap(ctx, &phase_name, i);
                    let mut env = Env::new(ctx.as_mut(), &rec, &stop, max_errors);
                    work(&mut env)
                });
                rec.finish_thread();
                let now = Instant::now();
                let mut last = done.lock().unwrap();
                *last = Some(last.map_or(now, |d| d.max(now)));
                drop(last);
                if let Err(e) = result {
                    failures.lock().unwrap().push(e);
                    stop.store(true, Ordering::SeqCst);
                }
            });
            match handle {
                Ok(h) => threads.push(h),
                Err(e) => {
                    self.failures.lock().unwrap().push(Error::other(format!("could not start a worker thread: {e}")));
                    self.stop.store(true, Ordering::SeqCst);
                }
            }
        }
        threads
    }

    /// Closes intervals next_k..=upto. The final close takes every share left (`take_all`),
    /// counting ops that completed after the phase's end in its last interval.
    fn close(&mut self, upto: i64, take_all: bool, final_end: Option<f64>) {
        let stats = self.target.stats();
        let mut merged: std::collections::BTreeMap<i64, Share> = Default::default();
        for rec in &self.recorders {
            for (k, mut share) in rec.take(if take_all { i64::MAX } else { upto }) {
                if k > upto {  // after the phase's end: counted in the tick it ended in
                    share.fold_ticks_into(self.last_tick(upto, final_end));
                }
                merged.entry(k.min(upto)).or_default().merge(share);
            }
        }
        // The worker threads' CPU read now belongs to the last interval being closed; so does the
        // whole client's (the runner and the processes it runs beside a server).
        let thread_cpu: i64 = self.recorders.iter().map(|r| r.thread_cpu_since_last()).sum();
        let client_now = client_cpu_ns();
        let client_delta = client_now.saturating_sub(std::mem::replace(&mut self.client_cpu, client_now));
        for k in self.next_k..=upto {
            let share = merged.remove(&k).unwrap_or_default();
            let (t0, mut t1) = self.clock.bounds(k);
            if k == upto {
                if let Some(end) = final_end {
                    t1 = end;
                }
            }
            self.total_ops += share.ops.iter().map(|(_, s)| s.histogram.len()).sum::<u64>();
            emit("interval", json!({
                "phase": self.spec.name, "interval": k, "t_start": t0, "t_end": t1, "ops": encode_share(&share),
                "thread_cpu_ns": if k == upto { thread_cpu } else { 0 }, "engine": stats,
                "accounting": self.spec.accounting, "client_cpu_ns": if k == upto { client_delta } else { 0 },
            }));
        }
        self.next_k = upto + 1;
    }

    /// The tick of interval k in which the phase ended (its last, without an end).
    fn last_tick(&self, k: i64, end: Option<f64>) -> usize {
        let last = self.clock.ticks - 1;
        end.map_or(last, |end| {
            let within = ((end - self.clock.start_wall) / self.clock.length_s - k as f64) * self.clock.ticks as f64;
            (within.ceil() as i64 - 1).clamp(0, last as i64) as usize
        })
    }

    /// Until the phase ends: closes intervals as they pass; returns the finding that stopped it
    /// and the interval the driver judged it steady at, if either.
    fn coordinate(&mut self, threads: &[std::thread::JoinHandle<()>]) -> (Option<String>, Option<i64>) {
        let (mut stopped_by, mut steady_at) = (None, None);
        let mut next_poll = Instant::now() + FINDING_POLL;
        let mut next_marks = Instant::now() + CHECKPOINT_POLL;
        loop {
            let at = Instant::now();
            if self.checkpoints.is_some() && at >= next_marks {
                next_marks = at + CHECKPOINT_POLL;
                self.mark_checkpoints();
            }
            if self.end.map(|e| at >= e).unwrap_or(false) || ABORT.load(Ordering::SeqCst) {
                self.stop.store(true, Ordering::SeqCst);
            }
            // The driver judged the intervals closed so far steady: the phase ends with the last
            // of them, and what the workers did since (the driver's reply time) is not measured.
            if self.next_k > 0 && steady_at.is_none() && crate::control::phase_ended(&self.spec.name) {
                steady_at = Some(self.next_k - 1);
                self.stop.store(true, Ordering::SeqCst);
            }
            if at >= next_poll {
                next_poll = at + FINDING_POLL;
                if let Some(found) = self.target.finding() {
                    let kind = found["event"].as_str().unwrap_or("finding").to_string();
                    emit(&kind, found);
                    stopped_by = Some(kind);
                    self.stop.store(true, Ordering::SeqCst);
                }
            }
            if self.stop.load(Ordering::SeqCst) || threads.iter().all(|t| t.is_finished()) {
                return (stopped_by, steady_at);
            }
            let more = self.last_index.map(|l| self.next_k < l).unwrap_or(true);
            let boundary = self.clock.start + Duration::from_secs_f64((self.next_k + 1) as f64 * self.spec.interval_s);
            if more && at >= boundary + GRACE {
                self.close(self.next_k, false, None);
                continue;
            }
            let wake = if more { boundary + GRACE } else { self.end.unwrap_or(at + Duration::from_millis(100)) };
            let nap = wake.saturating_duration_since(at).clamp(Duration::from_millis(1), Duration::from_millis(100));
            std::thread::sleep(nap);
        }
    }

    /// A checkpoint that began or ended since the last reading is reported with the time it was
    /// seen (the report pairs the two into the checkpoint's span).
    fn mark_checkpoints(&mut self) {
        let (Some(before), Some(now_marks)) = (self.checkpoints, self.target.checkpoint_marks()) else { return };
        if now_marks != before {
            // began: how many began since the last reading; took_ms: how long those that ended
            // since then took (one, at a half-second reading, unless checkpoints ran back to back).
            emit("checkpoint_marks", json!({"phase": self.spec.name, "t": now(), "started": now_marks.started,
                                            "finished_ms": now_marks.finished_ms,
                                            "began": now_marks.started - before.started,
                                            "took_ms": now_marks.finished_ms - before.finished_ms}));
            self.checkpoints = Some(now_marks);
        }
    }

    /// After the workers have joined: closes the last interval and reports the phase.
    fn finish(mut self, stopped_by: Option<String>, steady_at: Option<i64>) -> PhaseResult {
        let spec = self.spec;
        if self.checkpoints.is_some() {
            self.mark_checkpoints(); // one that began or ended since the last half-second reading
        }
        let finished = self.last_done.lock().unwrap().filter(|_| self.end.is_none()).unwrap_or_else(Instant::now);
        let failures = std::mem::take(&mut *self.failures.lock().unwrap());
        let aborted_by_signal = ABORT.load(Ordering::SeqCst);
        let clean = !aborted_by_signal && failures.is_empty() && stopped_by.is_none();
        let timed_out_normally = self.end.is_some() && clean;
        let ended_at = match steady_at.filter(|_| clean) {
            Some(k) => Some((k, (k + 1) as f64 * spec.interval_s)),
            None if timed_out_normally => Some((self.last_index.unwrap(), spec.duration_s.unwrap())),
            None => None,
        };
        let final_k = ended_at.map(|(k, _)| k).unwrap_or_else(|| self.clock.index(finished).max(self.next_k));
        let final_end = self.clock.start_wall
            + ended_at.map(|(_, s)| s).unwrap_or_else(|| finished.duration_since(self.start).as_secs_f64());
        // Ops completing after a timed phase's end are counted in its last interval.
        self.close(final_k, true, Some(final_end));
        let aborted = aborted_by_signal || !failures.is_empty();
        let error = if aborted_by_signal { Some(Error::other("interrupted")) } else { failures.into_iter().next() };
        let seconds = ended_at.filter(|_| steady_at.is_some()).map(|(_, s)| s)
            .unwrap_or_else(|| finished.duration_since(self.start).as_secs_f64());
        let result = PhaseResult { seconds, ops: self.total_ops, aborted, error, stopped_by, steady_at };
        emit("phase_end", json!({"phase": spec.name, "t": now(), "seconds": result.seconds, "ops": result.ops,
                                 "aborted": result.aborted, "stopped_by": result.stopped_by,
                                 "steady_at_interval": result.steady_at,
                                 "error": result.error.as_ref().map(|e| format!("{}: {}", e.type_name(), e.message)),
                                 "fatal": result.error.as_ref().map(|e| e.kind == Kind::Fatal).unwrap_or(false)}));
        result
    }
}
