//! The insert benchmark (iibench) as the 2015 post ran it, ported from
//! lib/enginebench/workloads/iibench.py (spec: iibench_sysbench.md part A; the same seeds give
//! the same documents and queries).
//!
//! Writers insert `purchases_index` documents in batches while one query worker, started after
//! `query_begin_docs` inserts, cycles three short "seek into a composite index and scan forward"
//! queries back to back, until the writers are done. Every insert call at or above the slow
//! threshold (2 s in the post) is counted per interval. On the embedded engines that is the
//! client's time per call; the post counted the server's slow-operation log.
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bson::{doc, Bson, Document};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{params, wall_ms, MeasureStep, Workload};
use crate::error::Result;
use crate::phase::{Env, Worker};
use crate::pyrandom::Random;
use crate::layouts::document::int;
use crate::calls::{IndexSpec, Range, Store};
use crate::executors::Target;

pub const COLLECTION: &str = "purchases_index";
pub const INSERT: &str = "INSERT";
/// The round-robin order of the queries (1, 2, 3 in the Java client).
pub const QUERIES: [&str; 3] = ["QUERY_PDC", "QUERY_MARKETSEGMENT", "QUERY_REGISTERSEGMENT"];
/// The random-letter pool the Java client builds at start (randomStringLength).
pub const PAD: usize = 4 << 20;

