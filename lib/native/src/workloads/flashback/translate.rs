//! A command captured from a mongod, as the Store call it stands for (the embedded target has
//! no query planner, so only ops that name one document by `_id`, or a whole collection,
//! translate); everything else is not replayable there and is counted per type with the reason.
//! On a server target the captured command itself is sent (mod.rs).
use serde_json::{json, Map, Value};

/// Why an op cannot be expressed as Store calls.
pub type NotReplayable = String;

/// The `_id` value of a filter that names exactly one document by `_id`.
fn id_only(filter: &Value, what: &str) -> Result<Value, NotReplayable> {
    let empty = Map::new();
    let fields = filter.as_object().unwrap_or(&empty);
    let id = fields.get("_id").filter(|_| fields.len() == 1);
    match id {
        Some(v) if !is_operator_object(v) => Ok(v.clone()),
        _ => {
            let mut names: Vec<&String> = fields.keys().collect();
            names.sort();
            Err(format!("{what}: the filter {names:?} is not an _id equality (the Store has no query planner)"))
        }
    }
}

/// An object whose keys are operators ({"$gt": ...}); Extended JSON values ({"$numberLong": ...})
/// are values, not operators.
fn is_operator_object(v: &Value) -> bool {
    const EXTJSON: [&str; 8] = ["$numberInt", "$numberLong", "$numberDouble", "$oid", "$date", "$binary",
                                "$numberDecimal", "$timestamp"];
    v.as_object().map(|o| o.keys().any(|k| k.starts_with('$') && !EXTJSON.contains(&k.as_str()))).unwrap_or(false)
}

fn update_parts(u: &Value, what: &str) -> Result<Map<String, Value>, NotReplayable> {
    let ops = u.as_object().filter(|o| !o.is_empty() && o.keys().all(|k| k.starts_with('$')))
        .ok_or_else(|| format!("{what}: replacement documents are not Store updates"))?;
    let mut unknown: Vec<&String> = ops.keys().filter(|k| !["$set", "$inc", "$setOnInsert"].contains(&k.as_str())).collect();
    if !unknown.is_empty() {
        unknown.sort();
        return Err(format!("{what}: update operators {unknown:?} have no Store equivalent"));
    }
    let mut out = Map::new();
    for (op, name) in [("$set", "set"), ("$inc", "inc"), ("$setOnInsert", "set_on_insert")] {
        out.insert(name.into(), ops.get(op).cloned().unwrap_or(Value::Null));
    }
    Ok(out)
}

fn single<'a>(list: &'a Value, what: &str) -> Result<&'a Value, NotReplayable> {
    match list.as_array().map(|l| l.as_slice()) {
        Some([one]) => Ok(one),
        _ => Err(format!("{what}: only single-statement commands translate")),
    }
}

/// The Store call ({"method", "args"}) a mongod-captured op stands for.
pub fn store_call(op: &str, cmd: &Value) -> Result<Value, NotReplayable> {
    let limit = |v: &Value| v.as_i64().filter(|n| *n > 0).map(Value::from).unwrap_or(Value::Null);
    match op {
        "insert" => {
            if cmd["documents"].as_array().map(|d| d.is_empty()).unwrap_or(true) {
                return Err("insert: the capture has no documents (profiler truncated them and no oplog entry matched)".into());
            }
            Ok(json!({"method": "insert_many", "args": {}})) // the documents stay in the command
        }
        "query" => {
            if cmd.get("sort").map(|s| !s.is_null() && s != &json!({})).unwrap_or(false) {
                return Err("query: sorted finds need a query planner".into());
            }
            let filter = cmd.get("filter").cloned().unwrap_or(json!({}));
            if filter.as_object().map(|f| f.is_empty()).unwrap_or(true) {
                return Ok(json!({"method": "scan", "args": {"index": null, "skip": cmd["skip"].as_i64().unwrap_or(0),
                                                            "limit": limit(&cmd["limit"])}}));
            }
            Ok(json!({"method": "get", "args": {"index": null, "key": [id_only(&filter, "query")?]}}))
        }
        "count" => {
            let query = cmd.get("query").cloned().unwrap_or(json!({}));
            if query.as_object().map(|q| !q.is_empty()).unwrap_or(false) {
                return Ok(json!({"method": "get", "args": {"index": null, "key": [id_only(&query, "count")?]}}));
            }
            Ok(json!({"method": "count", "args": {"index": null, "limit": limit(&cmd["limit"])}}))
        }
        "update" => {
            let u = single(&cmd["updates"], "update")?;
            if u["multi"].as_bool().unwrap_or(false) {
                return Err("update: multi-document updates need a query planner".into());
            }
            let mut args = update_parts(&u["u"], "update")?;
            args.insert("index".into(), Value::Null);
            args.insert("key".into(), json!([id_only(&u["q"], "update")?]));
            args.insert("upsert".into(), json!(u["upsert"].as_bool().unwrap_or(false)));
            Ok(json!({"method": "update", "args": args}))
        }
        "remove" => {
            let d = single(&cmd["deletes"], "remove")?;
            if d["limit"].as_i64() != Some(1) {
                return Err("remove: multi-document removes need a query planner".into());
            }
            Ok(json!({"method": "delete", "args": {"index": null, "key": [id_only(&d["q"], "remove")?]}}))
        }
        "findandmodify" => {
            if cmd["remove"].as_bool().unwrap_or(false) || !cmd["sort"].is_null() || !cmd["fields"].is_null() {
                return Err("findandmodify: remove, sort and fields have no Store equivalent".into());
            }
            let mut args = update_parts(&cmd["update"], "findandmodify")?;
            args.insert("index".into(), Value::Null);
            args.insert("key".into(), json!([id_only(&cmd["query"], "findandmodify")?]));
            args.insert("upsert".into(), json!(cmd["upsert"].as_bool().unwrap_or(false)));
            args.insert("return_before".into(), json!(true));
            Ok(json!({"method": "update", "args": args}))
        }
        other => Err(format!("{other}: replays only against a server")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_equalities_translate_and_the_rest_says_why_not() {
        let get = store_call("query", &json!({"find": "c", "filter": {"_id": {"$numberLong": "7"}}})).unwrap();
        assert_eq!(get["method"], "get");
        assert_eq!(get["args"]["key"], json!([{"$numberLong": "7"}]));
        let why = store_call("query", &json!({"find": "c", "filter": {"_id": {"$gt": 3}}})).unwrap_err();
        assert!(why.contains("not an _id equality"), "{why}");
        let up = store_call("update", &json!({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]})).unwrap();
        assert_eq!(up["args"]["inc"], json!({"n": 1}));
        assert!(store_call("update", &json!({"updates": [{"q": {"_id": 1}, "u": {"$push": {"a": 1}}}]})).is_err());
        assert!(store_call("getmore", &json!({"getMore": 5})).unwrap_err().contains("only against a server"));
    }
}
