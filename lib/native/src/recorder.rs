//! Per-thread operation recording: HdrHistograms per interval and op type, merged exactly.
//!
//! Each worker thread owns one Recorder; its lock is taken by that thread per operation and by
//! the phase's coordinator when it closes an interval, so it is almost never contended. An
//! operation belongs to the interval in which it completes; one that completes in an interval
//! already closed is counted in the next one, so none is lost.
//!
//! Within an interval, each op type also counts its calls and items per tick (one second for
//! intervals of whole seconds): a stall of a second or two, which a 20-second interval's rate
//! averages away, stays visible (the report's per-second rate).
//!
//! CPU: the thread's CPU clock costs a system call (~0.4 us here), so the CPU inside operations
//! is read around one operation in CPU_SAMPLE_EVERY and scaled to the count (the events say
//! so); the thread's whole CPU is read by the coordinator at every interval boundary.
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use hdrhistogram::Histogram;

pub const LOWEST_US: u64 = 1;
pub const HIGHEST_US: u64 = 3600 * 1_000_000;
pub const CPU_SAMPLE_EVERY: u64 = 16;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_US, HIGHEST_US, 3).expect("valid histogram bounds")
}

pub struct OpStats {
    pub histogram: Histogram<u64>,
    /// Open loop: latency from the op's intended start (its slot in the arrival schedule).
    pub intended: Option<Histogram<u64>>,
    pub items: u64,
    pub errors: u64,
    pub cpu_sampled_ns: u64,
    pub cpu_samples: u64,
    pub slow: u64,
    /// (calls, items) per tick of the interval, up to the last tick with a call.
    pub ticks: Vec<(u64, u64)>,
}

impl OpStats {
    fn new() -> Self {
        OpStats { histogram: new_histogram(), intended: None, items: 0, errors: 0, cpu_sampled_ns: 0,
                  cpu_samples: 0, slow: 0, ticks: Vec::new() }
    }

    fn tick(&mut self, tick: usize, items: u64) {
        if self.ticks.len() <= tick {
            self.ticks.resize(tick + 1, (0, 0));
        }
        self.ticks[tick].0 += 1;
        self.ticks[tick].1 += items;
    }

    /// Every tick's calls moved into `tick`: ops that completed after a phase's end, counted in
    /// its last interval, land in that interval's last tick, not at their own offsets.
    fn fold_ticks_into(&mut self, tick: usize) {
        let (calls, items) = self.ticks.drain(..).fold((0, 0), |(c, i), (tc, ti)| (c + tc, i + ti));
        if calls > 0 {
            self.ticks.resize(tick + 1, (0, 0));
            self.ticks[tick] = (calls, items);
        }
    }

    pub fn merge(&mut self, other: OpStats) {
        let _ = self.histogram.add(&other.histogram);
        if let Some(theirs) = other.intended {
            match &mut self.intended {
                Some(mine) => {
                    let _ = mine.add(&theirs);
                }
                None => self.intended = Some(theirs),
            }
        }
        self.items += other.items;
        self.errors += other.errors;
        self.cpu_sampled_ns += other.cpu_sampled_ns;
        self.cpu_samples += other.cpu_samples;
        self.slow += other.slow;
        if self.ticks.len() < other.ticks.len() {
            self.ticks.resize(other.ticks.len(), (0, 0));
        }
        for (mine, (calls, items)) in self.ticks.iter_mut().zip(other.ticks) {
            mine.0 += calls;
            mine.1 += items;
        }
    }

    /// CPU inside the calls: the sampled CPU scaled to every call.
    pub fn cpu_ns(&self) -> u64 {
        if self.cpu_samples == 0 {
            0
        } else {
            (self.cpu_sampled_ns as f64 * self.histogram.len() as f64 / self.cpu_samples as f64) as u64
        }
    }
}

/// One interval's share of one or more threads: op name -> stats.
#[derive(Default)]
pub struct Share {
    pub ops: Vec<(&'static str, OpStats)>,
}

impl Share {
    fn stats(&mut self, op: &'static str) -> &mut OpStats {
        let i = match self.ops.iter().position(|(name, _)| *name == op) {
            Some(i) => i,
            None => {
                self.ops.push((op, OpStats::new()));
                self.ops.len() - 1
            }
        };
        &mut self.ops[i].1
    }

    /// See OpStats::fold_ticks_into.
    pub fn fold_ticks_into(&mut self, tick: usize) {
        for (_, stats) in self.ops.iter_mut() {
            stats.fold_ticks_into(tick);
        }
    }

