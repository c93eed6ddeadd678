//! sysbench-mongodb's OLTP workload, ported from lib/enginebench/workloads/sysbench.py (spec:
//! iibench_sysbench.md part B; the same seeds give the same documents and transactions).
//!
//! Collections sbtest1..N of {_id, k, c, pad} with an index on k, loaded in batches, one
//! collection per loader at a time. A transaction picks one collection and runs, in order: 10
//! point selects, a simple range, a sum range, an order range, a distinct range (range size
//! 100), an index update ($inc k), a non-index update ($set c) and a delete + re-insert of one
//! id. Two workers can pick the same id for the delete + insert: the original lost the worker
//! to the duplicate key; here the pair is retried and each retry is counted
//! (DUPLICATE_KEY_RETRY).
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bson::{doc, Bson, Document};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{params, MeasureStep, Workload};
use crate::error::{Kind, Result};
use crate::phase::{Env, Worker};
use crate::pyrandom::Random;
use crate::calls::{int, Assign, Update};
use crate::calls::{IndexSpec, Range, Store};

pub const TRANSACTION: &str = "TRANSACTION";
pub const RETRY: &str = "DUPLICATE_KEY_RETRY";
pub const LOAD: &str = "LOAD_BULK";

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
// Thread counts and timing are the phase plan's (`phases:` in the params file), not these.
pub struct Config {
    pub collections: i64,
    pub docs_per_collection: i64,
    pub docs_per_insert: i64,
    pub range_size: i64,
    pub point_selects: usize,
    pub simple_ranges: usize,
    pub sum_ranges: usize,
    pub order_ranges: usize,
    pub distinct_ranges: usize,
    pub index_updates: usize,
    pub non_index_updates: usize,
    pub inserts: usize,
    pub max_tps: Option<i64>,
    pub seed: i64,
}

impl Config {
    /// Whole batches only: the original drops a remainder (B.2).
    pub fn loaded_per_collection(&self) -> i64 {
        (self.docs_per_collection / self.docs_per_insert) * self.docs_per_insert
    }
}

/// sysbench's CHAR pattern: groups of 11 random digits joined by '-' (c: 10 groups, pad: 5).
pub fn digits(rng: &mut Random, groups: usize) -> String {
    (0..groups).map(|_| format!("{:011}", rng.randrange(0, 100_000_000_000))).collect::<Vec<_>>().join("-")
}

/// One transaction's arguments, drawn before it runs.
#[derive(Debug)]
pub struct Draw {
    pub points: Vec<i64>,
    pub ranges: Vec<i64>,
    pub inc: Vec<i64>,
    pub set: Vec<(i64, String)>,
    pub reinsert: Vec<(i64, i64, String, String)>,
}

pub fn draw(cfg: &Config, rng: &mut Random) -> Draw {
    let n = cfg.docs_per_collection;
    Draw {
        points: (0..cfg.point_selects).map(|_| rng.randint(1, n)).collect(),
        ranges: (0..cfg.simple_ranges + cfg.sum_ranges + cfg.order_ranges + cfg.distinct_ranges).map(|_| rng.randint(1, n)).collect(),
        inc: (0..cfg.index_updates).map(|_| rng.randint(1, n)).collect(),
        set: (0..cfg.non_index_updates).map(|_| (rng.randint(1, n), digits(rng, 10))).collect(),
        reinsert: (0..cfg.inserts).map(|_| {
            let (i, k) = (rng.randint(1, n), rng.randint(1, n));
            (i, k, digits(rng, 10), digits(rng, 5))
        }).collect(),
    }
}

fn field_string(doc: &bson::RawDocumentBuf, name: &str) -> String {
    doc.get_str(name).map(|s| s.to_string()).unwrap_or_default()
}

fn field_i64(doc: &bson::RawDocumentBuf, name: &str) -> i64 {
    doc.get(name).ok().flatten().and_then(|v| Bson::try_from(v).ok())
        .and_then(|b| crate::calls::as_i64(Some(&b))).unwrap_or(0)
}

