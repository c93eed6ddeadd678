//! `serve`: one target's Store calls as JSON lines, so the Python tests drive the same code the
//! runner measures (lib/enginebench/stores/native.py is the client): the embedded record store
//! over an engine, or a server through the runner's executors (the same commands a run sends).
//!
//! Request:  {"id": n, "session": s, "op": "<Store method>", ...arguments}
//! Response: {"id": n, "ok": <result>} or {"id": n, "error": {"type": "DuplicateKey"|..., "message"}}
//! Values are MongoDB Extended JSON (canonical), so every BSON type survives. Each session runs
//! on its own thread with its own Store, so concurrent tests exercise real concurrency; on the
//! embedded target `begin` / `commit` / `abort` give a session an explicit transaction.
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

use bson::Bson;
use serde_json::{json, Value};

use crate::calls::json::{docs_of, filter_of, index_name, list_of, range_of, raw_json, update_of};
use crate::calls::{IndexSpec, Store};
use crate::error::{Error, Result};
use crate::layouts::mongod_kv::{Ctx, RecordStore};
use crate::executors::server::{Server, ServerSpec};
use crate::executors::Target;

/// What a serve session holds: an engine session (with explicit transactions), or any Store.
enum Session {
    Embedded(Ctx),
    Other(Box<dyn Store>),
}

impl Session {
    fn store(&mut self) -> &mut dyn Store {
        match self {
            Session::Embedded(ctx) => ctx,
            Session::Other(store) => store.as_mut(),
        }
    }

    fn explicit(&mut self, op: &str) -> Result<Value> {
        let Session::Embedded(ctx) = self else {
            crate::bail!("{op}: explicit transactions are served on the embedded target only")
        };
        match op {
            "begin" => ctx.begin_explicit(),
            "commit" => ctx.commit_explicit(),
            _ => {
                ctx.abort_explicit();
                Ok(())
            }
        }
        .map(|_| Value::Null)
    }
}

fn docs(found: Vec<bson::RawDocumentBuf>) -> Result<Value> {
    found.iter().map(raw_json).collect::<Result<Vec<_>>>().map(Value::Array)
}

fn store_call(store: &mut dyn Store, coll: &str, r: &Value) -> Result<Value> {
    let index = index_name(&r["index"]);
    match r["op"].as_str().unwrap_or_default() {
        "create_collection" => store.create_collection(r["name"].as_str().unwrap_or(coll), r["capped_bytes"].as_i64()).map(|_| Value::Null),
        "create_index" => store.create_index(coll, IndexSpec::from_json(&r["spec"])?).map(|_| Value::Null),
        "insert_many" => store.insert_many(coll, &docs_of(&r["docs"])?).map(|n| json!(n)),
        "update" => {
            let result = store.update(coll, index, &list_of(&r["key"])?, &update_of(r)?)?;
            Ok(json!({"matched": result.matched, "upserted": result.upserted, "acknowledged": result.acknowledged,
                      "before": result.before.map(|d| Bson::Document(d).into_canonical_extjson())}))
        }
        "delete" => store.delete(coll, index, &list_of(&r["key"])?, &filter_of(r)?).map(|b| json!(b)),
        "get" => match store.get(coll, index, &list_of(&r["key"])?)? {
            Some(doc) => raw_json(&doc),
            None => Ok(Value::Null),
        },
        "get_many" => docs(store.get_many(coll, index.unwrap_or_default(), &list_of(&r["prefix"])?, &list_of(&r["last_values"])?)?),
        "scan" => docs(store.scan(coll, index, &range_of(r)?)?),
        "count" => store.count(coll, index, &range_of(r)?).map(|n| json!(n)),
        "iter_index" => iter_index(store, coll, index),
        "natural" => docs(store.natural(coll, r["limit"].as_u64().map(|l| l as usize))?),
        other => Err(Error::other(format!("unknown op {other:?}"))),
    }
}

