//! Capped collections: a byte budget, oldest documents first to go.
//!
//! Two ways, as the posts' engines did it:
//! - delete oldest (WiredTiger, RocksDB): an insert that takes the collection past its size is
//!   followed, after its commit, by a transaction of its own that deletes from the oldest
//!   record forward (at most 20000 documents a pass), starting at a hint kept in memory and
//!   stopping before a record still being written, as mongod's cappedDeleteAsNeeded does
//!   (wiredtiger_record_store.cpp, rocks_record_store.cpp at r3.2.0). The oplog is trimmed the
//!   same way by a background thread (oplog.rs).
//! - a ring (the mmap stand-in): the budget is a circular buffer of byte offsets. MMAPv1 added
//!   extents at creation until they held the capped size (mmap_v1/mmap_v1_database_catalog_entry.cpp,
//!   MMAPV1DatabaseCatalogEntry::createCollection in the r3.0 series), and each insert took space at the
//!   current extent's write position, freeing the oldest records there first (mmap_v1/
//!   record_store_v1_capped.cpp, CappedRecordStoreV1::allocRecord at r3.0.7; a document larger
//!   than the collection is refused). Here the record id is the offset (+1); creation writes
//!   filler records over the whole budget, so the engine's file holds it from the start, and an
//!   insert takes the next offset and overwrites whatever fillers or older documents lay there.
//!   MongoRocks, by contrast, counts what the collection holds after an insert and deletes the
//!   oldest in a pass of its own (rocks_record_store.cpp, cappedDeleteAsNeeded at r3.2.0).
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{document, keys, Collection, Ctx};
use crate::engines::{Engine, Session, Table};
use crate::error::{Error, Result};

/// Documents deleted per transaction. mongod deletes up to 20000 a pass, but one transaction
/// that large overflows a scaled-down engine cache (a 16 MB WiredTiger cache rolled it back over
/// and over), so a pass here is made of transactions of this many.
const DELETES_PER_TRANSACTION: usize = 1_000;

/// A ring's preallocation: filler records of this many bytes (the last one shorter), written
/// in transactions of FILLERS_PER_TRANSACTION so a large oplog never fills one transaction.
const FILLER_BYTES: i64 = 16 << 10;
const FILLERS_PER_TRANSACTION: i64 = 1_024;

/// A filler holds zeros: a BSON document starts with its length, never 0.
pub fn is_filler(value: &[u8]) -> bool {
    value.len() >= 4 && value[..4] == [0, 0, 0, 0]
}

/// Writes a new ring's fillers over [0, cap): what MMAPv1's extents were at creation.
pub fn preallocate(engine: &dyn Engine, records: Table, cap_bytes: i64) -> Result<()> {
    let zeros = vec![0u8; FILLER_BYTES as usize];
    let mut offset = 0i64;
    while offset < cap_bytes {
        let mut session = engine.session()?;
        session.begin(true)?;
        let written = (|| -> Result<()> {
            for _ in 0..FILLERS_PER_TRANSACTION {
                if offset >= cap_bytes {
                    break;
                }
                let len = FILLER_BYTES.min(cap_bytes - offset).max(4);
                session.put(records, &keys::record_key(offset + 1), &zeros[..len as usize])?;
                offset += FILLER_BYTES;
            }
            Ok(())
        })();
        match written {
            Ok(()) => session.commit()?,
            Err(e) => {
                session.rollback();
                return Err(e);
            }
        }
    }
    Ok(())
}

pub struct Capped {
    pub cap_bytes: i64,
    ring: bool,
    /// Trimmed by a background thread (the oplog on engines that delete): inserts only count.
    pub background: bool,
    /// What the collection holds; inserts add without waiting for a deleter.
    bytes: AtomicI64,
    count: AtomicI64,
    /// Delete-oldest: held by the one thread deleting; the record id its next pass starts from.
    deleter: Mutex<i64>,
    /// Record ids allocated to transactions still open, oldest first (MongoRocks'
    /// CappedVisibilityManager, _uncommittedRecords): a deleter that starts each pass where the
    /// last one ended must not pass one of them, or it would commit behind that start and stay.
    open: Mutex<VecDeque<i64>>,
    /// Ring: the offset the next insert goes to.
    ring_pos: Mutex<i64>,
}

impl Capped {
    pub fn new(name: &str, cap_bytes: i64, ring: bool, meta: &Value) -> Result<Self> {
        if cap_bytes < 1 {
            return Err(Error::other(format!("capped collection {name:?}: size must be positive (got {cap_bytes})")));
        }
        Ok(Capped { cap_bytes, ring, background: name == super::oplog::NAME && !ring, bytes: AtomicI64::new(0),
                    count: AtomicI64::new(0), deleter: Mutex::new(1), open: Mutex::new(VecDeque::new()),
                    ring_pos: Mutex::new(meta["ring_pos"].as_i64().unwrap_or(0)) })
    }

    pub fn is_ring(&self) -> bool {
        self.ring
    }

    /// A new record's id, marked open until its transaction calls `finished`; allocated under
    /// the lock, so the open ids stay in order (getNextAndAddUncommittedRecord).
    pub fn allocate(&self, next_id: &AtomicI64) -> i64 {
        let mut open = self.open.lock().unwrap();
        let rid = next_id.fetch_add(1, Ordering::Relaxed);
        open.push_back(rid);
        rid
    }

    /// The transaction of an `allocate`d record has committed or rolled back.
    pub fn finished(&self, rid: i64) {
        let mut open = self.open.lock().unwrap();
        if let Some(at) = open.iter().position(|&r| r == rid) {
            open.remove(at);
        }
    }