/// One sysbench transaction; returns the number of duplicate-key retries.
fn transaction(ctx: &mut dyn Store, cfg: &Config, name: &str, args: &Draw) -> Result<u64> {
    let r = cfg.range_size;
    for i in &args.points {
        ctx.get(name, None, &[int(*i)])?;
    }
    let kinds = std::iter::repeat("simple").take(cfg.simple_ranges)
        .chain(std::iter::repeat("sum").take(cfg.sum_ranges))
        .chain(std::iter::repeat("order").take(cfg.order_ranges))
        .chain(std::iter::repeat("distinct").take(cfg.distinct_ranges));
    for (kind, start) in kinds.zip(&args.ranges) {
        let field = if kind == "sum" { "k" } else { "c" };
        let rows = ctx.scan(name, None, &Range { low: Some(vec![int(*start)]), high: Some(vec![int(start + r - 1)]),
                                                 fields: Some(vec![field.into()]), ..Default::default() })?;
        match kind {
            "sum" => {
                std::hint::black_box(rows.iter().map(|d| field_i64(d, "k")).sum::<i64>());
            }
            "order" => {
                let mut values: Vec<String> = rows.iter().map(|d| field_string(d, "c")).collect();
                values.sort();
                std::hint::black_box(values);
            }
            "distinct" => {
                std::hint::black_box(rows.iter().map(|d| field_string(d, "c")).collect::<BTreeSet<_>>());
            }
            _ => {
                std::hint::black_box(rows);
            }
        }
    }
    for i in &args.inc {
        ctx.update(name, None, &[int(*i)], &Update { inc: Some(Assign::of([("k", Bson::Int32(1))])), ..Default::default() })?;
    }
    for (i, c) in &args.set {
        ctx.update(name, None, &[int(*i)], &Update { set: Some(Assign::of([("c", Bson::String(c.clone()))])), ..Default::default() })?;
    }
    let mut retries = 0;
    for (i, k, c, pad) in &args.reinsert {
        loop {
            ctx.delete(name, None, &[int(*i)], &Vec::new())?;
            let doc = doc! {"_id": int(*i), "k": int(*k), "c": c.clone(), "pad": pad.clone()};
            match ctx.insert_many(name, &[doc]) {
                Ok(_) => break,
                Err(e) if e.kind == Kind::DuplicateKey => retries += 1, // re-inserted by another worker in between
                Err(e) => return Err(e),
            }
        }
    }
    Ok(retries)
}

pub struct Sysbench {
    cfg: Arc<Config>,
    names: Arc<Vec<String>>,
}

impl Sysbench {
    pub fn new(p: &Value) -> Result<Self> {
        let cfg: Config = params("sysbench", p)?;
        let names = (1..=cfg.collections).map(|i| format!("sbtest{i}")).collect();
        Ok(Sysbench { cfg: Arc::new(cfg), names: Arc::new(names) })
    }
}

impl Sysbench {
    /// The documents the loader writes into collection `i` (0-based), in order.
    pub fn load_documents(&self, i: usize) -> Vec<Document> {
        let mut rng = Random::from_int(i as u128 + 1);
        (1..=self.cfg.loaded_per_collection()).map(|id| {
            let k = rng.randint(1, self.cfg.docs_per_collection);
            let c = digits(&mut rng, 10);
            doc! {"_id": int(id), "k": int(k), "c": c, "pad": digits(&mut rng, 5)}
        }).collect()
    }

    /// Writer `index`'s first `n` transactions: (collection, arguments).
    pub fn requests(&self, index: i64, n: usize) -> Vec<(String, Draw)> {
        let mut rng = Random::from_int((self.cfg.seed + index) as u128);
        (0..n).map(|_| {
            let name = rng.choice(&self.names).clone();
            (name, draw(&self.cfg, &mut rng))
        }).collect()
    }
}

