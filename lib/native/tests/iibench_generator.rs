//! iibench's generator and load as the runner runs them: documents as the Java client makes them,
//! its 4 MiB letter pool, writers splitting the rows into whole batches, the query thread's start
//! and stop, slow inserts counted per op, and where Nslow comes from. Moved from
//! lib/tests/test_iibench.py and test_client_processes.py, which drove the deleted Python
//! generator.
mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::Embedded;
use enginebench_runner::calls::Store;
use enginebench_runner::error::Result;
use enginebench_runner::pyrandom::Random;
use enginebench_runner::recorder::{Clock, Outcome, Recorder};
use enginebench_runner::executors::Target;
use enginebench_runner::workloads::iibench::{self, IIBench, COLLECTION, QUERIES};
use enginebench_runner::workloads::Workload;

/// The post's command line (params/iibench_500m.yaml), smaller.
fn params(overrides: Value) -> Value {
    let mut p = json!({"max_rows": 100, "docs_per_insert": 10, "num_secondary_indexes": 3, "num_char_fields": 1,
                       "length_char_fields": 1000, "percent_compressible": 50, "max_inserts_per_second": null,
                       "query_threads": 1, "query_limit": 4, "query_begin_docs": 100_000, "ms_between_queries": 0,
                       "slow_threshold_s": 2.0});
    p.as_object_mut().unwrap().extend(overrides.as_object().unwrap().clone());
    p
}

#[test]
fn documents_follow_the_java_client() {
    let bench = IIBench::new(&params(json!({}))).unwrap();
    let doc = bench.shared().document(&mut Random::from_int(0));
    let keys: Vec<&str> = doc.keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["dateandtime", "cashregisterid", "customerid", "productid", "price", "cf1"]);
    let int = |k: &str| doc.get_i32(k).unwrap() as f64;
    let (register, customer, product) = (int("cashregisterid"), int("customerid"), int("productid"));
    assert!((0.0..1000.0).contains(&register) && (0.0..100_000.0).contains(&customer) && (0.0..10_000.0).contains(&product));
    let price = doc.get_f64("price").unwrap();
    assert!(customer / 100.0 <= price && price < (customer + 500.0) / 100.0, "price {price} for customer {customer}");
    let cf1 = doc.get_str("cf1").unwrap();
    assert_eq!(cf1.len(), 1000);
    assert!(cf1.ends_with(&"a".repeat(500)) && cf1[..500].bytes().all(|b| b.is_ascii_lowercase()));
}

#[test]
fn char_field_letters_are_a_4mib_random_pool() {
    // mdcallag/iibench-mongodb@02b4190 src/jmongoiibench.java: 4*1024*1024 random letters, not a
    // short repeated pattern (which a compressor would find): no 64 KiB period, and letters drawn
    // uniformly from 26 compress no better than log2(26)/8 of their bytes.
    let letters = iibench::random_letters();
    assert_eq!(letters.len(), 4 << 20);
    let mut seen = [false; 256];
    letters.iter().for_each(|b| seen[*b as usize] = true);
    assert!((0..256).all(|b| seen[b] == (b'a'..=b'z').contains(&(b as u8))), "exactly the 26 lowercase letters");
    assert_ne!(letters[..1 << 16], letters[1 << 16..2 << 16]);
    let ratio = common::zlib_ratio(&letters, 9);
    assert!(ratio > 0.58, "{ratio}");
}

#[test]
fn writers_split_the_rows_in_whole_batches() {
    let bench = IIBench::new(&params(json!({"max_rows": 1_000_003, "docs_per_insert": 10}))).unwrap();
    let cfg = &bench.shared().cfg;
    assert_eq!((cfg.per_writer(10), cfg.total_docs(10)), (100_000, 1_000_000));
    assert_eq!(bench.expected_after_load(10), json!({"documents": 1_000_000}));
}

#[test]
fn slow_calls_are_counted_per_op() {
    let rec = Recorder::new(Clock::new(Instant::now(), 0.0, 60.0), Some(("INSERT", 20_000)));
    rec.start_thread();
    let sleep = |ms| move || {
        std::thread::sleep(Duration::from_millis(ms));
        Outcome { items: 1, failed: false }
    };
    rec.call("INSERT", None, sleep(30));
    rec.call("INSERT", None, sleep(1));
    rec.call("QUERY_PDC", None, sleep(30));
    let mut slow = BTreeMap::new();
    for (_, share) in rec.take(10) {
        for (op, stats) in share.ops {
            *slow.entry(op).or_insert(0) += stats.slow;
        }
    }
    assert_eq!(slow, BTreeMap::from([("INSERT", 1), ("QUERY_PDC", 0)]));
}

