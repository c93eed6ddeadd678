//! A throwaway family for lib/tests/test_extending.py: `documents` documents {_id: i, v: i}
//! loaded in one call, then each client reads them back by _id in turn. Not part of the collection.
use bson::{doc, Bson, Document};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{params, MeasureStep, Workload};
use crate::calls::{Range, Store};
use crate::error::Result;
use crate::phase::{Env, Worker};

const COLLECTION: &str = "echo";

#[derive(Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct Config {
    documents: i64,
}

struct Echo {
    cfg: Config,
}

/// The runner's entry to this family (workloads/mod.rs).
pub fn build(p: &Value) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Echo { cfg: params("echo", p)? }))
}

fn reader(n: i64) -> Worker {
    Box::new(move |env: &mut Env| {
        let mut i = 0;
        while !env.stopped() {
            env.op("GET", None, |ctx| ctx.get(COLLECTION, None, &[Bson::Int64(i % n)]).map(|d| d.is_some() as u64))?;
            i += 1;
        }
        Ok(())
    })
}

impl Workload for Echo {
    fn setup(&mut self, ctx: &mut dyn Store) -> Result<()> {
        ctx.create_collection(COLLECTION, None)
    }

    fn load(&mut self, _threads: usize) -> Result<Vec<Worker>> {
        let n = self.cfg.documents;
        Ok(vec![Box::new(move |env: &mut Env| {
            let docs: Vec<Document> = (0..n).map(|i| doc! {"_id": i, "v": i}).collect();
            env.op("LOAD", None, |ctx| ctx.insert_many(COLLECTION, &docs).map(|n| n as u64))?;
            Ok(())
        })])
    }

    fn load_accounting(&self) -> Value {
        json!({"rate": "items", "rate_ops": ["LOAD"], "per_op": "LOAD"})
    }

    fn expected_after_load(&self, _load_threads: usize) -> Value {
        json!({COLLECTION: self.cfg.documents})
    }

    fn verify(&mut self, ctx: &mut dyn Store) -> Result<(Value, Value)> {
        let found = ctx.count(COLLECTION, None, &Range::default())?;
        Ok((json!({"documents": self.cfg.documents}), json!({"documents": found})))
    }

    fn measure(&mut self, step: &MeasureStep) -> Result<Vec<Worker>> {
        Ok((0..step.threads).map(|_| reader(self.cfg.documents)).collect())
    }

    fn check(&mut self, ctx: &mut dyn Store) -> Result<Value> {
        let (expected, found) = self.verify(ctx)?;
        let ok = expected == found;
        Ok(json!({"expected": expected, "found": found, "ok": ok, "mismatches": u64::from(!ok)}))
    }
}
