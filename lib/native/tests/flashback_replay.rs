//! Flashback's replay as the runner runs it (lib/native/src/workloads/flashback): the real style
//! keeps the inter-arrival times divided by the speed-up and records lag and latency from the
//! scheduled start; the stress style does not wait; the filter selects types and keeps their
//! original offsets; a Store-level capture replays exactly on every engine; a mongod capture on a
//! Store replays what translates and says why not the rest. Moved from
//! lib/tests/test_flashback_replay.py, which drove the deleted Python replayer.
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::{each_engine, int_field, Embedded, TempDir};
use enginebench_runner::calls::{Range, Store};
use enginebench_runner::workloads::flashback::replay::{self, Plan};
use enginebench_runner::workloads::flashback::stream::{Selection, Stream};
use enginebench_runner::workloads::flashback::Flashback;
use enginebench_runner::workloads::{MeasureStep, Workload};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/flashback");

/// An ops file of one collection, `d.c`: op k at 1000 + offsets[k] s, of type kinds[k]; each runs
/// `get(c, _id = k)`, so the test knows which op a call is.
fn ops_file(dir: &Path, offsets: &[f64], kinds: &[&str]) -> PathBuf {
    let header = json!({"format": "enginebench.flashback", "version": 1, "source": "store",
                        "collections": {"c": {"capped_bytes": null, "indexes": []}}, "dataset": null});
    let mut text = format!("{header}\n");
    for (k, (offset, kind)) in offsets.iter().zip(kinds).enumerate() {
        let op = json!({"ts": 1000.0 + offset, "ns": "d.c", "op": kind, "command": {"find": "c"},
                        "store": {"method": "get", "args": {"index": null, "key": [k]}}});
        text += &format!("{op}\n");
    }
    let path = dir.join("ops.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

struct Replayed {
    /// (op k, when its call started), in the order the calls started.
    starts: Vec<(i64, Instant)>,
    ran: common::Ran,
    /// replay.json, the replay's summary.
    summary: Value,
    began: Instant,
}

/// Replays an ops file with `workers` workers on a WiredTiger store, each call taking at least
/// `call_ms`; `settings` are the workload's (style, speedup, op_filter, count_replay).
fn replay(offsets: &[f64], kinds: &[&str], workers: usize, call_ms: u64, settings: Value) -> Replayed {
    let e = Embedded::wiredtiger();
    let dir = TempDir::new("flashback");
    let mut params = json!({"role": "replayer", "capture_in": ops_file(&dir.0, offsets, kinds),
                            "out_dir": dir.0, "style": "real", "speedup": 1.0, "op_filter": null,
                            "app": {"users": 1, "posts": 1, "post_bytes": 1, "capped_mb": 1.0, "event_bytes": 1,
                                    "rate": 1.0, "duration_s": 1.0, "skew": 1.1, "seed": 1}});
    params.as_object_mut().unwrap().extend(settings.as_object().unwrap().clone());
    let mut fb = Flashback::new(&params).unwrap();
    {
        let mut c = e.ctx();
        fb.setup(&mut c).unwrap();
    }
    assert!(fb.load(1).unwrap().is_empty(), "a capture of someone else's data loads nothing");
    let starts: Arc<Mutex<Vec<(i64, Instant)>>> = Arc::default();
    let seen = starts.clone();
    let hook: common::Hook = Arc::new(move |call: &common::Call| {
        if call.method == "get" {
            let k = enginebench_runner::calls::as_i64(call.key.first()).unwrap();
            seen.lock().unwrap().push((k, Instant::now()));
            std::thread::sleep(Duration::from_millis(call_ms));
        }
    });
    let step = MeasureStep { name: "run".into(), threads: workers, rate_per_s: None };
    let began = Instant::now();
    let ran = common::run_watched(&e, fb.measure(&step).unwrap(), None, hook);
    ran.assert_ok();
    fb.after_measure("run").unwrap();
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(dir.0.join("replay.json")).unwrap()).unwrap();
    let starts = starts.lock().unwrap().clone();
    Replayed { starts, ran, summary, began }
}

#[test]
fn real_style_keeps_inter_arrival_times_divided_by_speedup() {
    let offsets = [0.0, 0.1, 0.15, 0.4, 0.8];
    let r = replay(&offsets, &["query"; 5], 3, 0, json!({"speedup": 2.0}));
    let mut starts = r.starts.clone();
    starts.sort_by_key(|(k, _)| *k);
    assert_eq!(starts.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    let measured: Vec<f64> = starts.iter().map(|(_, t)| t.duration_since(starts[0].1).as_secs_f64()).collect();
    for (want, got) in offsets.iter().zip(&measured) {
        assert!((got - want / 2.0).abs() < 0.03, "{measured:?} for offsets {offsets:?}");
    }
    // Under 30 ms late, the tolerance of the offsets above (a shared machine's scheduling noise).
    let lag = &r.summary["lag_ms"];
    assert_eq!(lag["ops"], 5, "{}", r.summary);
    assert!(lag["max"].as_f64().unwrap() < 30.0, "{}", r.summary);
}

#[test]
fn stress_style_does_not_wait_for_the_schedule() {
    let r = replay(&[0.0, 5.0, 10.0, 20.0], &["query"; 4], 2, 0, json!({"style": "stress"}));
    assert_eq!(r.starts.len(), 4);
    assert!(r.began.elapsed() < Duration::from_secs(1));
    assert_eq!(r.summary["lag_ms"], Value::Null, "no schedule, so no lag to record: {}", r.summary);
    assert_eq!(r.ran.op("query").intended_max_us, None, "nor latency from a scheduled start");
}

#[test]
fn lag_and_scheduled_latency_grow_when_the_target_cannot_keep_up() {
    // One worker, an op due every 10 ms, each taking 30 ms: every op starts later than the last.
    let offsets: Vec<f64> = (0..10).map(|i| i as f64 * 0.01).collect();
    let r = replay(&offsets, &["query"; 10], 1, 30, json!({}));
    let lag_max = r.summary["lag_ms"]["max"].as_f64().unwrap();
    assert!(lag_max > 150.0, "the last op ~180 ms behind: {}", r.summary);
    // Latency from the scheduled start carries the backlog (~180 ms by the last op) on top of the
    // service time, however long a loaded machine makes each 30 ms call.
    let query = r.ran.op("query");
    assert!(query.intended_max_us.unwrap() - query.max_us > 100_000, "{query:?}");
}

#[test]
fn filter_selects_types_and_keeps_their_original_offsets() {
    // count_replay "captured": a selected count runs its captured call (here a get of its own op).
    let r = replay(&[0.0, 0.1, 0.2, 0.3], &["insert", "count", "query", "count"], 2, 0,
                   json!({"op_filter": ["count"], "count_replay": "captured"}));
    let mut ran: Vec<i64> = r.starts.iter().map(|(k, _)| *k).collect();
    ran.sort();
    assert_eq!(ran, [1, 3]);
    let first = r.starts.iter().map(|(_, t)| *t).min().unwrap().duration_since(r.began).as_secs_f64();
    assert!(first > 0.09, "the count is due 100 ms after the stream's first op, not at once: {first}");
    assert_eq!(r.summary["ops_read"], json!({"count": 2}));
    assert_eq!(r.summary["ops_run"], json!({"count": 2}));
    assert_eq!(r.summary["capture_ops_per_type"], json!({"count": 2, "insert": 1, "query": 1}), "the whole stream's");
}

#[test]
fn the_schedule_is_the_captured_offsets_over_the_speedup() {
    // stream.rs alone: op k is due at start + (ts_k - ts_0) / speedup, anchored on the stream's
    // first op whether it is selected or not; stress style has no due times.
    let dir = TempDir::new("schedule");
    let path = ops_file(&dir.0, &[0.0, 0.5, 1.0, 3.0], &["insert", "count", "query", "count"]);
    let path = path.to_str().unwrap();
    let mut stream = Stream::file(path).unwrap();
    let real = Selection { style: "real", speedup: 4.0, op_filter: None };
    let mut offsets = Vec::new();
    while let Some((record, due)) = stream.take(&real, |_| "query").unwrap() {
        offsets.push((record["ts"].as_f64().unwrap(), due.unwrap().duration_since(stream.start.unwrap()).as_secs_f64()));
    }
    assert_eq!(offsets.len(), 4);
    for (ts, due) in offsets {
        assert!((due - (ts - 1000.0) / 4.0).abs() < 1e-6, "{ts}: due at {due}");
    }
    let counts = ["count".to_string()];
    let mut stream = Stream::file(path).unwrap();
    let selected = Selection { style: "real", speedup: 1.0, op_filter: Some(&counts) };
    let (first, due) = stream.take(&selected, |r| if r["op"] == "count" { "count" } else { "other" }).unwrap().unwrap();
    assert_eq!(first["ts"], 1000.5);
    assert!((due.unwrap().duration_since(stream.start.unwrap()).as_secs_f64() - 0.5).abs() < 1e-6);
    let mut stream = Stream::file(path).unwrap();
    let stress = Selection { style: "stress", speedup: 1.0, op_filter: None };
    assert!(stream.take(&stress, |_| "query").unwrap().unwrap().1.is_none());
}

/// Every op of an ops file, in order (its header left out), as the replay reads them.
fn records(path: &str) -> Vec<Value> {
    let mut stream = Stream::file(path).unwrap();
    let all = Selection { style: "stress", speedup: 1.0, op_filter: None };
    std::iter::from_fn(|| stream.take(&all, |_| "query").unwrap().map(|(r, _)| r)).collect()
}

#[test]
fn store_capture_replays_exactly_on_every_engine() {
    let capture = records(&format!("{DATA}/store_ops.jsonl"));
    each_engine(|e| {
        let mut c = e.ctx();
        let results: Vec<u64> = capture.iter().map(|r| {
            let plan = replay::plan(r, false, false).unwrap();
            assert!(matches!(plan, Plan::Call(_)), "a Store capture carries its calls: {r}");
            replay::execute(&mut c, r, &plan).unwrap()
        }).collect();
        // create x3, the two inserts; get, get_many, two scans, a reverse scan, count, update,
        // upsert, findAndModify, delete
        assert_eq!(results, [0, 0, 0, 12, 1, 1, 3, 3, 3, 5, 4, 1, 0, 1, 1], "{}", e.label);
        let posts = c.scan("posts", None, &Range::default()).unwrap();
        let ids: Vec<i64> = posts.iter().map(|d| int_field(d, "_id").unwrap()).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 99], "{}", e.label);
        assert_eq!((int_field(&posts[3], "likes"), int_field(&posts[5], "likes")), (Some(1), Some(2)), "{}", e.label);
        let log = c.scan("log", None, &Range::default()).unwrap();
        assert_eq!(log.len(), 1, "{}", e.label);
        assert_eq!((int_field(&log[0], "_id"), log[0].get_str("msg").ok()), (Some(1), Some("started")));
    });
}

