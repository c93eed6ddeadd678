//! Capped collections: a byte budget, oldest documents first to go.
//!
//! Two ways, as the posts' engines did it:
//! - delete oldest (WiredTiger, RocksDB): an insert that takes the collection past its size is
//!   followed, after its commit, by a transaction of its own that deletes from the oldest
//!   record forward (at most 20000 documents a pass), starting at a hint kept in memory, as
//!   mongod's cappedDeleteAsNeeded does (wiredtiger_record_store.cpp, rocks_record_store.cpp at
//!   r3.2.0). The oplog is trimmed the same way by a background thread (oplog.rs).
//! - a ring (the mmap stand-in): the budget is a circular buffer of byte offsets, allocated at
//!   creation; each insert takes the next offset and overwrites in place whatever older
//!   documents occupied that space, as MMAPv1's capped extents were reused
//!   (record_store_v1_capped.cpp at r3.0.7). The record id is the offset (+1).
use std::sync::Mutex;

use serde_json::Value;

use super::{document, keys, Collection, Ctx};
use crate::engines::{Session, Table};
use crate::error::{Error, Result};

/// mongod deletes at most this many documents per capped-delete pass.
const MAX_DELETES_PER_PASS: usize = 20_000;

#[derive(Default)]
struct State {
    bytes: i64,
    count: i64,
    /// Delete-oldest: the record id the next pass starts from.
    oldest: i64,
    /// Ring: the offset the next insert goes to.
    ring_pos: i64,
}

pub struct Capped {
    pub cap_bytes: i64,
    ring: bool,
    /// Trimmed by a background thread (the oplog on engines that delete): inserts only count.
    pub background: bool,
    state: Mutex<State>,
}

impl Capped {
    pub fn new(name: &str, cap_bytes: i64, ring: bool, meta: &Value) -> Result<Self> {
        if cap_bytes < 1 {
            return Err(Error::other(format!("capped collection {name:?}: size must be positive (got {cap_bytes})")));
        }
        let state = State { ring_pos: meta["ring_pos"].as_i64().unwrap_or(0), ..Default::default() };
        Ok(Capped { cap_bytes, ring, background: name == super::oplog::NAME && !ring, state: Mutex::new(state) })
    }

    pub fn is_ring(&self) -> bool {
        self.ring
    }

    /// Counts what the table holds (after a reopen).
    pub fn recount(&self, session: &mut dyn Session, records: Table) -> Result<()> {
        let mut state = self.state.lock().unwrap();
        let (mut bytes, mut count, mut first) = (0i64, 0i64, None);
        session.scan(records, b"", None, false, &mut |k, v| {
            bytes += v.len() as i64;
            count += 1;
            first.get_or_insert(keys::record_id(k));
            true
        })?;
        state.bytes = bytes;
        state.count = count;
        state.oldest = first.unwrap_or(1);
        Ok(())
    }

    /// Accounts an insert; true when the collection is now past its size and must delete.
    pub fn added(&self, bytes: i64) -> bool {
        if self.ring {
            return false; // a ring made room before the insert
        }
        let mut state = self.state.lock().unwrap();
        state.bytes += bytes;
        state.count += 1;
        !self.background && state.bytes > self.cap_bytes
    }

    pub fn over(&self) -> bool {
        self.state.lock().unwrap().bytes > self.cap_bytes
    }

    pub fn save_state(&self, meta: &mut Value) {
        if self.ring {
            meta["ring_pos"] = Value::from(self.state.lock().unwrap().ring_pos);
        }
    }

    pub fn size(&self) -> (i64, i64) {
        let state = self.state.lock().unwrap();
        (state.bytes, state.count)
    }
}

/// Deletes the oldest documents until the collection fits, in transactions of its own. One
/// deleter at a time: a thread that finds another deleting leaves it the work (MongoRocks'
/// try_lock).
pub fn delete_oldest(ctx: &mut Ctx, coll: &Collection) -> Result<()> {
    let capped = coll.capped.as_ref().unwrap();
    let Ok(mut state) = capped.state.try_lock() else { return Ok(()) };
    while state.bytes > capped.cap_bytes {
        let excess = state.bytes - capped.cap_bytes;
        let start = keys::record_key(state.oldest);
        let (freed, removed, next) = ctx.transaction(|c| {
            let mut victims = Vec::new();
            let mut freed = 0i64;
            c.kv.scan(coll.records, &start, None, false, &mut |k, v| {
                if freed >= excess || victims.len() >= MAX_DELETES_PER_PASS {
                    return false;
                }
                freed += v.len() as i64;
                victims.push((keys::record_id(k), v.to_vec()));
                true
            })?;
            for (rid, raw) in &victims {
                c.remove_record(coll, *rid, &document::decode(raw)?)?;
            }
            Ok((freed, victims.len() as i64, victims.last().map(|(rid, _)| rid + 1)))
        })?;
        let Some(next) = next else { break };
        state.bytes -= freed;
        state.count -= removed;
        state.oldest = next;
    }
    Ok(())
}

/// Ring: the record id for a document of `size` bytes, after deleting the older documents
/// whose space it takes. Runs inside the insert's transaction.
pub fn ring_place(ctx: &mut Ctx, coll: &Collection, size: i64) -> Result<i64> {
    let capped = coll.capped.as_ref().unwrap();
    if size > capped.cap_bytes {
        return Err(Error::other(format!("a document of {size} bytes does not fit capped collection {:?} of {} bytes",
                                        coll.name, capped.cap_bytes)));
    }
    let mut state = capped.state.lock().unwrap();
    let mut pos = state.ring_pos;
    let mut spans = Vec::new();
    if pos + size > capped.cap_bytes {
        // Wrap to the start, as MMAPv1 went back to its first extent; what lay past the last
        // document of the lap ends is the oldest data and goes first.
        spans.push((pos, capped.cap_bytes));
        pos = 0;
    }
    spans.push((pos, pos + size));
    let mut victims = Vec::new();
    for (from, to) in spans {
        ctx.kv.scan(coll.records, &keys::record_key(from + 1), Some(&keys::record_key(to + 1)), false, &mut |k, v| {
            victims.push((keys::record_id(k), v.to_vec()));
            true
        })?;
    }
    for (rid, raw) in &victims {
        let doc = document::decode(raw)?;
        if rid - 1 == pos {
            // Overwritten in place below: only its index entries go.
            if let Some(id) = doc.get("_id") {
                ctx.delete_id_entry(coll, id)?;
            }
            let indexes = coll.indexes.read().unwrap().clone();
            for index in &indexes {
                ctx.delete_index_entry(index, &doc, *rid)?;
            }
        } else {
            ctx.remove_record(coll, *rid, &doc)?;
        }
        state.bytes -= raw.len() as i64;
        state.count -= 1;
    }
    state.bytes += size;
    state.count += 1;
    state.ring_pos = pos + size;
    Ok(pos + 1)
}

/// Record ids oldest first: ascending, or for a ring from the write position on, wrapping.
pub fn natural_order(ctx: &mut Ctx, coll: &Collection) -> Result<Vec<i64>> {
    let mut rids = Vec::new();
    ctx.kv.scan(coll.records, b"", None, false, &mut |k, _| {
        rids.push(keys::record_id(k));
        true
    })?;
    if let Some(capped) = &coll.capped {
        if capped.ring {
            let pos = capped.state.lock().unwrap().ring_pos;
            let split = rids.partition_point(|rid| rid - 1 < pos);
            rids.rotate_left(split);
        }
    }
    Ok(rids)
}
