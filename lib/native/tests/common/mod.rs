//! What the integration tests share: a record store over each embedded engine in a folder of its
//! own, a Store that shows a test every call before it runs, and the workers of a phase run on
//! threads as the runner runs them (phase.rs), with their recorders merged per op, but without
//! the events the runner writes for the driver.
#![allow(dead_code)]

pub mod fractal;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{Bson, RawDocumentBuf};
use serde_json::Value;

use enginebench_runner::calls::Store;
use enginebench_runner::error::Result;
use enginebench_runner::phase::{Env, Worker};
use enginebench_runner::recorder::{Clock, Recorder};
use enginebench_runner::layouts::mongod_kv::{Ctx, RecordStore};

/// A folder under the system's temporary folder, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path = std::env::temp_dir().join(format!("eb-test-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The four embedded systems every store-level test runs against (lib/tests/conftest.py's
/// EMBEDDED): (label, engine, options).
pub const EMBEDDED: [(&str, &str, &str); 4] = [
    ("wt-btree", "wiredtiger", r#"{"table_type": "btree", "cache_size_mb": 32}"#),
    ("wt-lsm", "wiredtiger", r#"{"table_type": "lsm", "cache_size_mb": 48}"#),
    ("rocksdb", "rocksdb", r#"{"cache_size_mb": 32}"#),
    ("lmdb", "lmdb", r#"{"map_size_gb": 1}"#),
];

/// Every option of `engine` at its default (the params schema's, lib/enginebench/engines.py,
/// written to tests/data/engine_options.json by `python -m enginebench engine-options`), with
/// `overrides` (a JSON object) over them: the runner keeps no defaults of its own.
pub fn full_options(engine: &str, overrides: &str) -> serde_json::Map<String, Value> {
    let all: Value = serde_json::from_str(include_str!("../data/engine_options.json")).unwrap();
    let mut options = all[engine].as_object().unwrap_or_else(|| panic!("no defaults for engine {engine}")).clone();
    let given: Value = serde_json::from_str(overrides).unwrap();
    options.extend(given.as_object().unwrap().clone());
    options
}

/// The record store the runner measures, over one engine in a folder of its own (opened as
/// `run` opens a system's: run::open_store). Closed, and its folder removed, when dropped; every
/// session (Ctx) must be dropped before it.
pub struct Embedded {
    pub label: &'static str,
    pub store: Arc<RecordStore>,
    _dir: TempDir,
}

impl Embedded {
    pub fn open(label: &'static str, engine: &str, options: &str) -> Embedded {
        let dir = TempDir::new(label);
        let store = enginebench_runner::run::open_store(engine, &dir.0, &full_options(engine, options))
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        Embedded { label, store, _dir: dir }
    }

    /// The first of EMBEDDED (WiredTiger's B-tree).
    pub fn wiredtiger() -> Embedded {
        let (label, engine, options) = EMBEDDED[0];
        Embedded::open(label, engine, options)
    }

    pub fn ctx(&self) -> Ctx {
        self.store.session().unwrap()
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        let _ = self.store.close();
    }
}

/// Runs `test` on a fresh store of each embedded engine.
pub fn each_engine(mut test: impl FnMut(&Embedded)) {
    for (label, engine, options) in EMBEDDED {
        let embedded = Embedded::open(label, engine, options);
        test(&embedded);
    }
}

// -- a Store that shows each call ------------------------------------------------------------
#[allow(unused_imports)] // each test file takes what it needs
pub use enginebench_runner::calls::watched::{Call, Hook, Watched};

// -- running a phase's workers -----------------------------------------------------------------
/// What one op's calls added up to over every worker of a phase.
#[derive(Debug, Default, Clone)]
pub struct OpTotals {
    pub count: u64,
    pub items: u64,
    pub errors: u64,
    pub slow: u64,
    /// The longest call (µs), and the longest from its scheduled start (open loop, replays).
    pub max_us: u64,
    pub intended_max_us: Option<u64>,
}

pub struct Ran {
    pub ops: BTreeMap<&'static str, OpTotals>,
    /// Each worker's result, in worker order.
    pub results: Vec<Result<()>>,
    pub seconds: f64,
}

impl Ran {
    pub fn op(&self, name: &str) -> OpTotals {
        self.ops.get(name).cloned().unwrap_or_default()
    }

    /// Every worker returned Ok.
    pub fn assert_ok(&self) {
        for (i, r) in self.results.iter().enumerate() {
            if let Err(e) = r {
                panic!("worker {i} failed: {}: {}", e.type_name(), e.message);
            }
        }
    }
}

/// Runs a phase's workers, each on its own thread with the Store `open(worker)` gives it and a
/// recorder of its own, as phase::run_phase does; until they return, or until `duration` when
/// given (then the phase's stop flag is set). No operation may fail (max_errors 0).
pub fn run_workers(workers: Vec<Worker>, open: &(dyn Fn(usize) -> Box<dyn Store> + Sync), duration: Option<Duration>,
                   slow_us: Option<(&'static str, u64)>) -> Ran {
    let started = Instant::now();
    let clock = Clock::new(started, enginebench_runner::events::now(), 3600.0);
    let recorders: Vec<Recorder> = workers.iter().map(|_| Recorder::new(clock, slow_us)).collect();
    let stop = AtomicBool::new(false);
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = workers.into_iter().zip(&recorders).enumerate().map(|(i, (work, rec))| {
            let stop = &stop;
            scope.spawn(move || {
                rec.start_thread();
                let mut store = open(i);
                let mut env = Env::new(store.as_mut(), rec, stop, 0);
                let result = work(&mut env);
                rec.finish_thread();
                if result.is_err() {
                    stop.store(true, Ordering::SeqCst);
                }
                result
            })
        }).collect();
        if let Some(d) = duration {
            let end = started + d;
            while Instant::now() < end && !handles.iter().all(|h| h.is_finished()) {
                std::thread::sleep(Duration::from_millis(5));
            }
            stop.store(true, Ordering::SeqCst);
        }
        handles.into_iter().map(|h| h.join().expect("a worker panicked")).collect::<Vec<_>>()
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut ops: BTreeMap<&'static str, OpTotals> = BTreeMap::new();
    for rec in &recorders {
        for (_, share) in rec.take(i64::MAX) {
            for (name, stats) in share.ops {
                let t = ops.entry(name).or_default();
                t.count += stats.histogram.len();
                t.items += stats.items;
                t.errors += stats.errors;
                t.slow += stats.slow;
                t.max_us = t.max_us.max(stats.histogram.max());
                if let Some(h) = &stats.intended {
                    t.intended_max_us = Some(t.intended_max_us.unwrap_or(0).max(h.max()));
                }
            }
        }
    }
    Ran { ops, results, seconds }
}

/// `run_workers` on sessions of `store`.
pub fn run_on(store: &Embedded, workers: Vec<Worker>, duration: Option<Duration>) -> Ran {
    let store = store.store.clone();
    run_workers(workers, &move |_| Box::new(store.session().unwrap()) as Box<dyn Store>, duration, None)
}

/// `run_workers` on sessions of `store`, every call shown to `hook` first.
pub fn run_watched(store: &Embedded, workers: Vec<Worker>, duration: Option<Duration>, hook: Hook) -> Ran {
    let store = store.store.clone();
    run_workers(workers, &move |i| Box::new(Watched::new(Box::new(store.session().unwrap()), i, hook.clone())) as Box<dyn Store>,
                duration, None)
}

/// A field of a stored document as i64 (int32, int64 or an integral double).
pub fn int_field(doc: &RawDocumentBuf, name: &str) -> Option<i64> {
    let value = doc.get(name).ok()??;
    enginebench_runner::calls::as_i64(Some(&Bson::try_from(value).ok()?))
}

/// Python's statistics.median.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
}

/// len(zlib.compress(data, level)) / len(data).
pub fn zlib_ratio(data: &[u8], level: u32) -> f64 {
    use std::io::Write;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap().len() as f64 / data.len() as f64
}