fn loader(cfg: Arc<Config>, names: Arc<Vec<String>>, pending: Arc<Mutex<VecDeque<usize>>>) -> Worker {
    Box::new(move |env: &mut Env| {
        while !env.stopped() {
            let Some(i) = pending.lock().unwrap().pop_front() else { return Ok(()) };
            let mut rng = Random::from_int(i as u128 + 1); // each collection's loader is seeded with its number
            let (n, batch) = (cfg.docs_per_collection, cfg.docs_per_insert);
            let mut start = 1;
            while start <= cfg.loaded_per_collection() {
                if env.stopped() {
                    return Ok(());
                }
                let docs: Vec<Document> = (start..start + batch)
                    .map(|id| {
                        let k = rng.randint(1, n);
                        let c = digits(&mut rng, 10);
                        doc! {"_id": int(id), "k": int(k), "c": c, "pad": digits(&mut rng, 5)}
                    })
                    .collect();
                env.op(LOAD, None, |ctx| ctx.insert_many(&names[i], &docs).map(|n| n as u64))?;
                start += batch;
            }
        }
        Ok(())
    })
}

fn writer(cfg: Arc<Config>, names: Arc<Vec<String>>, index: i64, writers: i64) -> Worker {
    Box::new(move |env: &mut Env| {
        let mut rng = Random::from_int((cfg.seed + index) as u128);
        let cap = cfg.max_tps.map(|m| m / writers + 1);
        let (mut window_start, mut in_window) = (Instant::now(), 0i64);
        while !env.stopped() {
            let name = rng.choice(&names).clone();
            let args = draw(&cfg, &mut rng);
            let retries = env.op(TRANSACTION, None, |ctx| transaction(ctx, &cfg, &name, &args))?;
            for _ in 0..retries.unwrap_or(0) {
                env.count(RETRY, 0); // counted, not timed: the retry's time is in its transaction
            }
            if let Some(cap) = cap {
                in_window += 1;
                if in_window >= cap {
                    std::thread::sleep(Duration::from_secs(1).saturating_sub(window_start.elapsed()));
                    (window_start, in_window) = (Instant::now(), 0);
                }
            }
        }
        Ok(())
    })
}

/// The runner's entry to this family (workloads/mod.rs).
pub fn build(params: &Value) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Sysbench::new(params)?))
}

impl Workload for Sysbench {
    fn setup(&mut self, ctx: &mut dyn Store) -> Result<()> {
        for name in self.names.iter() {
            ctx.create_collection(name, None)?;
            ctx.create_index(name, IndexSpec::new("k_1", &[("k", 1)], false))?; // built before the load, as the original does
        }
        Ok(())
    }

    fn load(&mut self, threads: usize) -> Result<Vec<Worker>> {
        let pending = Arc::new(Mutex::new((0..self.names.len()).collect::<VecDeque<_>>()));
        Ok((0..threads.min(self.names.len())).map(|_| loader(self.cfg.clone(), self.names.clone(), pending.clone())).collect())
    }

    fn load_accounting(&self) -> Value {
        json!({"rate": "items", "rate_ops": [LOAD], "per_op": LOAD})
    }

    fn expected_after_load(&self, _load_threads: usize) -> Value {
        Value::Object(self.names.iter().map(|name| (name.clone(), json!(self.cfg.loaded_per_collection()))).collect())
    }

    fn verify(&mut self, ctx: &mut dyn Store) -> Result<(Value, Value)> {
        let mut found = serde_json::Map::new();
        for name in self.names.iter() {
            found.insert(name.clone(), json!(ctx.count(name, None, &Range::default())?));
        }
        Ok((self.expected_after_load(0), Value::Object(found)))
    }

    fn measure(&mut self, step: &MeasureStep) -> Result<Vec<Worker>> {
        Ok((0..step.threads as i64).map(|i| writer(self.cfg.clone(), self.names.clone(), i, step.threads as i64)).collect())
    }

    fn measure_accounting(&self) -> Value {
        json!({"rate": "count", "rate_ops": [TRANSACTION], "per_op": TRANSACTION})
    }

    /// Every collection still holds its documents (each transaction deletes one and inserts it back).
    fn check(&mut self, ctx: &mut dyn Store) -> Result<Value> {
        let (expected, found) = self.verify(ctx)?;
        let mismatches = self.names.iter().filter(|n| expected[n.as_str()] != found[n.as_str()]).count();
        Ok(json!({"expected": expected, "found": found, "mismatches": mismatches}))
    }
}
