//! LinkBench's ten operations as Store calls, in two count semantics (the `counts` param):
//! - `exact`: MySQL's reference semantics (LinkStoreMysql): a link and its count change in one
//!   transaction, so counts always equal the visible links;
//! - `linkbenchx`: what LinkbenchX's MongoDB store did against MongoDB 3.x
//!   (Percona-Lab/linkbenchX at 84aeea1, src/main/java/com/percona/LinkBench/LinkStoreMongoDBv2.java,
//!   addLinkImpl / deleteLinkImpl / addLinksNoCount / addBulkCountsImpl; its
//!   transaction_support_level=1 asks for TokuMX's MVCC, which MongoDB 3.x refuses): separate
//!   round trips, no transaction, a replacement upsert of the count document and a `$inc` in
//!   which the second `put("$inc", ...)` overwrites the first, so an existing count loses its
//!   `count` field; the consistency check reports the mismatches this leaves, as the post warned.
use bson::{doc, oid::ObjectId, Bson, Document, RawDocumentBuf};

use crate::error::Result;
use crate::calls::{int, Assign, Cond, Update};
use crate::calls::{IndexSpec, Range, Store};

pub const NODE: &str = "node";
pub const LINK: &str = "link";
pub const COUNT: &str = "count";
pub const LINK_PK: &str = "link_pk";
pub const LINK_LIST: &str = "id1_type";
pub const COUNT_PK: &str = "count_pk";
pub const NODE_TYPE: i64 = 2048;
pub const VISIBLE: i64 = 1;
pub const HIDDEN: i64 = 0;
pub const RANGE_LIMIT: usize = 10000;
pub const MAX_TIME: i64 = i64::MAX;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Counts {
    Exact,
    LinkbenchX,
}

pub fn create_schema(ctx: &mut dyn Store) -> Result<()> {
    for name in [NODE, LINK, COUNT] {
        ctx.create_collection(name, None)?;
    }
    ctx.create_index(LINK, IndexSpec::new(LINK_PK, &[("link_type", 1), ("id1", 1), ("id2", 1)], true))?;
    // A copy of MySQL's covering id1_type key, as LinkbenchX created it.
    ctx.create_index(LINK, IndexSpec::new(LINK_LIST, &[("id1", 1), ("link_type", 1), ("visibility", 1), ("time", 1),
                                                       ("id2", 1), ("version", 1), ("data", 1)], false))?;
    ctx.create_index(COUNT, IndexSpec::new(COUNT_PK, &[("id", 1), ("link_type", 1)], true))?;
    Ok(())
}

/// A link as the requesters make it (the document minus `_id`).
#[derive(Clone, Debug)]
pub struct Link {
    pub link_type: i64,
    pub id1: i64,
    pub id2: i64,
    pub visibility: i64,
    pub time: i64,
    pub version: i64,
    pub data: Vec<u8>,
}

impl Link {
    pub fn document(&self, id: ObjectId) -> Document {
        doc! {"_id": id, "link_type": int(self.link_type), "id1": int(self.id1), "id2": int(self.id2),
              "visibility": int(self.visibility), "data": crate::calls::bytes(self.data.clone()),
              "time": int(self.time), "version": int(self.version)}
    }
}

fn field_i64(doc: &RawDocumentBuf, name: &str) -> Option<i64> {
    match doc.get(name).ok()?? {
        bson::RawBsonRef::Int32(v) => Some(v as i64),
        bson::RawBsonRef::Int64(v) => Some(v),
        bson::RawBsonRef::Double(v) => Some(v as i64),
        _ => None,
    }
}

fn object_id(doc: &RawDocumentBuf) -> Bson {
    doc.get("_id").ok().flatten().and_then(|v| Bson::try_from(v).ok()).unwrap_or(Bson::Null)
}

