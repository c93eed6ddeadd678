//! The TokuMX experiments (seed 004) as the runner runs them on a real embedded engine: the
//! document shape, one document per insert call, the client sweep's phases, and the stop on a
//! stale secondary as a finding. Moved from lib/tests/test_tokumx.py, which drove the deleted
//! Python workload and plan executor.
mod common;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bson::Bson;
use serde_json::{json, Value};

use common::{Embedded, Watched};
use enginebench_runner::calls::{Range, Store};
use enginebench_runner::error::Result;
use enginebench_runner::plan::{self, Plan, Reopen, Step};
use enginebench_runner::pyrandom::Random;
use enginebench_runner::layouts::mongod_kv::RecordStore;
use enginebench_runner::executors::Target;
use enginebench_runner::workloads::tokumx::{document, x_value, TokuMX, COLLECTION, FIND, INSERT, LOAD, UPDATE, X_INDEX};
use enginebench_runner::workloads::{MeasureStep, Workload};

fn tokumx(experiment: &str, documents: i64, load_batch: i64) -> TokuMX {
    TokuMX::new(&json!({"experiment": experiment, "documents": documents, "payload_chars": 200, "load_batch": load_batch,
                        "seed": 1})).unwrap()
}

#[test]
fn documents_are_the_posts_shape() {
    // {x: i, y: <200 random characters>}, x a double as the post's shell stored it.
    let mut rng = Random::from_int(1);
    let docs: Vec<_> = (0..50).map(|i| document(&mut rng, i, 200)).collect();
    for (i, d) in docs.iter().enumerate() {
        assert_eq!(d.keys().collect::<Vec<_>>(), ["x", "y"]);
        assert_eq!(d.get("x"), Some(&Bson::Double(i as f64)));
        assert_eq!(d.get_str("y").unwrap().len(), 200);
    }
    assert_eq!(docs.iter().map(|d| d.get_str("y").unwrap()).collect::<HashSet<_>>().len(), 50, "each payload is random");
    assert_eq!(document(&mut Random::from_int(1), 0, 200), docs[0], "and reproducible from the seed");
    assert_eq!(document(&mut rng, 0, 7).get_str("y").unwrap().len(), 7);
}

/// Every insert call's number of documents, per collection.
fn insert_sizes() -> (common::Hook, Arc<Mutex<Vec<usize>>>) {
    let sizes: Arc<Mutex<Vec<usize>>> = Arc::default();
    let seen = sizes.clone();
    (Arc::new(move |call: &common::Call| {
        if call.method == "insert_many" {
            seen.lock().unwrap().push(call.docs.len());
        }
    }), sizes)
}

#[test]
fn insert_is_one_document_per_call() {
    let e = Embedded::wiredtiger();
    let mut bench = tokumx("insert", 300, 1000);
    {
        let mut c = e.ctx();
        bench.setup(&mut c).unwrap();
    }
    let (hook, sizes) = insert_sizes();
    let ran = common::run_watched(&e, bench.load(1).unwrap(), None, hook);
    ran.assert_ok();
    assert_eq!(*sizes.lock().unwrap(), vec![1; 300]);
    assert_eq!((ran.op(INSERT).count, ran.op(INSERT).items), (300, 300));
    assert_eq!(bench.load_accounting()["rate_ops"], json!([INSERT]));
    let mut c = e.ctx();
    let (expected, found) = bench.verify(&mut c).unwrap();
    assert_eq!(expected, found);
    assert_eq!(found, json!({"documents": 300, "index x_1": 300}));
    let last = c.get(COLLECTION, Some(X_INDEX), &[x_value(299)]).unwrap().unwrap();
    assert_eq!(last.get("x").unwrap().and_then(|v| v.as_f64()), Some(299.0));
}

/// Loads the sweep's documents, then runs one measured phase per client count, as the plan's
/// `clients=<n>` steps do; the op totals of the phases together.
fn sweep(e: &Embedded, bench: &mut TokuMX, clients: &[usize], seconds: f64) -> BTreeMap<&'static str, u64> {
    {
        let mut c = e.ctx();
        bench.setup(&mut c).unwrap();
    }
    common::run_on(e, bench.load(1).unwrap(), None).assert_ok();
    let mut c = e.ctx();
    let (expected, found) = bench.verify(&mut c).unwrap();
    assert_eq!(expected, found);
    let mut totals = BTreeMap::new();
    for &n in clients {
        let step = MeasureStep { name: format!("clients={n}"), threads: n, rate_per_s: None };
        let workers = bench.measure(&step).unwrap();
        assert_eq!(workers.len(), n, "{} runs {n} clients", step.name);
        let ran = common::run_on(e, workers, Some(Duration::from_secs_f64(seconds)));
        ran.assert_ok();
        for (op, t) in ran.ops {
            *totals.entry(op).or_default() += t.count;
        }
    }
    totals
}

