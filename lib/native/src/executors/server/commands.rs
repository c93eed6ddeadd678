//! The Store calls as the MongoDB commands a server receives, and the servers' replies read back.
//!
//! One translation for every server executor: the Rust driver sends these documents as they are,
//! the legacy executor (lib/enginebench/server/legacy.py) maps each command kind to the pymongo 3
//! call that sends it to old servers, and Flashback's recorder writes them into its captures.
//!
//! The commands are those the original tools' drivers sent for the same operation: a point read
//! is a `find` with limit 1 (findOne), a keyed update an `update` statement (upserted or not, as
//! the reply says), a count the `count` command (LinkbenchX's cursor.size() and count()), a
//! range a `find` sorted in the index's order. Reads over a secondary index name it with `hint`,
//! so every server reads the index the embedded store reads; writes carry no hint (3.x refuses
//! one in an update statement).
use bson::{doc, Bson, Document};

use crate::calls::{Cond, Filter, IndexSpec, Range, Update, UpdateResult};
use crate::error::{Error, Kind, Result};

/// The `_id` index as servers name it.
pub const ID_INDEX: &str = "_id_";

/// The fields of the index a call names (None: `_id`), in index order, with their directions.
pub fn index_fields(spec: Option<&IndexSpec>) -> Vec<(String, i8)> {
    match spec {
        None => vec![("_id".to_string(), 1)],
        Some(spec) => spec.fields.clone(),
    }
}

fn hint(spec: Option<&IndexSpec>) -> Bson {
    Bson::String(spec.map(|s| s.name.clone()).unwrap_or_else(|| ID_INDEX.to_string()))
}

/// {field: value, ...} for a key over these fields, then the call's own conditions.
pub fn key_filter(fields: &[(String, i8)], key: &[Bson], filter: &Filter) -> Document {
    let mut out = Document::new();
    for ((field, _), value) in fields.iter().zip(key) {
        out.insert(field.clone(), value.clone());
    }
    for (field, cond) in filter {
        match cond {
            Cond::Eq(v) => out.insert(field.clone(), v.clone()),
            Cond::Lt(v) => out.insert(field.clone(), doc! {"$lt": v.clone()}),
        };
    }
    out
}

/// A tuple bound (a, b, c) >= (x, y, z) over index fields, as iibench wrote it:
/// {$or: [{a: x, b: y, c: {$gte: z}}, {a: x, b: {$gt: y}}, {a: {$gt: x}}]}; the most specific
/// clause first, as the Java client listed them.
fn tuple_bound(fields: &[(String, i8)], values: &[Bson], strict: &str, inclusive: &str) -> Document {
    let mut clauses = Vec::new();
    for depth in (1..=values.len()).rev() {
        let mut clause = Document::new();
        for ((field, _), value) in fields.iter().zip(&values[..depth - 1]) {
            clause.insert(field.clone(), value.clone());
        }
        let op = if depth == values.len() { inclusive } else { strict };
        clause.insert(fields[depth - 1].0.clone(), doc! {op: values[depth - 1].clone()});
        clauses.push(Bson::Document(clause));
    }
    if clauses.len() == 1 {
        match clauses.pop() {
            Some(Bson::Document(d)) => d,
            _ => unreachable!(),
        }
    } else {
        doc! {"$or": clauses}
    }
}