/// MySQL: INSERT counttable ... ON DUPLICATE KEY UPDATE count=count+delta, version=version+1.
fn change_count(ctx: &mut dyn Store, id1: i64, link_type: i64, delta: i64, now_ms: i64) -> Result<()> {
    let key = [int(id1), int(link_type)];
    match ctx.get(COUNT, Some(COUNT_PK), &key)? {
        None => {
            ctx.insert_many(COUNT, &[doc! {"_id": ObjectId::new(), "id": int(id1), "link_type": int(link_type),
                                          "count": int(delta.max(0)), "time": int(now_ms), "version": 0}])?;
        }
        Some(found) => {
            let count = (field_i64(&found, "count").unwrap_or(0) + delta).max(0); // IF(count=0, 0, count-1)
            ctx.update(COUNT, None, &[object_id(&found)], &Update {
                set: Some(Assign::of([("count", int(count)), ("time", int(now_ms))])),
                inc: Some(Assign::of([("version", Bson::Int32(1))])),
                ..Default::default()
            })?;
        }
    }
    Ok(())
}

/// ADD_LINK and UPDATE_LINK (LinkBench calls addLink for both). Returns 1 if the count changed.
pub fn add_link(ctx: &mut dyn Store, counts: Counts, link: &Link) -> Result<u64> {
    match counts {
        Counts::Exact => ctx.transaction(|c| {
            let key = [int(link.link_type), int(link.id1), int(link.id2)];
            let delta = match c.get(LINK, Some(LINK_PK), &key)? {
                None => {
                    c.insert_many(LINK, &[link.document(ObjectId::new())])?;
                    1
                }
                Some(before) => {
                    c.update(LINK, None, &[object_id(&before)], &Update {
                        set: Some(Assign::of([("visibility", int(link.visibility)),
                                              ("data", crate::calls::bytes(link.data.clone())),
                                              ("time", int(link.time)), ("version", int(link.version))])),
                        ..Default::default()
                    })?;
                    (field_i64(&before, "visibility") == Some(HIDDEN) && link.visibility == VISIBLE) as i64
                }
            };
            if delta != 0 {
                change_count(c, link.id1, link.link_type, delta, link.time)?;
            }
            Ok(delta as u64)
        }),
        Counts::LinkbenchX => add_link_linkbenchx(ctx, link),
    }
}

fn link_insert_fields(link: &Link) -> Assign {
    Assign::of([("id1", int(link.id1)), ("id2", int(link.id2)), ("link_type", int(link.link_type)),
                ("data", crate::calls::bytes(link.data.clone())), ("time", int(link.time)),
                ("version", int(link.version))])
}

/// addLinksNoCount for one link: the upsert by primary key; 1 if it inserted, 2 if the link
/// existed (getN() is 1 and isUpdateOfExisting() adds one).
fn upsert_link(ctx: &mut dyn Store, link: &Link) -> Result<i64> {
    let key = [int(link.link_type), int(link.id1), int(link.id2)];
    let result = ctx.update(LINK, Some(LINK_PK), &key, &Update {
        set_on_insert: Some(link_insert_fields(link)),
        set: Some(Assign::of([("visibility", int(link.visibility))])),
        upsert: true,
        ..Default::default()
    })?;
    Ok(if result.upserted { 1 } else { 2 })
}

