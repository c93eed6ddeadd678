//! The TokuMX-versus-MongoDB experiments (seed 004, Severalnines 2013), ported from
//! lib/enginebench/workloads/tokumx.py (the same seeds give the same documents and requests).
//!
//! - insert: one client inserts N documents {x: i, y: <200 random characters>} into a
//!   collection with an index on x, ONE document per call, as the post's shell loop
//!   `col.insert({x:i, y:data})` did (it says explicitly that this is not a bulk load).
//! - read_update / read: load N documents, then one measured phase per client count. read_update
//!   is the post's readAndUpdate(): findOne on a random x, then $set y to y + that x (so
//!   documents grow, as in the post); read is the same findOne alone.
use base64::Engine as _;
use bson::{doc, Bson, Document};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{params, MeasureStep, Workload};
use crate::error::Result;
use crate::phase::{Env, Worker};
use crate::pyrandom::Random;
use crate::calls::{Assign, IndexSpec, Range, Store, Update};

pub const COLLECTION: &str = "johan"; // the post's test.johan
pub const X_INDEX: &str = "x_1"; // db.johan.ensureIndex({x:1})
pub const INSERT: &str = "INSERT";
pub const FIND: &str = "FIND_ONE";
pub const UPDATE: &str = "UPDATE";
pub const LOAD: &str = "LOAD";

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
// Thread counts and timing are the phase plan's (`phases:` in the params file), not these.
pub struct Config {
    pub experiment: String,
    pub documents: i64,
    pub payload_chars: usize,
    pub load_batch: i64,
    pub seed: i64,
}

/// A random string of `chars` characters (the post's createRandomData(200)): base64 of random
/// bytes, so it is as incompressible as random text and cheap to make in the client.
pub fn payload(rng: &mut Random, chars: usize) -> String {
    let mut s = base64::engine::general_purpose::STANDARD.encode(rng.randbytes((chars * 3 + 3) / 4));
    s.truncate(chars);
    s
}

/// {x: i, y: data}: the post's shell loop stored x as a double, as every number literal of the
/// mongo shell is one (mongo@r2.4 engine_v8.cpp v8ToMongoNumber, r3.2 mozjs/valuewriter.cpp).
pub fn document(rng: &mut Random, i: i64, chars: usize) -> Document {
    doc! {"x": x_value(i), "y": payload(rng, chars)}
}

/// x as the shell sent it, in documents and in queries: a double.
pub fn x_value(x: i64) -> Bson {
    Bson::Double(x as f64)
}

pub struct TokuMX {
    cfg: std::sync::Arc<Config>,
}

impl TokuMX {
    pub fn new(p: &Value) -> Result<Self> {
        let cfg: Config = params("tokumx", p)?;
        if !["insert", "read_update", "read"].contains(&cfg.experiment.as_str()) {
            crate::bail!("workload tokumx: experiment is {:?}; allowed: insert, read_update, read", cfg.experiment);
        }
        Ok(TokuMX { cfg: std::sync::Arc::new(cfg) })
    }

    fn counts(&self, ctx: &mut dyn Store) -> Result<(Value, Value)> {
        let n = self.cfg.documents;
        let expected = json!({"documents": n, format!("index {X_INDEX}"): n});
        let found = json!({"documents": ctx.count(COLLECTION, None, &Range::default())?,
                           format!("index {X_INDEX}"): ctx.count(COLLECTION, Some(X_INDEX), &Range::default())?});
        Ok((expected, found))
    }
}

impl TokuMX {
    /// The first `n` documents the inserter (or the loader) writes.
    pub fn documents(&self, n: usize) -> Vec<Document> {
        let mut rng = Random::from_int(self.cfg.seed as u128);
        (0..n as i64).map(|i| document(&mut rng, i, self.cfg.payload_chars)).collect()
    }

    /// The x client `index` of `clients` draws for its first `n` findOnes.
    pub fn client_draws(&self, clients: usize, index: usize, n: usize) -> Vec<i64> {
        let mut rng = client_rng(&self.cfg, clients, index);
        (0..n).map(|_| rng.randint(1, self.cfg.documents)).collect()
    }
}

fn client_rng(cfg: &Config, clients: usize, index: usize) -> Random {
    Random::from_str(&format!("{}/{clients}/{index}", cfg.seed))
}

