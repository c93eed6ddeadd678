//! `serve`: one store, its calls as JSON lines, so the Python tests drive the same record store
//! the runner measures (lib/enginebench/stores/native.py is the client).
//!
//! Request:  {"id": n, "session": s, "op": "<Store method>", ...arguments}
//! Response: {"id": n, "ok": <result>} or {"id": n, "error": {"type": "DuplicateKey"|..., "message"}}
//! Values are MongoDB Extended JSON (canonical), so every BSON type survives. Each session runs
//! on its own thread with its own engine session, so concurrent tests exercise real
//! concurrency; `begin` / `commit` / `abort` give a session an explicit transaction.
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

use bson::Bson;
use serde_json::{json, Value};

use crate::calls::json::{docs_of, filter_of, index_name, list_of, range_of, raw_json, update_of};
use crate::error::{Error, Result};
use crate::calls::{IndexSpec, Store};
use crate::store::{Ctx, RecordStore};

fn call(ctx: &mut Ctx, r: &Value) -> Result<Value> {
    let coll = r["collection"].as_str().unwrap_or_default();
    match r["op"].as_str().unwrap_or_default() {
        "create_collection" => ctx.create_collection(r["name"].as_str().unwrap_or(coll), r["capped_bytes"].as_i64()).map(|_| Value::Null),
        "create_index" => ctx.create_index(coll, IndexSpec::from_json(&r["spec"])?).map(|_| Value::Null),
        "insert_many" => ctx.insert_many(coll, &docs_of(&r["docs"])?).map(|n| json!(n)),
        "update" => {
            let result = ctx.update(coll, index_name(&r["index"]), &list_of(&r["key"])?, &update_of(r)?)?;
            Ok(json!({"matched": result.matched, "upserted": result.upserted,
                      "before": result.before.map(|d| Bson::Document(d).into_canonical_extjson())}))
        }
        "delete" => ctx.delete(coll, index_name(&r["index"]), &list_of(&r["key"])?, &filter_of(r)?).map(|b| json!(b)),
        "get" => match ctx.get(coll, index_name(&r["index"]), &list_of(&r["key"])?)? {
            Some(doc) => raw_json(&doc),
            None => Ok(Value::Null),
        },
        "get_many" => {
            let docs = ctx.get_many(coll, r["index"].as_str().unwrap_or_default(), &list_of(&r["prefix"])?, &list_of(&r["last_values"])?)?;
            docs.iter().map(raw_json).collect::<Result<Vec<_>>>().map(Value::Array)
        }
        "scan" => {
            let docs = ctx.scan(coll, index_name(&r["index"]), &range_of(r)?)?;
            docs.iter().map(raw_json).collect::<Result<Vec<_>>>().map(Value::Array)
        }
        "count" => ctx.count(coll, index_name(&r["index"]), &range_of(r)?).map(|n| json!(n)),
        "iter_index" => {
            let mut out = Vec::new();
            let mut after: Option<Vec<u8>> = None;
            loop {
                let page = ctx.index_page(coll, index_name(&r["index"]), after.as_deref(), 10_000, false)?;
                for (_, fields, _) in &page {
                    out.push(Value::Array(fields.iter().map(|f| f.clone().into_canonical_extjson()).collect()));
                }
                if page.len() < 10_000 {
                    break;
                }
                after = page.last().map(|p| p.0.clone());
            }
            Ok(Value::Array(out))
        }
        "natural" => {
            let docs = ctx.natural(coll, r["limit"].as_u64().map(|l| l as usize))?;
            docs.iter().map(raw_json).collect::<Result<Vec<_>>>().map(Value::Array)
        }
        "begin" => ctx.begin_explicit().map(|_| Value::Null),
        "commit" => ctx.commit_explicit().map(|_| Value::Null),
        "abort" => {
            ctx.abort_explicit();
            Ok(Value::Null)
        }
        "info" => Ok(json!({"engine": ctx.store.engine.name(), "version": ctx.store.engine.version(), "config": ctx.store.info()})),
        "stats" => Ok(Value::Object(ctx.store.stats().into_iter().map(|(k, v)| (k, json!(v))).collect())),
        "checkpoint" => ctx.store.checkpoint().map(|_| Value::Null),
        other => Err(Error::other(format!("unknown op {other:?}"))),
    }
}

fn respond(out: &Mutex<std::io::Stdout>, id: &Value, result: Result<Value>) {
    let line = match result {
        Ok(v) => json!({"id": id, "ok": v}),
        Err(e) => json!({"id": id, "error": {"type": e.type_name(), "message": e.message}}),
    };
    let out = out.lock().unwrap();
    let mut lock = out.lock();
    let _ = writeln!(lock, "{line}");
    let _ = lock.flush();
}

pub fn main(engine: &str, dir: &Path, options: &str) -> i32 {
    let options: serde_json::Map<String, Value> = match serde_json::from_str(options) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("--options: not a JSON object: {e}");
            return 2;
        }
    };
    let store = match crate::run::open_store(engine, dir, &options) {
        Ok(s) => s,
        Err(e) => {
            println!("{}", json!({"id": null, "error": {"type": e.type_name(), "message": e.message}}));
            return 2;
        }
    };
    println!("{}", json!({"id": null, "ok": "ready"}));
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let mut sessions: HashMap<i64, Sender<Value>> = HashMap::new();
    let mut threads = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let request: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                respond(&out, &Value::Null, Err(Error::other(format!("not JSON: {e}"))));
                continue;
            }
        };
        if request["op"] == "close" {
            break;
        }
        let session = request["session"].as_i64().unwrap_or(0);
        let sender = sessions.entry(session).or_insert_with(|| {
            let (tx, rx) = channel::<Value>();
            let (store, out) = (store.clone(), out.clone());
            threads.push(std::thread::spawn(move || serve_session(store, rx, out)));
            tx
        });
        let _ = sender.send(request);
    }
    sessions.clear(); // the session threads end when their channels close
    for t in threads {
        let _ = t.join();
    }
    match store.close() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("close: {e}");
            1
        }
    }
}

fn serve_session(store: Arc<RecordStore>, requests: std::sync::mpsc::Receiver<Value>, out: Arc<Mutex<std::io::Stdout>>) {
    let mut ctx = match store.session() {
        Ok(c) => c,
        Err(e) => {
            for r in requests {
                respond(&out, &r["id"], Err(e.clone()));
            }
            return;
        }
    };
    for r in requests {
        let result = call(&mut ctx, &r);
        respond(&out, &r["id"], result);
    }
    ctx.abort_explicit();
}