#[test]
fn mongod_capture_on_a_store_replays_what_translates_and_says_why_not_the_rest() {
    let (label, engine, options) = common::EMBEDDED[3];
    assert_eq!(engine, "lmdb");
    let e = Embedded::open(label, engine, options);
    let mut c = e.ctx();
    for name in ["posts", "events", "users", "counters", "jobs"] {
        c.create_collection(name, None).unwrap();
    }
    let (mut ran, mut skipped) = (Vec::new(), BTreeMap::<String, Vec<String>>::new());
    let capture = records(&format!("{DATA}/profiler_ops.jsonl"));
    let ops: Vec<&Value> = capture.iter().filter(|r| !r["ns"].as_str().unwrap().starts_with("legacy.")).collect();
    for record in &ops {
        let op = record["op"].as_str().unwrap().to_string();
        match replay::plan(record, false, false).unwrap() {
            Plan::Skip(why) => skipped.entry(op).or_default().push(why),
            plan => ran.push((op, replay::execute(&mut c, record, &plan).unwrap())),
        }
    }
    let ran: Vec<(&str, u64)> = ran.iter().map(|(op, n)| (op.as_str(), *n)).collect();
    assert_eq!(ran, [("insert", 1), ("insert", 2), ("update", 0), ("remove", 1)], "the update upserted");
    assert_eq!(skipped.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
               ["command", "count", "findandmodify", "getmore", "query", "remove", "update"]);
    assert!(skipped["update"].iter().chain(&skipped["remove"]).any(|why| why.contains("multi-document")), "{skipped:?}");
    assert!(skipped["getmore"][0].contains("replays only against a server"), "{skipped:?}");
    // As Flashback's replayer ran it (count_replay "collection"), a count counts the collection.
    let count = ops.iter().find(|r| r["op"] == "count").unwrap();
    assert!(matches!(replay::plan(count, false, true).unwrap(), Plan::Call(_)));
}