fn inserter(cfg: std::sync::Arc<Config>) -> Worker {
    Box::new(move |env: &mut Env| {
        let mut rng = Random::from_int(cfg.seed as u128);
        for i in 0..cfg.documents {
            if env.stopped() {
                return Ok(());
            }
            // One document per call: the post's shell loop, not a bulk load.
            let doc = document(&mut rng, i, cfg.payload_chars);
            env.op(INSERT, None, |ctx| ctx.insert_many(COLLECTION, std::slice::from_ref(&doc)).map(|_| 1))?;
        }
        Ok(())
    })
}

fn loader(cfg: std::sync::Arc<Config>) -> Worker {
    Box::new(move |env: &mut Env| {
        let mut rng = Random::from_int(cfg.seed as u128);
        let mut start = 0;
        while start < cfg.documents {
            if env.stopped() {
                return Ok(());
            }
            let docs: Vec<Document> = (start..(start + cfg.load_batch).min(cfg.documents))
                .map(|i| document(&mut rng, i, cfg.payload_chars)).collect();
            env.op(LOAD, None, |ctx| ctx.insert_many(COLLECTION, &docs).map(|n| n as u64))?;
            start += cfg.load_batch;
        }
        Ok(())
    })
}

fn client(cfg: std::sync::Arc<Config>, clients: usize, index: usize) -> Worker {
    Box::new(move |env: &mut Env| {
        let updating = cfg.experiment == "read_update";
        let mut rng = client_rng(&cfg, clients, index);
        while !env.stopped() {
            // The post's Math.floor(Math.random()*no_recs)+1: 1..N, while x runs 0..N-1, so one
            // draw in N finds nothing and the loop goes on (`if(doc==null) continue`).
            let x = rng.randint(1, cfg.documents);
            let mut found = None;
            env.op(FIND, None, |ctx| {
                found = ctx.get(COLLECTION, Some(X_INDEX), &[x_value(x)])?;
                Ok(found.is_some() as u64)
            })?;
            if let (true, Some(doc)) = (updating, found) {
                let y = format!("{}{x}", doc.get_str("y").unwrap_or_default());
                env.op(UPDATE, None, |ctx| {
                    ctx.update(COLLECTION, Some(X_INDEX), &[x_value(x)], &Update { set: Some(Assign::of([("y", Bson::String(y.clone()))])), ..Default::default() })
                        .map(|_| 1)
                })?;
            }
        }
        Ok(())
    })
}

/// The runner's entry to this family (workloads/mod.rs).
pub fn build(params: &Value) -> Result<Box<dyn Workload>> {
    Ok(Box::new(TokuMX::new(params)?))
}

impl Workload for TokuMX {
    fn setup(&mut self, ctx: &mut dyn Store) -> Result<()> {
        ctx.create_collection(COLLECTION, None)?;
        ctx.create_index(COLLECTION, IndexSpec::new(X_INDEX, &[("x", 1)], false)) // before the inserts, as the post did
    }

    /// The insert experiment's one client, or the loader of the client sweeps.
    fn load(&mut self, _threads: usize) -> Result<Vec<Worker>> {
        Ok(vec![if self.cfg.experiment == "insert" { inserter(self.cfg.clone()) } else { loader(self.cfg.clone()) }])
    }

    fn load_accounting(&self) -> Value {
        let op = if self.cfg.experiment == "insert" { INSERT } else { LOAD };
        json!({"rate": "items", "rate_ops": [op], "per_op": op})
    }

    fn expected_after_load(&self, _load_threads: usize) -> Value {
        json!({COLLECTION: self.cfg.documents})
    }

    fn verify(&mut self, ctx: &mut dyn Store) -> Result<(Value, Value)> {
        self.counts(ctx)
    }

    fn measure(&mut self, step: &MeasureStep) -> Result<Vec<Worker>> {
        Ok((0..step.threads).map(|i| client(self.cfg.clone(), step.threads, i)).collect())
    }

    fn measure_accounting(&self) -> Value {
        let op = if self.cfg.experiment == "read_update" { UPDATE } else { FIND };
        json!({"rate": "count", "rate_ops": [op], "per_op": op})
    }

    fn check(&mut self, ctx: &mut dyn Store) -> Result<Value> {
        let (expected, found) = self.counts(ctx)?;
        let mismatches = ["documents".to_string(), format!("index {X_INDEX}")].iter()
            .filter(|k| expected[k.as_str()] != found[k.as_str()]).count();
        Ok(json!({"expected": expected, "found": found, "ok": mismatches == 0, "mismatches": mismatches}))
    }
}
