//! `trace`: a workload's generated operations for given seeds, without a store, with a fixed
//! clock. The Python definitions of the workloads produce the same streams; lib/tests compares
//! the two (same seed, same operations).
use serde_json::{json, Value};

use bson::Bson;

use std::path::Path;

use crate::pyrandom::Random;
use crate::calls::{Range, Store};
use crate::workloads::linkbench::ops;
use crate::workloads::{self, iibench, linkbench, sysbench, tokumx};

fn doc_json(doc: bson::Document) -> Value {
    Bson::Document(doc).into_relaxed_extjson()
}

#[allow(clippy::too_many_arguments)]
pub fn main(workload: &str, what: &str, worker: usize, workers: usize, chunk: i64, n: usize, clock_ms: i64,
            dir: Option<&Path>) -> i32 {
    workloads::fix_clock(clock_ms);
    let params: Value = match serde_json::from_str(workload) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("--workload: not JSON: {e}");
            return 2;
        }
    };
    let name = params["name"].as_str().unwrap_or_default().to_string();
    let mut params = params.clone();
    params.as_object_mut().map(|o| o.remove("name"));
    let result = match name.as_str() {
        "linkbench" if what == "apply" => match dir {
            Some(dir) => apply_linkbench(&params, dir, worker, workers, n),
            None => Err("--what apply needs --dir".to_string()),
        },
        "linkbench" => trace_linkbench(&params, what, worker, workers, chunk, n),
        "iibench" => trace_iibench(&params, what, worker, n),
        "sysbench" => trace_sysbench(&params, what, worker, chunk, n),
        "tokumx" => trace_tokumx(&params, what, worker, workers, n),
        other => Err(format!("no trace for workload {other:?}")),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("trace: {e}");
            2
        }
    }
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

fn trace_linkbench(params: &Value, what: &str, worker: usize, workers: usize, chunk: i64, n: usize) -> Result<(), String> {
    let mut lb = linkbench::LinkBench::new(params).map_err(|e| e.message)?;
    match what {
        "requests" => {
            let requester = lb.requester(worker, workers);
            let mut r = requester.lock().unwrap();
            for _ in 0..n {
                println!("{}", r.next().describe());
            }
        }
        "load" => {
            for item in linkbench::chunk_items(lb.shared(), chunk, workloads::wall_ms()).into_iter().take(n) {
                let line = match item {
                    linkbench::LoadItem::Link(l) => json!({"kind": "link", "link_type": l.link_type, "id1": l.id1, "id2": l.id2,
                                                           "time": l.time, "data": hex(&l.data)}),
                    linkbench::LoadItem::Count(id1, lt, c, t) => json!({"kind": "count", "id": id1, "link_type": lt, "count": c, "time": t}),
                };
                println!("{line}");
            }
        }
        "nodes" => {
            let mut left = n;
            linkbench::node_documents(lb.shared(), workloads::wall_s(), |node| {
                let data = node.get_binary_generic("data").map(|d| hex(d)).unwrap_or_default();
                let id = node.get_i32("_id").map(|v| v as i64).or_else(|_| node.get_i64("_id")).unwrap_or(0);
                println!("{}", json!({"id": id, "data": data}));
                left -= 1;
                Ok(left > 0)
            }).map_err(|e| e.message)?;
        }
        "expected" => {
            let (nodes, links, rows) = lb.expected_counts();
            println!("{}", json!({"node": nodes, "link": links, "count": rows}));
        }
        other => return Err(format!("--what {other:?}; allowed: requests, load, nodes, expected, apply")),
    }
    Ok(())
}

/// linkbench `apply`: worker `worker`'s first `n` requests run on an empty WiredTiger store in
/// `dir`, then every link, count and node document in key order (store-made `_id`s left out), so
/// lib/tests can compare what the two runners' operations write under each `counts` semantics.
fn apply_linkbench(params: &Value, dir: &Path, worker: usize, workers: usize, n: usize) -> Result<(), String> {
    let message = |e: crate::error::Error| e.message;
    let mut lb = linkbench::LinkBench::new(params).map_err(message)?;
    let options = json!({"table_type": "btree", "cache_size_mb": 32});
    let store = crate::run::open_store("wiredtiger", dir, options.as_object().unwrap()).map_err(message)?;
    let mut ctx = store.session().map_err(message)?;
    linkbench::ops::create_schema(&mut ctx).map_err(message)?;
    {
        let requester = lb.requester(worker, workers);
        let mut r = requester.lock().unwrap();
        for _ in 0..n {
            let request = r.next();
            r.execute(&mut ctx, &request).map_err(message)?;
        }
    }
    let everything = Range { prefix: vec![], low: None, high: None, reverse: false, skip: 0, limit: None, fields: None };
    for (collection, index) in [(ops::LINK, Some(ops::LINK_PK)), (ops::COUNT, Some(ops::COUNT_PK)), (ops::NODE, None)] {
        for raw in ctx.scan(collection, index, &everything).map_err(message)? {
            let mut doc = crate::store::document::decode(raw.as_bytes()).map_err(message)?;
            if matches!(doc.get("_id"), Some(Bson::ObjectId(_))) {
                doc.remove("_id");
            }
            println!("{}", json!({"collection": collection, "doc": doc_json(doc)}));
        }
    }
    drop(ctx);
    store.close().map_err(message)
}

/// iibench: `docs` of writer `worker`; `queries`: the query thread's draws (worker = its index).
fn trace_iibench(params: &Value, what: &str, worker: usize, n: usize) -> Result<(), String> {
    let ii = iibench::IIBench::new(params).map_err(|e| e.message)?;
    match what {
        "docs" => {
            let mut rng = Random::from_int(worker as u128);
            for _ in 0..n {
                println!("{}", doc_json(ii.shared().document(&mut rng)));
            }
        }
        "queries" => {
            for q in ii.shared().query_draws(worker as i64, n) {
                println!("{q}");
            }
        }
        other => return Err(format!("--what {other:?}; allowed: docs, queries")),
    }
    Ok(())
}

/// sysbench: `load` of collection number `chunk`; `requests` of writer `worker`.
fn trace_sysbench(params: &Value, what: &str, worker: usize, chunk: i64, n: usize) -> Result<(), String> {
    let sb = sysbench::Sysbench::new(params).map_err(|e| e.message)?;
    match what {
        "load" => {
            for doc in sb.load_documents(chunk as usize - 1).into_iter().take(n) {
                println!("{}", doc_json(doc));
            }
        }
        "requests" => {
            for (name, d) in sb.requests(worker as i64, n) {
                println!("{}", json!({"collection": name, "points": d.points, "ranges": d.ranges, "inc": d.inc,
                                      "set": d.set, "reinsert": d.reinsert}));
            }
        }
        other => return Err(format!("--what {other:?}; allowed: load, requests")),
    }
    Ok(())
}

/// tokumx: `load` (the documents, as the loader or the inserter makes them); `requests` of
/// client `worker` of `workers` (the x each findOne draws).
fn trace_tokumx(params: &Value, what: &str, worker: usize, workers: usize, n: usize) -> Result<(), String> {
    let t = tokumx::TokuMX::new(params).map_err(|e| e.message)?;
    match what {
        "load" => {
            for doc in t.documents(n) {
                println!("{}", doc_json(doc));
            }
        }
        "requests" => {
            println!("{}", json!(t.client_draws(workers, worker, n)));
        }
        other => return Err(format!("--what {other:?}; allowed: load, requests")),
    }
    Ok(())
}