/// A Range as a filter: equality on the index's first fields, then bounds on the next field (a
/// single value) or over the next fields as a tuple.
pub fn range_filter(fields: &[(String, i8)], range: &Range) -> Result<Document> {
    let mut flt = Document::new();
    for ((field, _), value) in fields.iter().zip(&range.prefix) {
        flt.insert(field.clone(), value.clone());
    }
    let rest = &fields[range.prefix.len().min(fields.len())..];
    let tuple = range.low.as_ref().map(|l| l.len() > 1).unwrap_or(false)
        || range.high.as_ref().map(|h| h.len() > 1).unwrap_or(false);
    if tuple {
        if rest.iter().any(|(_, d)| *d < 0) {
            return Err(Error::other("tuple bounds over descending index fields are not supported"));
        }
        let mut clauses: Vec<Bson> = Vec::new();
        if let Some(low) = &range.low {
            clauses.push(Bson::Document(tuple_bound(rest, low, "$gt", "$gte")));
        }
        if let Some(high) = &range.high {
            clauses.push(Bson::Document(tuple_bound(rest, high, "$lt", "$lte")));
        }
        if flt.is_empty() && clauses.len() == 1 {
            return match clauses.pop() {
                Some(Bson::Document(d)) => Ok(d),
                _ => unreachable!(),
            };
        }
        if !flt.is_empty() {
            clauses.insert(0, Bson::Document(flt));
        }
        return Ok(doc! {"$and": clauses});
    }
    if range.low.is_some() || range.high.is_some() {
        let field = rest.first().ok_or_else(|| Error::other("a bound past the index's last field"))?.0.clone();
        let mut bounds = Document::new();
        if let Some(low) = range.low.as_ref().and_then(|l| l.first()) {
            bounds.insert("$gte", low.clone());
        }
        if let Some(high) = range.high.as_ref().and_then(|h| h.first()) {
            bounds.insert("$lte", high.clone());
        }
        flt.insert(field, bounds);
    }
    Ok(flt)
}

/// The index's order, or its reverse.
pub fn sort(fields: &[(String, i8)], reverse: bool) -> Document {
    fields.iter().map(|(f, d)| (f.clone(), Bson::Int32(if reverse { -*d as i32 } else { *d as i32 }))).collect()
}

/// A Store update's operators ($set, $inc, $setOnInsert), or its replacement document.
pub fn update_document(update: &Update) -> Document {
    if let Some(replacement) = &update.replace {
        return replacement.to_document();
    }
    let mut u = Document::new();
    for (op, part) in [("$set", &update.set), ("$inc", &update.inc), ("$setOnInsert", &update.set_on_insert)] {
        if let Some(fields) = part.as_ref().filter(|f| !f.is_empty()) {
            u.insert(op, fields.to_document());
        }
    }
    u
}

// -- the commands ------------------------------------------------------------------------------

pub fn create_collection(name: &str, capped_bytes: Option<i64>) -> Document {
    let mut cmd = doc! {"create": name};
    if let Some(bytes) = capped_bytes {
        cmd.insert("capped", true);
        cmd.insert("size", bytes);
    }
    cmd
}

pub fn create_index(collection: &str, spec: &IndexSpec) -> Document {
    let key: Document = spec.fields.iter().map(|(f, d)| (f.clone(), Bson::Int32(*d as i32))).collect();
    let mut index = doc! {"key": key, "name": spec.name.clone()};
    if spec.unique {
        index.insert("unique", true);
    }
    doc! {"createIndexes": collection, "indexes": [index]}
}

pub fn insert(collection: &str, docs: &[Document]) -> Document {
    doc! {"insert": collection, "documents": docs.iter().cloned().map(Bson::Document).collect::<Vec<_>>(), "ordered": false}
}

/// A keyed update: an `update` statement, or findAndModify when the caller wants the document
/// as it was (returnNew false).
pub fn update(collection: &str, fields: &[(String, i8)], key: &[Bson], update: &Update) -> Document {
    let q = key_filter(fields, key, &update.filter);
    let u = update_document(update);
    if update.return_before {
        return doc! {"findAndModify": collection, "query": q, "update": u, "new": false, "upsert": update.upsert};
    }
    doc! {"update": collection, "updates": [{"q": q, "u": u, "upsert": update.upsert, "multi": false}], "ordered": true}
}

pub fn delete(collection: &str, fields: &[(String, i8)], key: &[Bson], filter: &Filter) -> Document {
    doc! {"delete": collection, "deletes": [{"q": key_filter(fields, key, filter), "limit": 1}], "ordered": true}
}