fn indexes() -> [IndexSpec; 3] {
    // Cumulative: NUM_SECONDARY_INDEXES = n creates the first n (A.2), ascending, before the load.
    [IndexSpec::new("marketsegment", &[("price", 1), ("customerid", 1)], false),
     IndexSpec::new("registersegment", &[("cashregisterid", 1), ("price", 1), ("customerid", 1)], false),
     IndexSpec::new("pdc", &[("price", 1), ("dateandtime", 1), ("customerid", 1)], false)]
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
// Thread counts and timing are the phase plan's (`phases:` in the params file), not these.
pub struct Config {
    pub max_rows: i64,
    pub docs_per_insert: i64,
    pub num_secondary_indexes: usize,
    pub num_char_fields: usize,
    pub length_char_fields: usize,
    pub percent_compressible: usize,
    pub max_inserts_per_second: Option<i64>,
    pub query_threads: usize,
    pub query_limit: usize,
    pub query_begin_docs: i64,
    pub ms_between_queries: u64,
    pub slow_threshold_s: f64,
    #[serde(default = "registers")]
    pub num_cash_registers: i64,
    #[serde(default = "customers")]
    pub num_customers: i64,
    #[serde(default = "products")]
    pub num_products: i64,
    #[serde(default = "max_price")]
    pub max_price: f64,
}

fn registers() -> i64 { 1000 }
fn customers() -> i64 { 100_000 }
fn products() -> i64 { 10_000 }
fn max_price() -> f64 { 500.0 }

impl Config {
    /// Docs each of `writers` inserts: floor(max_rows / writers), in whole batches (A.3).
    pub fn per_writer(&self, writers: i64) -> i64 {
        let per = if writers > 1 { self.max_rows / writers } else { self.max_rows };
        (per / self.docs_per_insert) * self.docs_per_insert
    }
    pub fn total_docs(&self, writers: i64) -> i64 {
        self.per_writer(writers) * writers
    }
}

/// The Java client's 4 MiB pool of random lowercase letters (rand.nextInt(26) + 'a'): uniform
/// letters from random bytes, rejecting the bytes above the largest multiple of 26, drawn in
/// 1 MiB chunks (the Python definition draws them the same way). Source:
/// mdcallag/iibench-mongodb@02b4190 src/jmongoiibench.java, main() (randomStringHolder,
/// 4*1024*1024 chars) and MyWriter.run() (cfN: the random letters from a random start, then 'a's).
pub fn random_letters() -> Vec<u8> {
    let mut rng = Random::from_int(0);
    let mut out = Vec::with_capacity(PAD);
    while out.len() < PAD {
        for b in rng.randbytes(1 << 20) {
            if b < 234 {
                out.push(b'a' + b % 26);
            }
        }
    }
    out.truncate(PAD);
    out
}

pub struct Shared {
    pub cfg: Config,
    letters: Vec<u8>,
    inserted: AtomicI64,
    /// The load's writer threads (the plan's load.threads), and how many are still writing.
    writers: AtomicUsize,
    writers_left: AtomicUsize,
}

impl Shared {
    fn price(&self, rng: &mut Random, customer: i64) -> f64 {
        (rng.random() * self.cfg.max_price + customer as f64) / 100.0
    }

    /// cfN: a random offset's worth of random letters, then the compressible part ('a's).
    fn char_field(&self, rng: &mut Random) -> String {
        let (length, pct) = (self.cfg.length_char_fields, self.cfg.percent_compressible);
        let random_part = (length as f64 * (100 - pct) as f64 / 100.0) as usize;
        let start = rng.randrange(0, (PAD - length) as i64) as usize;
        let compressible = (length as f64 * pct as f64 / 100.0) as usize;
        let mut s = Vec::with_capacity(random_part + compressible);
        s.extend_from_slice(&self.letters[start..start + random_part]);
        s.resize(random_part + compressible, b'a'); // one fill, not a char at a time
        String::from_utf8(s).expect("the letters are ASCII")
    }

    pub fn document(&self, rng: &mut Random) -> Document {
        let customer = rng.randrange(0, self.cfg.num_customers);
        let register = rng.randrange(0, self.cfg.num_cash_registers);
        let product = rng.randrange(0, self.cfg.num_products);
        let price = self.price(rng, customer);
        let mut d = doc! {"dateandtime": int(wall_ms()), "cashregisterid": int(register), "customerid": int(customer),
                          "productid": int(product), "price": price};
        for i in 1..=self.cfg.num_char_fields {
            d.insert(format!("cf{i}"), self.char_field(rng));
        }
        d
    }

    fn writers_done(&self) -> bool {
        self.writers_left.load(Ordering::SeqCst) == 0
    }
}

pub struct IIBench {
    shared: Arc<Shared>,
    /// Why the server does not count slow inserts itself (None: its profiler does).
    server_slow_ops: Option<String>,
}

impl IIBench {
    pub fn new(p: &Value) -> Result<Self> {
        let cfg: Config = params("iibench", p)?;
        Ok(IIBench { server_slow_ops: Some("the load has not started".into()), shared: Arc::new(Shared { cfg, letters: random_letters(), inserted: AtomicI64::new(0),
                                               writers: AtomicUsize::new(0), writers_left: AtomicUsize::new(0) }) })
    }

    pub fn shared(&self) -> &Shared {
        &self.shared
    }
}

fn writer(s: Arc<Shared>, index: i64) -> Worker {
    Box::new(move |env: &mut Env| {
        let result = (|| {
            let mut rng = Random::from_int(index as u128); // each writer is seeded with its thread index (A.1)
            let writers = s.writers.load(Ordering::SeqCst) as i64;
            let cap = s.cfg.max_inserts_per_second.map(|m| m / writers);
            let (mut window_start, mut in_window) = (std::time::Instant::now(), 0i64);
            for _ in 0..s.cfg.per_writer(writers) / s.cfg.docs_per_insert {
                if env.stopped() {
                    return Ok(());
                }
                let batch: Vec<Document> = (0..s.cfg.docs_per_insert).map(|_| s.document(&mut rng)).collect();
                env.op(INSERT, None, |ctx| ctx.insert_many(COLLECTION, &batch).map(|n| n as u64))?;
                s.inserted.fetch_add(batch.len() as i64, Ordering::SeqCst);
                if let Some(cap) = cap.filter(|c| *c > 0) {
                    in_window += batch.len() as i64;
                    if in_window >= cap {
                        // The Java client's coarse one-second window.
                        std::thread::sleep(Duration::from_secs(1).saturating_sub(window_start.elapsed()));
                        (window_start, in_window) = (std::time::Instant::now(), 0);
                    }
                }
            }
            Ok(())
        })();
        s.writers_left.fetch_sub(1, Ordering::SeqCst);
        result
    })
}

fn querier(s: Arc<Shared>, index: i64) -> Worker {
    Box::new(move |env: &mut Env| {
        while s.inserted.load(Ordering::SeqCst) < s.cfg.query_begin_docs && !(env.stopped() || s.writers_done()) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut stream = QueryStream::new(index);
        while !(env.stopped() || s.writers_done()) {
            if s.cfg.ms_between_queries > 0 {
                std::thread::sleep(Duration::from_millis(s.cfg.ms_between_queries));
            }
            let (op, price, customer, register, t) = stream.next(&s);
            env.op(op, None, |ctx| query(ctx, &s.cfg, op, price, customer, register, t))?;
        }
        Ok(())
    })
}

/// One query's arguments: (op, price, customer, register, t).
pub type QueryDraw = (&'static str, f64, i64, i64, i64);

/// The query thread's draws: the three queries round robin, a random customer, its price, a
/// register and a time since the thread started (seeded with its index + that start, A.4).
pub struct QueryStream {
    rng: Random,
    started_ms: i64,
    k: usize,
}

impl QueryStream {
    pub fn new(index: i64) -> Self {
        let started_ms = wall_ms();
        QueryStream { rng: Random::from_int((index + started_ms) as u128), started_ms, k: 0 }
    }

    pub fn next(&mut self, s: &Shared) -> QueryDraw {
        let op = QUERIES[self.k % 3];
        self.k += 1;
        let customer = self.rng.randrange(0, s.cfg.num_customers);
        let price = s.price(&mut self.rng, customer);
        let register = self.rng.randrange(0, s.cfg.num_cash_registers);
        let t = self.rng.randint(self.started_ms, wall_ms());
        (op, price, customer, register, t)
    }
}

impl Shared {
    /// The query thread's first `n` draws, with the clock fixed (trace mode).
    pub fn query_draws(&self, index: i64, n: usize) -> Vec<Value> {
        let mut stream = QueryStream::new(index);
        (0..n).map(|_| {
            let (op, price, customer, register, t) = stream.next(self);
            json!({"op": op, "price": price, "customer": customer, "register": register, "t": t})
        }).collect()
    }
}

fn query(ctx: &mut dyn Store, cfg: &Config, op: &str, price: f64, customer: i64, register: i64, t: i64) -> Result<u64> {
    let (index, low, fields): (&str, Vec<Bson>, &[&str]) = match op {
        "QUERY_PDC" => ("pdc", vec![Bson::Double(price), int(t), int(customer)], &["price", "dateandtime", "customerid"]),
        "QUERY_MARKETSEGMENT" => ("marketsegment", vec![Bson::Double(price), int(customer)], &["price", "customerid"]),
        _ => ("registersegment", vec![int(register), Bson::Double(price), int(customer)], &["cashregisterid", "price", "customerid"]),
    };
    // iibench-mongodb's MyQuery.run(): coll.find({$or: [...]}, keys).limit(queryLimit), no sort
    // and no hint (tmcallaghan/iibench-mongodb@4215862 src/jmongoiibench.java).
    let rows = ctx.scan(COLLECTION, Some(index), &Range {
        low: Some(low),
        limit: Some(cfg.query_limit),
        fields: Some(fields.iter().map(|f| f.to_string()).collect()),
        as_or: true,
        ..Default::default()
    })?;
    Ok(rows.len() as u64)
}

/// The runner's entry to this family (workloads/mod.rs).
pub fn build(params: &Value) -> Result<Box<dyn Workload>> {
    Ok(Box::new(IIBench::new(params)?))
}

impl Workload for IIBench {
    fn setup(&mut self, ctx: &mut dyn Store) -> Result<()> {
        ctx.create_collection(COLLECTION, None)?;
        for spec in indexes().into_iter().take(self.shared.cfg.num_secondary_indexes) {
            ctx.create_index(COLLECTION, spec)?;
        }
        Ok(())
    }

    /// The writers (`threads`, the post's 10) and the query thread(s), which need all three
    /// secondary indexes.
    fn load(&mut self, threads: usize) -> Result<Vec<Worker>> {
        let s = &self.shared;
        s.writers.store(threads, Ordering::SeqCst);
        s.writers_left.store(threads, Ordering::SeqCst);
        let mut workers: Vec<Worker> = (0..threads as i64).map(|i| writer(s.clone(), i)).collect();
        if s.cfg.num_secondary_indexes == 3 {
            workers.extend((0..s.cfg.query_threads as i64).map(|i| querier(s.clone(), i)));
        }
        Ok(workers)
    }

    /// Nslow as the post counted it, from the server's own log of slow operations: a server's
    /// profiler records inserts at or above the threshold (mongod/slowops.py).
    fn before_load(&mut self, target: &dyn Target) -> Result<()> {
        let threshold_ms = (self.shared.cfg.slow_threshold_s * 1000.0) as i64;
        self.server_slow_ops = match target.companion("slow_ops_start", json!({"threshold_ms": threshold_ms})) {
            None => Some("an embedded engine has no server".into()),
            Some(Ok(answer)) => answer["unavailable"].as_str().map(String::from),
            Some(Err(e)) => Some(e.message),
        };
        Ok(())
    }

    fn after_load(&mut self, target: &dyn Target) -> Result<Option<Value>> {
        let threshold_ms = (self.shared.cfg.slow_threshold_s * 1000.0) as i64;
        let mut event = json!({"event": "slow_ops", "op": INSERT, "threshold_ms": threshold_ms});
        let counted = match &self.server_slow_ops {
            Some(why) if why.starts_with("an embedded engine") => return Ok(None),
            Some(why) => Err(why.clone()),
            None => match target.companion("slow_ops_count", json!({"collection": COLLECTION, "op": "insert",
                                                                    "threshold_ms": threshold_ms})) {
                Some(Ok(found)) => match found["unavailable"].as_str() {
                    Some(why) => Err(why.to_string()),
                    None => Ok(found),
                },
                Some(Err(e)) => Err(e.message),
                None => Err("an embedded engine has no server".into()),
            },
        };
        match counted {
            Ok(Value::Object(found)) => {
                event["source"] = json!("server");
                event.as_object_mut().unwrap().extend(found);
            }
            Ok(_) | Err(_) => {
                event["source"] = json!("client");
                event["why"] = json!(counted.err().unwrap_or_else(|| "the server's count was not an object".into()));
            }
        }
        Ok(Some(event))
    }

    fn load_accounting(&self) -> Value {
        json!({"rate": "items", "rate_ops": [INSERT], "per_op": INSERT})
    }

    fn expected_after_load(&self, load_threads: usize) -> Value {
        json!({"documents": self.shared.cfg.total_docs(load_threads as i64)})
    }

    fn verify(&mut self, ctx: &mut dyn Store) -> Result<(Value, Value)> {
        let total = self.shared.cfg.total_docs(self.shared.writers.load(Ordering::SeqCst) as i64);
        let mut expected = serde_json::Map::new();
        let mut found = serde_json::Map::new();
        expected.insert("documents".into(), json!(total));
        found.insert("documents".into(), json!(ctx.count(COLLECTION, None, &Range::default())?));
        for spec in indexes().into_iter().take(self.shared.cfg.num_secondary_indexes) {
            expected.insert(format!("index {}", spec.name), json!(total));
            found.insert(format!("index {}", spec.name), json!(ctx.count(COLLECTION, Some(&spec.name), &Range::default())?));
        }
        Ok((Value::Object(expected), Value::Object(found)))
    }

    fn measure(&mut self, step: &MeasureStep) -> Result<Vec<Worker>> {
        crate::bail!("iibench has no measured phase of its own (its queries run during the load): {}", step.name)
    }

    fn check(&mut self, _ctx: &mut dyn Store) -> Result<Value> {
        crate::bail!("iibench has no consistency check after the load (its plan ends with verify)")
    }

    fn slow_us(&self) -> Option<(&'static str, u64)> {
        Some((INSERT, (self.shared.cfg.slow_threshold_s * 1e6) as u64))
    }
}