    /// Every record below this id has committed or rolled back (isCappedHidden's line). Read it
    /// before a deleting pass takes its snapshot: the pass then sees all of them that committed.
    pub fn settled_below(&self, next_id: &AtomicI64) -> i64 {
        let open = self.open.lock().unwrap();
        open.front().copied().unwrap_or_else(|| next_id.load(Ordering::Relaxed))
    }

    /// Counts what the table holds (after a reopen).
    pub fn recount(&self, session: &mut dyn Session, records: Table) -> Result<()> {
        let (mut bytes, mut count, mut first) = (0i64, 0i64, None);
        session.scan(records, b"", None, false, &mut |k, v| {
            if is_filler(v) {
                return true;
            }
            bytes += v.len() as i64;
            count += 1;
            first.get_or_insert(keys::record_id(k));
            true
        })?;
        self.bytes.store(bytes, Ordering::SeqCst);
        self.count.store(count, Ordering::SeqCst);
        *self.deleter.lock().unwrap() = first.unwrap_or(1);
        Ok(())
    }

    /// Accounts an insert; true when the collection is now past its size and must delete.
    pub fn added(&self, bytes: i64) -> bool {
        if self.ring {
            return false; // a ring made room before the insert
        }
        let now = self.bytes.fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.count.fetch_add(1, Ordering::SeqCst);
        !self.background && now > self.cap_bytes
    }

    pub fn over(&self) -> bool {
        self.bytes.load(Ordering::SeqCst) > self.cap_bytes
    }

    /// How many bytes over its size the collection is (0 or less: it fits).
    pub fn excess(&self) -> i64 {
        self.bytes.load(Ordering::SeqCst) - self.cap_bytes
    }

    /// Accounts documents a trimmer removed.
    pub fn removed(&self, bytes: i64, count: i64) {
        self.bytes.fetch_sub(bytes, Ordering::SeqCst);
        self.count.fetch_sub(count, Ordering::SeqCst);
    }

    pub fn save_state(&self, meta: &mut Value) {
        if self.ring {
            meta["ring_pos"] = Value::from(*self.ring_pos.lock().unwrap());
        }
    }
}

/// Deletes the oldest documents until the collection fits, in transactions of its own. One
/// deleter at a time: a thread that finds another deleting leaves it the work (MongoRocks'
/// try_lock); inserts meanwhile only add to the count.
pub fn delete_oldest(ctx: &mut Ctx, coll: &Arc<Collection>) -> Result<()> {
    let capped = coll.capped.as_ref().unwrap();
    let Ok(mut oldest) = capped.deleter.try_lock() else { return Ok(()) };
    loop {
        let excess = capped.bytes.load(Ordering::SeqCst) - capped.cap_bytes;
        if excess <= 0 {
            return Ok(());
        }
        let start = keys::record_key(*oldest);
        let settled = capped.settled_below(&coll.next_id);
        let (freed, removed, next) = ctx.transaction(|c| {
            let mut victims = Vec::new();
            let mut freed = 0i64;
            c.kv.scan(coll.records, &start, None, false, &mut |k, v| {
                if freed >= excess || victims.len() >= DELETES_PER_TRANSACTION || keys::record_id(k) >= settled {
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
        let Some(next) = next else { return Ok(()) };
        capped.bytes.fetch_sub(freed, Ordering::SeqCst);
        capped.count.fetch_sub(removed, Ordering::SeqCst);
        *oldest = next;
    }
}

/// Ring: the record id for a document of `size` bytes, after deleting the older documents
/// whose space it takes. Runs inside the insert's transaction.
pub fn ring_place(ctx: &mut Ctx, coll: &Arc<Collection>, size: i64) -> Result<i64> {
    let capped = coll.capped.as_ref().unwrap();
    if size > capped.cap_bytes {
        return Err(Error::other(format!("a document of {size} bytes does not fit capped collection {:?} of {} bytes",
                                        coll.name, capped.cap_bytes)));
    }
    let mut ring_pos = capped.ring_pos.lock().unwrap();
    let mut pos = *ring_pos;
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
        if is_filler(raw) {
            ctx.kv.delete(coll.records, &keys::record_key(*rid))?; // unused space: nothing to count
            continue;
        }
        let doc = document::decode(raw)?;
        if rid - 1 == pos {
            // Overwritten in place below: only its index entries go (and it leaves the count).
            ctx.record_deltas.push((coll.clone(), -1));
            if let Some(id) = doc.get("_id") {
                ctx.delete_id_entry(coll, id, *rid)?;
            }
            let fields = super::Fields::of(&doc);
            for index in coll.indexes().iter() {
                ctx.delete_index_entry(index, &fields, *rid)?;
            }
        } else {
            ctx.remove_record(coll, *rid, &doc)?;
        }
        capped.bytes.fetch_sub(raw.len() as i64, Ordering::SeqCst);
        capped.count.fetch_sub(1, Ordering::SeqCst);
    }
    capped.bytes.fetch_add(size, Ordering::SeqCst);
    capped.count.fetch_add(1, Ordering::SeqCst);
    *ring_pos = pos + size;
    Ok(pos + 1)
}

/// Record ids oldest first: ascending, or for a ring from the write position on, wrapping.
pub fn natural_order(ctx: &mut Ctx, coll: &Collection) -> Result<Vec<i64>> {
    let mut rids = Vec::new();
    ctx.kv.scan(coll.records, b"", None, false, &mut |k, v| {
        if !is_filler(v) {
            rids.push(keys::record_id(k));
        }
        true
    })?;
    if let Some(capped) = &coll.capped {
        if capped.ring {
            let pos = *capped.ring_pos.lock().unwrap();
            let split = rids.partition_point(|rid| rid - 1 < pos);
            rids.rotate_left(split);
        }
    }
    Ok(rids)
}