fn add_link_linkbenchx(ctx: &mut dyn Store, link: &Link) -> Result<u64> {
    let nrows = upsert_link(ctx, link)?;
    let visible = link.visibility == VISIBLE;
    // nrows 1: inserted (+1 if visible); 2: existed, taken as "visibility changed".
    let update_count: i64 = match (nrows, visible) { (1, true) => 1, (1, false) => 0, (_, true) => 1, (_, false) => -1 };
    if update_count != 0 {
        let key = [int(link.id1), int(link.link_type)];
        // countColl.update(countKey, {id, link_type, time}, upsert): a replacement.
        let replaced = ctx.update(COUNT, Some(COUNT_PK), &key, &Update {
            replace: Some(Assign::of([("id", int(link.id1)), ("link_type", int(link.link_type)),
                                      ("time", int(crate::workloads::wall_ms()))])),
            upsert: true,
            ..Default::default()
        })?;
        // The second put("$inc", ...) replaces the first: an existing count gets version only.
        let inc = if replaced.matched {
            Assign::of([("version", Bson::Int32(1))])
        } else {
            Assign::of([("count", int(if update_count < 0 { 0 } else { 1 }))])
        };
        ctx.update(COUNT, Some(COUNT_PK), &key, &Update { inc: Some(inc), ..Default::default() })?;
    }
    if nrows == 2 {
        ctx.update(LINK, Some(LINK_PK), &[int(link.link_type), int(link.id1), int(link.id2)], &Update {
            set: Some(Assign::of([("visibility", int(link.visibility)), ("data", crate::calls::bytes(link.data.clone())),
                                  ("time", int(link.time)), ("version", int(link.version))])),
            ..Default::default()
        })?;
    }
    Ok((nrows == 1) as u64)
}

/// The load's link write: a plain insert (exact) or LinkbenchX's bulk upsert by primary key.
pub fn load_link(ctx: &mut dyn Store, counts: Counts, link: &Link) -> Result<()> {
    match counts {
        Counts::Exact => unreachable!("the exact load inserts links in batches"),
        Counts::LinkbenchX => upsert_link(ctx, link).map(|_| ()),
    }
}

/// The load's count write under LinkbenchX: a replaceOne upsert by (id, link_type).
pub fn load_count(ctx: &mut dyn Store, id1: i64, link_type: i64, count: i64, time: i64) -> Result<()> {
    ctx.update(COUNT, Some(COUNT_PK), &[int(id1), int(link_type)], &Update {
        replace: Some(Assign::of([("id", int(id1)), ("link_type", int(link_type)), ("count", int(count)), ("time", int(time)),
                                  ("version", Bson::Int32(0))])),
        upsert: true,
        ..Default::default()
    })
    .map(|_| ())
}

/// DELETE_LINK without expunge: hide a visible link and decrement its count. `now_ms` is the
/// count's new time under exact counts; LinkbenchX read the clock itself.
pub fn delete_link(ctx: &mut dyn Store, counts: Counts, id1: i64, link_type: i64, id2: i64, now_ms: i64) -> Result<u64> {
    let key = [int(link_type), int(id1), int(id2)];
    match counts {
        Counts::Exact => ctx.transaction(|c| {
            let Some(before) = c.get(LINK, Some(LINK_PK), &key)? else { return Ok(0) };
            if field_i64(&before, "visibility") != Some(VISIBLE) {
                return Ok(0);
            }
            c.update(LINK, None, &[object_id(&before)], &Update { set: Some(Assign::of([("visibility", int(HIDDEN))])), ..Default::default() })?;
            change_count(c, id1, link_type, -1, now_ms)?;
            Ok(1)
        }),
        Counts::LinkbenchX => {
            let Some(before) = ctx.get(LINK, Some(LINK_PK), &key)? else { return Ok(0) };
            if field_i64(&before, "visibility") == Some(HIDDEN) {
                return Ok(0);
            }
            ctx.update(LINK, None, &[object_id(&before)], &Update { set: Some(Assign::of([("visibility", int(HIDDEN))])), ..Default::default() })?;
            let count_key = [int(id1), int(link_type)];
            let replaced = ctx.update(COUNT, Some(COUNT_PK), &count_key, &Update {
                replace: Some(Assign::of([("id", int(id1)), ("link_type", int(link_type)),
                                          ("time", int(crate::workloads::wall_ms()))])),
                upsert: true,
                ..Default::default()
            })?;
            let inc = Assign::of([("version", Bson::Int32(if replaced.matched { 1 } else { 0 }))]);
            ctx.update(COUNT, Some(COUNT_PK), &count_key, &Update { inc: Some(inc), ..Default::default() })?;
            if replaced.matched {
                ctx.update(COUNT, Some(COUNT_PK), &count_key, &Update {
                    set: Some(Assign::of([("count", Bson::Int32(0))])),
                    filter: vec![("count".into(), Cond::Lt(Bson::Int32(0)))],
                    ..Default::default()
                })?;
            }
            ctx.get(COUNT, Some(COUNT_PK), &count_key)?; // to learn the count's _id, as it did
            Ok(1)
        }
    }
}