#[test]
fn client_sweep_runs_one_phase_per_count() {
    let e = Embedded::wiredtiger();
    let mut bench = tokumx("read_update", 400, 100);
    let totals = sweep(&e, &mut bench, &[1, 2, 3], 0.3);
    assert_eq!(totals.get(LOAD), None, "the load is not part of the sweep's totals");
    let (updates, finds) = (totals[UPDATE], totals[FIND]);
    assert!(updates > 0 && finds >= updates, "{totals:?}");
    // $set y to y + x, as the post's readAndUpdate(): updated documents grew.
    let mut c = e.ctx();
    let docs = c.scan(COLLECTION, Some(X_INDEX), &Range::default()).unwrap();
    let grown: Vec<_> = docs.iter().filter(|d| d.get_str("y").unwrap().len() > 200).collect();
    assert!(!grown.is_empty());
    for d in grown {
        let x = d.get("x").unwrap().and_then(|v| v.as_f64()).unwrap() as i64;
        assert!(d.get_str("y").unwrap().ends_with(&x.to_string()), "{d:?}");
    }
    let consistency = bench.check(&mut c).unwrap();
    assert_eq!((consistency["ok"].clone(), consistency["mismatches"].clone()), (json!(true), json!(0)), "{consistency}");
}

#[test]
fn the_sweep_loads_in_batches_of_load_batch() {
    let e = Embedded::wiredtiger();
    let mut bench = tokumx("read_update", 400, 100);
    {
        let mut c = e.ctx();
        bench.setup(&mut c).unwrap();
    }
    let (hook, sizes) = insert_sizes();
    common::run_watched(&e, bench.load(1).unwrap(), None, hook).assert_ok();
    assert_eq!(*sizes.lock().unwrap(), vec![100; 4]);
}

#[test]
fn read_sweep_only_reads() {
    let e = Embedded::wiredtiger();
    let mut bench = tokumx("read", 200, 50);
    let totals = sweep(&e, &mut bench, &[1, 2], 0.2);
    assert_eq!(totals.keys().copied().collect::<BTreeSet<_>>(), BTreeSet::from([FIND]), "{totals:?}");
}

/// A replica set's primary as the runner sees one: its watch finds a stale secondary once
/// `stale_after` documents are in. Each insert takes a millisecond, so the load outlasts the
/// runner's one-second poll of the watch.
struct Replicated {
    store: Arc<RecordStore>,
    inserted: Arc<AtomicU64>,
    counts: Arc<AtomicU64>,
    stale_after: u64,
}

impl Target for Replicated {
    fn session(self: Arc<Self>) -> Result<Box<dyn Store>> {
        let (inserted, counts) = (self.inserted.clone(), self.counts.clone());
        let hook: common::Hook = Arc::new(move |call: &common::Call| match call.method {
            "insert_many" => {
                std::thread::sleep(Duration::from_millis(1));
                inserted.fetch_add(call.docs.len() as u64, Ordering::SeqCst);
            }
            "count" => {
                counts.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        });
        Ok(Box::new(Watched::new(Box::new(RecordStore::session(&self.store)?), 0, hook)))
    }
    fn checkpoint(&self) -> Result<()> {
        self.store.checkpoint()
    }
    fn stats(&self) -> Value {
        json!({})
    }
    fn close(&self) -> Result<()> {
        Ok(())
    }
    fn finding(&self) -> Option<Value> {
        (self.inserted.load(Ordering::SeqCst) >= self.stale_after)
            .then(|| json!({"event": "stale_secondary", "members": ["m2"]}))
    }
}

#[test]
fn a_stale_secondary_stops_the_inserts_as_a_finding() {
    // The insert experiment's plan is its load alone: the load stops at the finding, the run is
    // complete (a finding, not a failure), and what the load left is counted (its verify).
    let e = Embedded::wiredtiger();
    let replicated = Arc::new(Replicated { store: e.store.clone(), inserted: Arc::default(), counts: Arc::default(),
                                           stale_after: 120 });
    let mut target: Arc<dyn Target> = replicated.clone();
    let mut bench = tokumx("insert", 5000, 1000);
    let reopen = |_: &Arc<dyn Target>, _: &Reopen| -> Result<(Value, Arc<dyn Target>)> { unreachable!() };
    let plan = Plan { steps: vec![Step::Load { threads: 1, interval_s: 0.5 }], max_errors: 0, reopen: &reopen };
    let (status, error) = plan::execute(&plan, &mut bench, &mut target).unwrap();
    assert_eq!((status.as_str(), error.map(|e| e.message)), ("complete", None), "a finding, not a failure");
    let inserted = replicated.inserted.load(Ordering::SeqCst);
    assert!((120..5000).contains(&inserted), "{inserted} documents inserted");
    assert!(replicated.counts.load(Ordering::SeqCst) >= 2, "what the load left was counted");
    drop(target);
    let mut c = e.ctx();
    assert_eq!(c.count(COLLECTION, None, &Range::default()).unwrap() as u64, inserted);
    assert_eq!(c.count(COLLECTION, Some(X_INDEX), &Range::default()).unwrap() as u64, inserted);
}