/// findOne: a find of at most one document in a single batch.
pub fn get(collection: &str, fields: &[(String, i8)], key: &[Bson]) -> Document {
    doc! {"find": collection, "filter": key_filter(fields, key, &Vec::new()), "limit": 1, "singleBatch": true}
}

pub fn get_many(collection: &str, spec: &IndexSpec, prefix: &[Bson], last_values: &[Bson]) -> Result<Document> {
    let fields = index_fields(Some(spec));
    let mut flt = key_filter(&fields, prefix, &Vec::new());
    let last = fields.get(prefix.len()).ok_or_else(|| Error::other(format!("index {} has no field after the prefix", spec.name)))?;
    flt.insert(last.0.clone(), doc! {"$in": last_values.to_vec()});
    Ok(doc! {"find": collection, "filter": flt, "sort": sort(&fields, false), "hint": spec.name.clone()})
}

pub fn scan(collection: &str, spec: Option<&IndexSpec>, range: &Range) -> Result<Document> {
    let fields = index_fields(spec);
    let mut cmd = doc! {"find": collection, "filter": range_filter(&fields, range)?};
    if !range.as_or {
        // As the clients wrote them: a range sorted in its index's order; iibench's $or neither.
        cmd.insert("sort", sort(&fields, range.reverse));
        cmd.insert("hint", hint(spec));
    }
    if let Some(projected) = &range.fields {
        let mut projection: Document = projected.iter().map(|f| (f.clone(), Bson::Int32(1))).collect();
        projection.insert("_id", 0);
        cmd.insert("projection", projection);
    }
    if range.skip > 0 {
        cmd.insert("skip", range.skip as i64);
    }
    if let Some(limit) = range.limit {
        cmd.insert("limit", limit as i64);
    }
    Ok(cmd)
}

/// A count; with no query at all, the collection's count as clients asked for it (no hint: a
/// hinted count is planned, an unhinted empty one is answered from the collection's metadata).
pub fn count(collection: &str, spec: Option<&IndexSpec>, range: &Range) -> Result<Document> {
    let fields = index_fields(spec);
    let mut cmd = doc! {"count": collection, "query": range_filter(&fields, range)?};
    let whole = spec.is_none() && range.prefix.is_empty() && range.low.is_none() && range.high.is_none();
    if !whole {
        cmd.insert("hint", hint(spec));
    }
    if let Some(limit) = range.limit {
        cmd.insert("limit", limit as i64);
    }
    if range.skip > 0 {
        cmd.insert("skip", range.skip as i64);
    }
    Ok(cmd)
}

/// The count of a `$in` (LinkbenchX's multigetLinks counted its cursor: DBCursor.count()).
pub fn count_in(collection: &str, spec: &IndexSpec, prefix: &[Bson], last_values: &[Bson]) -> Result<Document> {
    let find = get_many(collection, spec, prefix, last_values)?;
    Ok(doc! {"count": collection, "query": find.get_document("filter")?.clone(), "hint": spec.name.clone()})
}

/// A page of an index walked in order: entries at or after the last one returned (`after`:
/// its key values), skipping the `seen` entries with that same key already returned (they come
/// first again, in the server's record order).
pub fn index_page(collection: &str, spec: Option<&IndexSpec>, after: Option<&PageMark>, n: usize, fetch: bool) -> Result<Document> {
    let fields = index_fields(spec);
    let filter = match after {
        None => Document::new(),
        Some(mark) => range_filter(&fields, &Range { low: Some(mark.key.clone()), ..Default::default() })?,
    };
    let mut cmd = doc! {"find": collection, "filter": filter, "sort": sort(&fields, false), "hint": hint(spec),
                        "limit": n as i64};
    if let Some(mark) = after.filter(|m| m.seen > 0) {
        cmd.insert("skip", mark.seen as i64);
    }
    if !fetch {
        let mut projection: Document = fields.iter().map(|(f, _)| (f.clone(), Bson::Int32(1))).collect();
        if !fields.iter().any(|(f, _)| f == "_id") {
            projection.insert("_id", 0);
        }
        cmd.insert("projection", projection);
    }
    Ok(cmd)
}