/// Every key of an index, page by page.
fn iter_index(store: &mut dyn Store, coll: &str, index: Option<&str>) -> Result<Value> {
    let mut out = Vec::new();
    let mut after: Option<Vec<u8>> = None;
    loop {
        let page = store.index_page(coll, index, after.as_deref(), 10_000, false)?;
        for (_, fields, _) in &page {
            out.push(Value::Array(fields.iter().map(|f| f.clone().into_canonical_extjson()).collect()));
        }
        if page.len() < 10_000 {
            return Ok(Value::Array(out));
        }
        after = page.last().map(|p| p.0.clone());
    }
}

fn call(target: &Arc<dyn Target>, info: &Value, session: &mut Session, r: &Value) -> Result<Value> {
    let coll = r["collection"].as_str().unwrap_or_default();
    match r["op"].as_str().unwrap_or_default() {
        op @ ("begin" | "commit" | "abort") => session.explicit(op),
        "info" => Ok(info.clone()),
        "stats" => Ok(target.stats()),
        "checkpoint" => target.checkpoint().map(|_| Value::Null),
        "atomic" => Ok(json!(session.store().atomic())),
        _ => store_call(session.store(), coll, r),
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

/// The target to serve: a server (`--server` with a ServerSpec as JSON), or an engine in `dir`.
fn open(engine: &str, dir: &Path, options: &str, server: Option<&str>) -> Result<(Arc<dyn Target>, Value, Option<Arc<RecordStore>>)> {
    if let Some(spec) = server {
        let spec: ServerSpec = serde_json::from_str(spec).map_err(|e| Error::other(format!("--server: {e}")))?;
        let server = Server::open(spec)?;
        let mut info = server.info.clone();
        info["executor"] = json!(server.executor_name());
        return Ok((server, info, None));
    }
    let options: serde_json::Map<String, Value> = serde_json::from_str(options)
        .map_err(|e| Error::other(format!("--options: not a JSON object: {e}")))?;
    let opened = crate::executors::embedded::Embedded::open(engine, dir, &options)?;
    let info = opened.info();
    let explicit = match &opened {
        crate::executors::embedded::Embedded::Mongod(store) => Some(store.clone()),
        _ => None,
    };
    Ok((opened.target(), info, explicit))
}

pub fn main(engine: &str, dir: &Path, options: &str, server: Option<&str>) -> i32 {
    let (target, info, embedded) = match open(engine, dir, options, server) {
        Ok(opened) => opened,
        Err(e) => {
            println!("{}", json!({"id": null, "error": {"type": e.type_name(), "message": e.message}}));
            return 2;
        }
    };
    println!("{}", json!({"id": null, "ok": "ready"}));
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let info = Arc::new(info);
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
            let (target, embedded, info, out) = (target.clone(), embedded.clone(), info.clone(), out.clone());
            threads.push(std::thread::spawn(move || serve_session(target, embedded, info, rx, out)));
            tx
        });
        let _ = sender.send(request);
    }
    sessions.clear(); // the session threads end when their channels close
    for t in threads {
        let _ = t.join();
    }
    match target.close() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("close: {e}");
            1
        }
    }
}

fn serve_session(target: Arc<dyn Target>, embedded: Option<Arc<RecordStore>>, info: Arc<Value>,
                 requests: std::sync::mpsc::Receiver<Value>, out: Arc<Mutex<std::io::Stdout>>) {
    let opened = match embedded {
        Some(store) => RecordStore::session(&store).map(Session::Embedded),
        None => target.clone().session().map(Session::Other),
    };
    let mut session = match opened {
        Ok(s) => s,
        Err(e) => {
            for r in requests {
                respond(&out, &r["id"], Err(e.clone()));
            }
            return;
        }
    };
    for r in requests {
        let result = call(&target, &info, &mut session, &r);
        respond(&out, &r["id"], result);
    }
    let _ = session.explicit("abort");
}