    pub fn merge(&mut self, other: Share) {
        for (name, stats) in other.ops {
            match self.ops.iter_mut().find(|(n, _)| *n == name) {
                Some((_, mine)) => mine.merge(stats),
                None => self.ops.push((name, stats)),
            }
        }
    }
}

/// Interval boundaries of a phase: interval k covers [start + k*len, start + (k+1)*len),
/// in `ticks` equal ticks.
#[derive(Clone, Copy)]
pub struct Clock {
    pub start: Instant,
    pub start_wall: f64,
    pub length_s: f64,
    pub ticks: usize,
}

impl Clock {
    /// Ticks of one second when the interval is whole seconds; else as many as its seconds,
    /// rounded up (at least one).
    pub fn new(start: Instant, start_wall: f64, length_s: f64) -> Self {
        Clock { start, start_wall, length_s, ticks: (length_s.ceil() as usize).max(1) }
    }

    pub fn tick_s(&self) -> f64 {
        self.length_s / self.ticks as f64
    }

    pub fn index(&self, at: Instant) -> i64 {
        (at.duration_since(self.start).as_secs_f64() / self.length_s) as i64
    }

    /// The tick of interval k that `at` falls in; an op counted in a later interval than its
    /// own (it completed as its interval was being closed) is in that interval's first tick.
    pub fn tick(&self, at: Instant, k: i64) -> usize {
        let within = at.duration_since(self.start).as_secs_f64() / self.length_s - k as f64;
        ((within * self.ticks as f64).floor().max(0.0) as usize).min(self.ticks - 1)
    }
    pub fn bounds(&self, k: i64) -> (f64, f64) {
        (self.start_wall + k as f64 * self.length_s, self.start_wall + (k + 1) as f64 * self.length_s)
    }
}

struct Inner {
    shares: BTreeMap<i64, Share>,
    closed_upto: i64,
}

pub struct Recorder {
    clock: Clock,
    inner: Mutex<Inner>,
    slow_us: Option<(&'static str, u64)>,
    calls: std::cell::Cell<u64>,
    /// The worker thread's CPU clock, read by the coordinator at interval boundaries.
    cpu_clock: AtomicI64,
    cpu_mark: AtomicI64,
    cpu_final: AtomicI64,
}

// The Cell is touched only by the recorder's own worker thread.
unsafe impl Sync for Recorder {}

fn clock_ns(clock: libc::clockid_t) -> Option<i64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec * 1_000_000_000 + ts.tv_nsec)
}

pub fn thread_cpu_ns() -> i64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

/// A result of one operation: how many documents it wrote or returned.
pub struct Outcome {
    pub items: u64,
    pub failed: bool,
}

impl Recorder {
    pub fn new(clock: Clock, slow_us: Option<(&'static str, u64)>) -> Self {
        Recorder {
            clock,
            inner: Mutex::new(Inner { shares: BTreeMap::new(), closed_upto: -1 }),
            slow_us,
            calls: std::cell::Cell::new(0),
            cpu_clock: AtomicI64::new(i64::MIN),
            cpu_mark: AtomicI64::new(0),
            cpu_final: AtomicI64::new(i64::MIN),
        }
    }

    /// Called by the worker thread when it starts.
    pub fn start_thread(&self) {
        let mut clock: libc::clockid_t = 0;
        if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } == 0 {
            self.cpu_clock.store(clock as i64, Ordering::SeqCst);
        }
        self.cpu_mark.store(thread_cpu_ns(), Ordering::SeqCst);
    }

    /// Called by the worker thread when it stops: its clock ends with it.
    pub fn finish_thread(&self) {
        self.cpu_final.store(thread_cpu_ns(), Ordering::SeqCst);
    }

    /// The thread's CPU since the previous call (by the coordinator).
    pub fn thread_cpu_since_last(&self) -> i64 {
        let mut now = self.cpu_final.load(Ordering::SeqCst);
        if now == i64::MIN {
            let clock = self.cpu_clock.load(Ordering::SeqCst);
            if clock == i64::MIN {
                return 0;
            }
            match clock_ns(clock as libc::clockid_t) {
                Some(ns) => now = ns,
                None => {
                    now = self.cpu_final.load(Ordering::SeqCst);
                    if now == i64::MIN {
                        return 0;
                    }
                }
            }
        }
        let before = self.cpu_mark.swap(now, Ordering::SeqCst);
        (now - before).max(0)
    }