#[test]
fn the_query_thread_starts_after_query_begin_docs_and_stops_with_the_writers() {
    // Throttled (the Java client's one-second windows) so the writers outlast the query thread's
    // 0.1 s polls: the load takes about two seconds however fast the store answers. Each writer
    // inserts its whole share in batches; the query thread (the fourth worker) only scans, never
    // before 500 documents are in, the three queries round robin.
    let e = Embedded::wiredtiger();
    let mut bench = IIBench::new(&params(json!({"max_rows": 3000, "query_begin_docs": 500, "length_char_fields": 50,
                                                "max_inserts_per_second": 1500}))).unwrap();
    {
        let mut c = e.ctx();
        bench.setup(&mut c).unwrap();
    }
    let inserted = Arc::new(AtomicI64::new(0));
    let calls: Arc<Mutex<BTreeMap<(usize, &'static str), Vec<i64>>>> = Arc::default();
    let (seen, counted) = (calls.clone(), inserted.clone());
    let hook: common::Hook = Arc::new(move |call: &common::Call| {
        let before = counted.fetch_add(call.docs.len() as i64, Ordering::SeqCst);
        seen.lock().unwrap().entry((call.worker, call.method)).or_default().push(before);
    });
    let ran = common::run_watched(&e, bench.load(3).unwrap(), None, hook);
    ran.assert_ok();
    let calls = calls.lock().unwrap();
    for writer in 0..3 {
        assert_eq!(calls[&(writer, "insert_many")].len(), 100, "writer {writer}: 1000 documents in batches of 10");
    }
    let scans = &calls[&(3, "scan")];
    assert!(!scans.is_empty() && scans.iter().all(|before| *before >= 500), "{scans:?}");
    assert!(calls.keys().filter(|(w, _)| *w == 3).all(|(_, m)| *m == "scan"));
    assert_eq!(ran.op("INSERT").items, 3000);
    let queries: Vec<u64> = QUERIES.iter().map(|q| ran.op(q).count).collect();
    assert!(queries.iter().max().unwrap() - queries.iter().min().unwrap() <= 1, "round robin: {queries:?}");
    let mut c = e.ctx();
    let (expected, found) = bench.verify(&mut c).unwrap();
    assert_eq!(expected, found);
    assert_eq!(found, json!({"documents": 3000, "index marketsegment": 3000, "index registersegment": 3000,
                             "index pdc": 3000}));
}

/// A server target as iibench sees one: its companion counts slow inserts from the profiler, or
/// says why it cannot.
struct Server {
    start: Value,
    count: Value,
    asked: Mutex<Vec<(String, Value)>>,
}

impl Target for Server {
    fn session(self: Arc<Self>) -> Result<Box<dyn Store>> {
        unreachable!("iibench asks a target's companion, not a session, for Nslow")
    }
    fn checkpoint(&self) -> Result<()> {
        Ok(())
    }
    fn stats(&self) -> Value {
        json!({})
    }
    fn close(&self) -> Result<()> {
        Ok(())
    }
    fn companion(&self, op: &str, args: Value) -> Option<Result<Value>> {
        self.asked.lock().unwrap().push((op.to_string(), args));
        Some(Ok(if op == "slow_ops_start" { self.start.clone() } else { self.count.clone() }))
    }
}

fn nslow(target: &dyn Target) -> Option<Value> {
    let mut bench = IIBench::new(&params(json!({}))).unwrap();
    bench.before_load(target).unwrap();
    bench.after_load(target).unwrap()
}

#[test]
fn nslow_comes_from_the_server_or_says_it_is_per_client_call() {
    // The embedded engine has no server: no event, and the report reads Nslow from the insert
    // calls the client timed (each interval's `slow`, counted against slow_us).
    let e = Embedded::wiredtiger();
    assert_eq!(nslow(e.store.as_ref()), None);
    let bench = IIBench::new(&params(json!({}))).unwrap();
    assert_eq!(bench.slow_us(), Some(("INSERT", 2_000_000)));
    // A server's profiler: its count, threshold and collection as the post counted them.
    let server = Server { start: json!({}), count: json!({"count": 3, "profile_full": false}), asked: Mutex::default() };
    assert_eq!(nslow(&server), Some(json!({"event": "slow_ops", "op": "INSERT", "threshold_ms": 2000, "source": "server",
                                           "count": 3, "profile_full": false})));
    assert_eq!(*server.asked.lock().unwrap(), [
        ("slow_ops_start".to_string(), json!({"threshold_ms": 2000})),
        ("slow_ops_count".to_string(), json!({"collection": COLLECTION, "op": "insert", "threshold_ms": 2000}))]);
    // A server whose profiler cannot count: the client's count stands, and the event says why.
    let why = "this server has no profiler";
    let server = Server { start: json!({"unavailable": why}), count: json!({"count": 9}), asked: Mutex::default() };
    assert_eq!(nslow(&server), Some(json!({"event": "slow_ops", "op": "INSERT", "threshold_ms": 2000, "source": "client",
                                           "why": why})));
    let server = Server { start: json!({}), count: json!({"unavailable": why}), asked: Mutex::default() };
    assert_eq!(nslow(&server).unwrap()["source"], "client");
}