/// Where a server's index page continues: the last key returned and how many entries with that
/// key were returned so far. Travels as the opaque mark of calls::PageEntry (BSON bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct PageMark {
    pub key: Vec<Bson>,
    pub seen: u64,
}

impl PageMark {
    pub fn encode(&self) -> Vec<u8> {
        doc! {"k": self.key.clone(), "seen": self.seen as i64}.to_vec().unwrap_or_default()
    }
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let d = Document::from_reader(bytes)?;
        let key = d.get_array("k").map_err(|e| Error::other(format!("an index page mark: {e}")))?.clone();
        Ok(PageMark { key, seen: d.get_i64("seen").unwrap_or(0) as u64 })
    }
}

// -- the replies -------------------------------------------------------------------------------

/// A command's failure as the runner's error: duplicate keys (11000, 11001) are their own kind,
/// so workloads that retry them can.
pub fn failure(code: i32, message: &str) -> Error {
    match code {
        11000 | 11001 => Error::new(Kind::DuplicateKey, format!("E{code} {message}")),
        112 => Error::conflict(format!("WriteConflict: {message}")),
        _ => Error::other(format!("server error {code}: {message}")),
    }
}

fn number(reply: &Document, field: &str) -> i64 {
    crate::calls::as_i64(reply.get(field)).unwrap_or(0)
}

/// The command's own errors (ok: 0), then a write command's writeErrors and writeConcernError.
pub fn check(reply: &Document) -> Result<()> {
    let ok = reply.get("ok").map(|v| crate::calls::as_i64(Some(v)).unwrap_or(if matches!(v, Bson::Double(d) if *d == 1.0) { 1 } else { 0 }));
    if ok == Some(0) {
        return Err(failure(number(reply, "code") as i32, reply.get_str("errmsg").unwrap_or("command failed")));
    }
    if let Ok(errors) = reply.get_array("writeErrors") {
        if let Some(Bson::Document(first)) = errors.first() {
            return Err(failure(number(first, "code") as i32, first.get_str("errmsg").unwrap_or("write error")));
        }
    }
    if let Ok(wce) = reply.get_document("writeConcernError") {
        return Err(failure(number(wce, "code") as i32, wce.get_str("errmsg").unwrap_or("write concern error")));
    }
    Ok(())
}

/// An insert's reply: how many documents it wrote (all of them when unacknowledged).
pub fn inserted(reply: &Document, sent: usize) -> Result<usize> {
    check(reply)?;
    Ok(if reply.contains_key("n") { number(reply, "n") as usize } else { sent })
}

/// An update statement's or findAndModify's reply as the Store's UpdateResult (`upsert`: what
/// the update asked for).
pub fn updated(reply: &Document, upsert: bool) -> Result<UpdateResult> {
    check(reply)?;
    if reply.contains_key("lastErrorObject") || reply.contains_key("value") {
        // findAndModify: the document before the update is its value (null when none matched);
        // some servers leave lastErrorObject out, and then no match under upsert was an insert.
        let before = reply.get_document("value").ok().cloned();
        let upserted = match reply.get_document("lastErrorObject") {
            Ok(last) => last.get("upserted").is_some(),
            Err(_) => upsert && before.is_none(),
        };
        return Ok(UpdateResult { matched: before.is_some(), upserted, before, acknowledged: true });
    }
    if !reply.contains_key("n") {
        return Ok(UpdateResult { acknowledged: false, ..Default::default() });
    }
    let upserted = reply.get_array("upserted").map(|u| !u.is_empty()).unwrap_or(false);
    Ok(UpdateResult { matched: !upserted && number(reply, "n") > 0, upserted, before: None, acknowledged: true })
}

/// A delete's reply: whether it removed the document (false when unacknowledged).
pub fn deleted(reply: &Document) -> Result<bool> {
    check(reply)?;
    Ok(number(reply, "n") > 0)
}