pub fn count_links(ctx: &mut dyn Store, id1: i64, link_type: i64) -> Result<u64> {
    Ok(match ctx.get(COUNT, Some(COUNT_PK), &[int(id1), int(link_type)])? {
        None => 0,
        Some(found) => field_i64(&found, "count").unwrap_or(0).max(0) as u64,
    })
}

/// Visible links of (id1, type) newest first: the id1_type range scan. LinkbenchX first asked
/// for the cursor's size (getLinkListImpl: `linkResult.size()`, a count command with the find's
/// limit and skip, which mongod answers with a COUNT_SCAN of the same index range) and ran the
/// find only when it was not 0.
pub fn get_link_list(ctx: &mut dyn Store, counts: Counts, id1: i64, link_type: i64, max_time: i64, offset: usize)
                     -> Result<Vec<RawDocumentBuf>> {
    let range = Range {
        prefix: vec![int(id1), int(link_type), int(VISIBLE)],
        low: Some(vec![int(0)]),
        high: Some(vec![int(max_time)]),
        reverse: true,
        skip: offset,
        limit: Some(RANGE_LIMIT),
        ..Default::default()
    };
    if counts == Counts::LinkbenchX && ctx.count(LINK, Some(LINK_LIST), &range)? == 0 {
        return Ok(Vec::new());
    }
    ctx.scan(LINK, Some(LINK_LIST), &range)
}

pub fn link_time(doc: &RawDocumentBuf) -> i64 {
    field_i64(doc, "time").unwrap_or(0)
}

/// MULTIGET_LINK: no visibility filter, as in MySQL and LinkbenchX. LinkbenchX counted the
/// cursor first (multigetLinksImpl: `linkResult.count()`, a count command without limit).
pub fn multiget_links(ctx: &mut dyn Store, counts: Counts, id1: i64, link_type: i64, id2s: &[i64]) -> Result<u64> {
    let values: Vec<Bson> = id2s.iter().map(|v| int(*v)).collect();
    let prefix = [int(link_type), int(id1)];
    if counts == Counts::LinkbenchX {
        ctx.count_in(LINK, LINK_PK, &prefix, &values)?;
    }
    Ok(ctx.get_many(LINK, LINK_PK, &prefix, &values)?.len() as u64)
}

pub fn add_node(ctx: &mut dyn Store, node: &Document) -> Result<u64> {
    ctx.insert_many(NODE, std::slice::from_ref(node)).map(|n| n as u64)
}

pub fn update_node(ctx: &mut dyn Store, node_id: i64, version: i64, time_s: i64, data: Vec<u8>) -> Result<u64> {
    let result = ctx.update(NODE, None, &[int(node_id)], &Update {
        set: Some(Assign::of([("version", int(version)), ("time", int(time_s)), ("data", crate::calls::bytes(data))])),
        filter: vec![("type".into(), Cond::Eq(int(NODE_TYPE)))],
        ..Default::default()
    })?;
    Ok(result.matched as u64)
}

pub fn delete_node(ctx: &mut dyn Store, node_id: i64) -> Result<u64> {
    Ok(ctx.delete(NODE, None, &[int(node_id)], &vec![("type".into(), Cond::Eq(int(NODE_TYPE)))])? as u64)
}

pub fn get_node(ctx: &mut dyn Store, node_id: i64) -> Result<u64> {
    Ok(match ctx.get(NODE, None, &[int(node_id)])? {
        Some(node) => (field_i64(&node, "type") == Some(NODE_TYPE)) as u64,
        None => 0,
    })
}