    /// Runs one operation timed. `intended` is an open-loop op's scheduled start.
    pub fn call<F: FnOnce() -> Outcome>(&self, op: &'static str, intended: Option<Instant>, f: F) -> Outcome {
        let n = self.calls.get();
        self.calls.set(n + 1);
        let sample = n % CPU_SAMPLE_EVERY == 0;
        let cpu0 = if sample { thread_cpu_ns() } else { 0 };
        let t0 = Instant::now();
        let outcome = f();
        let t1 = Instant::now();
        let cpu = if sample { Some((thread_cpu_ns() - cpu0).max(0) as u64) } else { None };
        let latency_us = t1.duration_since(t0).as_micros() as u64;
        let intended_us = intended.map(|i| t1.saturating_duration_since(i).as_micros() as u64);
        self.record(op, t1, latency_us, cpu, &outcome, intended_us);
        outcome
    }

    /// Counts an event that is not timed (e.g. a retry inside a timed call).
    pub fn count(&self, op: &'static str, items: u64) {
        let mut inner = self.inner.lock().unwrap();
        let at = Instant::now();
        let k = self.interval(&inner, at);
        let tick = self.clock.tick(at, k);
        let stats = inner.shares.entry(k).or_default().stats(op);
        let _ = stats.histogram.record(LOWEST_US);
        stats.tick(tick, items);
        stats.items += items;
    }

    fn interval(&self, inner: &Inner, at: Instant) -> i64 {
        self.clock.index(at).max(inner.closed_upto + 1)
    }

    fn record(&self, op: &'static str, at: Instant, latency_us: u64, cpu: Option<u64>, outcome: &Outcome, intended_us: Option<u64>) {
        let mut inner = self.inner.lock().unwrap();
        let k = self.interval(&inner, at);
        let tick = self.clock.tick(at, k);
        let stats = inner.shares.entry(k).or_default().stats(op);
        let _ = stats.histogram.record(latency_us.clamp(LOWEST_US, HIGHEST_US));
        stats.tick(tick, outcome.items);
        stats.items += outcome.items;
        stats.errors += outcome.failed as u64;
        if let Some(cpu) = cpu {
            stats.cpu_sampled_ns += cpu;
            stats.cpu_samples += 1;
        }
        if let Some((slow_op, threshold)) = self.slow_us {
            if slow_op == op && latency_us >= threshold {
                stats.slow += 1;
            }
        }
        if let Some(us) = intended_us {
            let _ = stats.intended.get_or_insert_with(new_histogram).record(us.clamp(LOWEST_US, HIGHEST_US));
        }
    }

    /// Removes and returns the shares of intervals <= upto (by the coordinator).
    pub fn take(&self, upto: i64) -> Vec<(i64, Share)> {
        let mut inner = self.inner.lock().unwrap();
        let later = inner.shares.split_off(&(upto.saturating_add(1)));
        let taken = std::mem::replace(&mut inner.shares, later);
        inner.closed_upto = inner.closed_upto.max(upto);
        taken.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_interval_of_whole_seconds_has_one_tick_per_second() {
        let start = Instant::now();
        let clock = Clock::new(start, 0.0, 20.0);
        assert_eq!((clock.ticks, clock.tick_s()), (20, 1.0));
        assert_eq!(clock.tick(start + Duration::from_millis(2_500), 0), 2);
        assert_eq!(clock.tick(start + Duration::from_millis(21_500), 1), 1);
        // Completed as interval 0 was closed, counted in interval 1: its first tick.
        assert_eq!(clock.tick(start + Duration::from_millis(19_990), 1), 0);
        let short = Clock::new(start, 0.0, 0.5);
        assert_eq!((short.ticks, short.tick_s()), (1, 0.5));
        assert_eq!(short.tick(start + Duration::from_millis(400), 0), 0);
    }

    #[test]
    fn ticks_merge_by_position_and_fold_into_one() {
        let mut a = OpStats::new();
        a.tick(0, 2);
        a.tick(3, 1);
        let mut b = OpStats::new();
        b.tick(1, 5);
        a.merge(b);
        assert_eq!(a.ticks, vec![(1, 2), (1, 5), (0, 0), (1, 1)]);
        a.fold_ticks_into(9);
        assert_eq!(a.ticks.len(), 10);
        assert_eq!(a.ticks[9], (3, 8));
    }
}