/// A count's reply.
pub fn counted(reply: &Document) -> Result<usize> {
    check(reply)?;
    Ok(number(reply, "n").max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::int;

    fn fields(names: &[&str]) -> Vec<(String, i8)> {
        names.iter().map(|n| (n.to_string(), 1)).collect()
    }

    #[test]
    fn a_tuple_bound_is_iibench_s_or_of_three_clauses() {
        let f = fields(&["price", "dateandtime", "customerid"]);
        let range = Range { low: Some(vec![Bson::Double(1.5), int(7), int(3)]), ..Default::default() };
        let flt = range_filter(&f, &range).unwrap();
        assert_eq!(flt, doc! {"$or": [
            {"price": 1.5, "dateandtime": 7, "customerid": {"$gte": 3}},
            {"price": 1.5, "dateandtime": {"$gt": 7}},
            {"price": {"$gt": 1.5}},
        ]});
    }

    #[test]
    fn a_prefix_and_a_scalar_range_bound_the_next_field() {
        let f = fields(&["id1", "link_type", "visibility", "time"]);
        let range = Range { prefix: vec![int(5), int(9), int(1)], low: Some(vec![int(0)]), high: Some(vec![int(100)]), ..Default::default() };
        assert_eq!(range_filter(&f, &range).unwrap(),
                   doc! {"id1": 5, "link_type": 9, "visibility": 1, "time": {"$gte": 0, "$lte": 100}});
    }

    #[test]
    fn update_replies_say_matched_upserted_or_unacknowledged() {
        let r = updated(&doc! {"n": 1, "nModified": 1, "ok": 1.0}, false).unwrap();
        assert!(r.matched && !r.upserted && r.acknowledged);
        let r = updated(&doc! {"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 3}], "ok": 1.0}, true).unwrap();
        assert!(!r.matched && r.upserted);
        let r = updated(&doc! {"ok": 1.0}, false).unwrap();
        assert!(!r.acknowledged);
        let r = updated(&doc! {"value": null, "ok": 1.0}, true).unwrap();
        assert!(!r.matched && r.upserted, "a findAndModify upsert with no lastErrorObject inserted");
        let e = inserted(&doc! {"n": 0, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}], "ok": 1.0}, 1).unwrap_err();
        assert_eq!(e.kind, Kind::DuplicateKey);
    }

    #[test]
    fn get_links_list_counts_with_its_finds_query_hint_limit_and_skip() {
        // LinkbenchX getLinkListImpl: linkResult.size() before iterating, the count command
        // the 2.x Java driver sent for a cursor's size (DBCursor.size: query, hint, limit and
        // skip applied), then the find itself.
        let spec = IndexSpec::new("id1_type", &[("id1", 1), ("link_type", 1), ("visibility", 1), ("time", 1),
                                                ("id2", 1), ("version", 1), ("data", 1)], false);
        let range = Range { prefix: vec![int(5), int(123456789), int(1)], low: Some(vec![int(0)]),
                            high: Some(vec![int(i64::MAX)]), reverse: true, skip: 10, limit: Some(10000),
                            ..Default::default() };
        let count = super::count("link", Some(&spec), &range).unwrap();
        let find = scan("link", Some(&spec), &range).unwrap();
        assert_eq!(count.get_str("count").unwrap(), "link");
        assert_eq!(find.get_str("find").unwrap(), "link");
        for (in_count, in_find) in [("query", "filter"), ("hint", "hint"), ("limit", "limit"), ("skip", "skip")] {
            assert_eq!(count.get(in_count), find.get(in_find), "{in_count} / {in_find}");
        }
    }

    #[test]
    fn a_page_mark_round_trips() {
        let mark = PageMark { key: vec![int(1), Bson::String("x".into())], seen: 2 };
        assert_eq!(PageMark::decode(&mark.encode()).unwrap(), mark);
    }
}
