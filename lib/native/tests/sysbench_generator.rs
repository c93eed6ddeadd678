//! sysbench-mongodb's OLTP workload as the runner runs it: documents as sysbench makes them, the
//! load taking each collection once, and the delete + re-insert race retried rather than fatal.
//! Moved from lib/tests/test_sysbench.py and test_client_processes.py, which drove the deleted
//! Python generator.
mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bson::doc;
use serde_json::{json, Value};

use common::{each_engine, Embedded};
use enginebench_runner::calls::{int, Range, Store};
use enginebench_runner::pyrandom::Random;
use enginebench_runner::workloads::sysbench::{digits, Sysbench, RETRY, TRANSACTION};
use enginebench_runner::workloads::{MeasureStep, Workload};

/// sysbench-mongodb's config.bash (params/sysbench_cgroups.yaml), smaller.
fn params(overrides: Value) -> Value {
    let mut p = json!({"collections": 2, "docs_per_collection": 1000, "docs_per_insert": 1000, "range_size": 100,
                       "point_selects": 10, "simple_ranges": 1, "sum_ranges": 1, "order_ranges": 1, "distinct_ranges": 1,
                       "index_updates": 1, "non_index_updates": 1, "inserts": 1, "max_tps": null, "seed": 1});
    p.as_object_mut().unwrap().extend(overrides.as_object().unwrap().clone());
    p
}

#[test]
fn documents_match_sysbench() {
    // sysbench's CHAR pattern: c is 10 groups of 11 digits, pad 5, joined by '-'.
    let mut rng = Random::from_int(1);
    let (c, pad) = (digits(&mut rng, 10), digits(&mut rng, 5));
    assert_eq!((c.len(), pad.len()), (119, 59));
    assert_eq!(c.matches('-').count(), 9);
    assert!(c.replace('-', "").bytes().all(|b| b.is_ascii_digit()));
}

#[test]
fn the_load_takes_each_collection_once() {
    // Three loaders share five collections: each is written once, in its 4 batches of 50, with
    // the documents its seed gives.
    let e = Embedded::wiredtiger();
    let mut bench = Sysbench::new(&params(json!({"collections": 5, "docs_per_collection": 200, "docs_per_insert": 50}))).unwrap();
    {
        let mut c = e.ctx();
        bench.setup(&mut c).unwrap();
    }
    let batches: Arc<Mutex<BTreeMap<String, Vec<usize>>>> = Arc::default();
    let seen = batches.clone();
    let hook: common::Hook = Arc::new(move |call: &common::Call| {
        if call.method == "insert_many" {
            seen.lock().unwrap().entry(call.collection.to_string()).or_default().push(call.docs.len());
        }
    });
    common::run_watched(&e, bench.load(3).unwrap(), None, hook).assert_ok();
    let batches = batches.lock().unwrap();
    let want: BTreeMap<String, Vec<usize>> = (1..=5).map(|i| (format!("sbtest{i}"), vec![50; 4])).collect();
    assert_eq!(*batches, want);
    let mut c = e.ctx();
    for i in 0..5 {
        let stored: Vec<bson::Document> = c.scan(&format!("sbtest{}", i + 1), None, &Range::default()).unwrap()
            .iter().map(|d| bson::Document::try_from(d.as_ref()).unwrap()).collect();
        assert_eq!(stored, bench.load_documents(i), "sbtest{}", i + 1);
    }
    let (expected, found) = bench.verify(&mut c).unwrap();
    assert_eq!(expected, found);
}

#[test]
fn delete_reinsert_race_is_retried_not_fatal() {
    // Four writers whose every transaction is a delete and re-insert of one of three ids:
    // collisions are certain. The original lost the worker to the duplicate key; here each is
    // retried (and counted), no transaction fails, and the collection keeps its documents.
    each_engine(|e| {
        let mut bench = Sysbench::new(&params(json!({
            "collections": 1, "docs_per_collection": 3, "docs_per_insert": 3, "point_selects": 0, "simple_ranges": 0,
            "sum_ranges": 0, "order_ranges": 0, "distinct_ranges": 0, "index_updates": 0, "non_index_updates": 0,
            "inserts": 1}))).unwrap();
        {
            let mut c = e.ctx();
            bench.setup(&mut c).unwrap();
            let docs: Vec<_> = (1..=3).map(|i| doc! {"_id": int(i), "k": int(i), "c": "c", "pad": "p"}).collect();
            c.insert_many("sbtest1", &docs).unwrap();
        }
        let step = MeasureStep { name: "run".into(), threads: 4, rate_per_s: None };
        let ran = common::run_on(e, bench.measure(&step).unwrap(), Some(Duration::from_millis(1500)));
        ran.assert_ok();
        let (transactions, retries) = (ran.op(TRANSACTION), ran.op(RETRY));
        assert!(transactions.count > 100 && transactions.errors == 0, "{}: {transactions:?}", e.label);
        assert!(retries.count > 0, "{}: no duplicate key met in {} transactions", e.label, transactions.count);
        let mut c = e.ctx();
        assert_eq!(c.count("sbtest1", None, &Range::default()).unwrap(), 3, "{}", e.label);
        assert_eq!(bench.check(&mut c).unwrap()["mismatches"], 0, "{}", e.label);
    });
}
