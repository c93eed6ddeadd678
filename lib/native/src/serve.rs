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

use bson::{Bson, Document};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::store::document::{parse_filter, Update};
use crate::store::{Ctx, IndexSpec, Range, RecordStore};

fn to_bson(v: &Value) -> Result<Bson> {
    Bson::try_from(v.clone()).map_err(|e| Error::other(format!("not Extended JSON: {v}: {e}")))
}

fn to_doc(v: &Value) -> Result<Option<Document>> {
    match v {
        Value::Null => Ok(None),
        other => match to_bson(other)? {
            Bson::Document(d) => Ok(Some(d)),
            b => Err(Error::other(format!("expected a document, got {b}"))),
        },
    }
}

fn to_list(v: &Value) -> Result<Vec<Bson>> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items.iter().map(to_bson).collect(),
        other => Ok(vec![to_bson(other)?]),
    }
}

fn opt_list(v: &Value) -> Result<Option<Vec<Bson>>> {
    if v.is_null() { Ok(None) } else { to_list(v).map(Some) }
}

fn raw_json(doc: &bson::RawDocumentBuf) -> Result<Value> {
    let d = Document::try_from(doc)?;
    Ok(Bson::Document(d).into_canonical_extjson())
}

fn index_name(v: &Value) -> Option<&str> {
    v.as_str()
}

fn range(r: &Value) -> Result<Range> {
    Ok(Range {
        prefix: to_list(&r["prefix"])?,
        low: opt_list(&r["low"])?,
        high: opt_list(&r["high"])?,
        reverse: r["reverse"].as_bool().unwrap_or(false),
        skip: r["skip"].as_u64().unwrap_or(0) as usize,
        limit: r["limit"].as_u64().map(|l| l as usize),
        fields: r["fields"].as_array().map(|f| f.iter().filter_map(|x| x.as_str().map(String::from)).collect()),
    })
}

fn call(ctx: &mut Ctx, r: &Value) -> Result<Value> {
    let coll = r["collection"].as_str().unwrap_or_default();
    match r["op"].as_str().unwrap_or_default() {
        "create_collection" => ctx.create_collection(r["name"].as_str().unwrap_or(coll), r["capped_bytes"].as_i64()).map(|_| Value::Null),
        "create_index" => ctx.create_index(coll, IndexSpec::from_json(&r["spec"])?).map(|_| Value::Null),
        "insert_many" => {
            let docs: Vec<Document> = r["docs"].as_array().cloned().unwrap_or_default().iter()
                .map(|d| to_doc(d).map(|x| x.unwrap_or_default())).collect::<Result<_>>()?;
            ctx.insert_many(coll, &docs).map(|n| json!(n))
        }
        "update" => {
            let update = Update {
                set: to_doc(&r["set"])?, inc: to_doc(&r["inc"])?, set_on_insert: to_doc(&r["set_on_insert"])?,
                replace: to_doc(&r["replace"])?,
                filter: match to_doc(&r["where"])? { Some(d) => parse_filter(&d)?, None => Vec::new() },
                upsert: r["upsert"].as_bool().unwrap_or(false), return_before: r["return_before"].as_bool().unwrap_or(false),
            };
            let result = ctx.update(coll, index_name(&r["index"]), &to_list(&r["key"])?, &update)?;
            Ok(json!({"matched": result.matched, "upserted": result.upserted,
                      "before": result.before.map(|d| Bson::Document(d).into_canonical_extjson())}))
        }
        "delete" => {
            let filter = match to_doc(&r["where"])? { Some(d) => parse_filter(&d)?, None => Vec::new() };
            ctx.delete(coll, index_name(&r["index"]), &to_list(&r["key"])?, &filter).map(|b| json!(b))
        }
        "get" => match ctx.get(coll, index_name(&r["index"]), &to_list(&r["key"])?)? {
            Some(doc) => raw_json(&doc),
            None => Ok(Value::Null),
        },
        "get_many" => {
            let docs = ctx.get_many(coll, r["index"].as_str().unwrap_or_default(), &to_list(&r["prefix"])?, &to_list(&r["last_values"])?)?;
            docs.iter().map(raw_json).collect::<Result<Vec<_>>>().map(Value::Array)
        }
        "scan" => {
            let docs = ctx.scan(coll, index_name(&r["index"]), &range(r)?)?;
            docs.iter().map(raw_json).collect::<Result<Vec<_>>>().map(Value::Array)
        }
        "count" => ctx.count(coll, index_name(&r["index"]), &range(r)?).map(|n| json!(n)),
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
