//! The oplog of a replica-set member (the posts' op1 setups): every write appends an entry in
//! the same transaction, and a background thread trims it to its size the way each server did:
//!
//! - WiredTiger (mongod 3.2, oplog stones: mongo@r3.2.0 src/mongo/db/storage/wiredtiger/
//!   wiredtiger_record_store.cpp, OplogStones and reclaimOplog): inserts are counted into
//!   "stones" of cap/N bytes (N = cap / 16 MB, between 10 and 100); while the oplog is over its
//!   size, the oldest whole stone goes in one WT_SESSION::truncate of its record-id range,
//!   without reading an entry.
//! - RocksDB (mongo-rocks r3.2.0 src/rocks_record_store.cpp, RocksOplogKeyTracker and
//!   cappedDeleteAsNeeded_inlock): a second key space mirrors every entry's record id with its
//!   size; trimming walks that tracker (never the entries), and deletes entry and tracker key one
//!   by one, at most 20000 a pass. A pass seeks to the oldest entry known alive
//!   (_cappedOldestKeyHint), not to the tracker's start, where every entry trimmed since the last
//!   compaction lies as a tombstone; it stops before an entry older than one still being written
//!   (CappedVisibilityManager::isCappedHidden); and every 30 minutes the trimmed range is
//!   suggested for compaction (kOplogCompactEveryMins).
//!
//! On the mmap stand-in the oplog is a ring, as MMAPv1's was (capped.rs).
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bson::raw::cstr;
use bson::{RawDocument, RawDocumentBuf, Timestamp};

use super::{keys, Collection, Ctx, RecordStore};
use crate::engines::{Engine, Session, Table, TableKind};
use crate::error::Result;

pub const NAME: &str = "oplog.rs";
/// The oplog's record table, as the engine names it.
pub const TABLE: &str = crate::engines::mongod_layout::OPLOG_TABLE;
/// MongoRocks' tracker key space (its prefix is the oplog's + 1; a table of its own here).
const TRACKER: &str = "oplog-key-tracker";
/// OplogStones: _numStonesToKeep = min(100, max(10, maxSize / BSONObjMaxInternalSize)).
const STONE_UNIT: i64 = 16 * 1024 * 1024 + 16 * 1024;
/// MongoRocks deletes at most this many entries a pass.
const TRACKER_PASS: usize = 20_000;
/// MongoRocks suggests compacting the trimmed range this often (kOplogCompactEveryMins).
const TRACKER_COMPACTION_EVERY: Duration = Duration::from_secs(30 * 60);
static INCREMENT: AtomicU64 = AtomicU64::new(0);

/// An entry as mongod 3.2 writes it: {ts, t, h, v, op, ns, o[, o2]}, with `o` and `o2` the
/// write's own bytes; `ns` is "<database>.<collection>".
pub fn entry(op: &str, ns: &str, o: &RawDocument, o2: Option<&RawDocument>) -> RawDocumentBuf {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let inc = INCREMENT.fetch_add(1, Ordering::Relaxed);
    // A 64-bit hash of the operation, as mongod's `h` field: here a mixed counter.
    let h = (inc ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(0xBF58_476D_1CE4_E5B9) as i64;
    // Sized for the whole entry up front: the fields around `o` and `o2` take under 80 bytes.
    let capacity = 80 + ns.len() + o.as_bytes().len() + o2.map_or(0, |d| d.as_bytes().len());
    let mut e = super::document::with_capacity(capacity);
    e.append(cstr!("ts"), Timestamp { time: now.as_secs() as u32, increment: inc as u32 });
    e.append(cstr!("t"), 1i64);
    e.append(cstr!("h"), h);
    e.append(cstr!("v"), 2i32);
    e.append(cstr!("op"), op);
    e.append(cstr!("ns"), ns);
    e.append(cstr!("o"), o);
    if let Some(o2) = o2 {
        e.append(cstr!("o2"), o2);
    }
    e
}

/// A run of entries the stones trim at once: its last record id and what it holds.
#[derive(Clone, Copy, Default)]
struct Stone {
    last: i64,
    bytes: i64,
}

pub struct Stones {
    min_bytes: i64,
    /// The oldest entry still in the oplog.
    first: i64,
    sealed: VecDeque<Stone>,
    current: Stone,
}

impl Stones {
    fn new(cap_bytes: i64) -> Stones {
        let n = (cap_bytes / STONE_UNIT).clamp(10, 100);
        Stones { min_bytes: (cap_bytes / n).max(1), first: 1, sealed: VecDeque::new(), current: Stone::default() }
    }

    /// A committed insert (updateCurrentStoneAfterInsertOnCommit).
    fn add(&mut self, rid: i64, bytes: i64) {
        self.current.last = self.current.last.max(rid);
        self.current.bytes += bytes;
        if self.current.bytes >= self.min_bytes {
            self.sealed.push_back(std::mem::take(&mut self.current));
        }
    }
}

/// MongoRocks' oplog key tracker: the table, and where the next pass starts. The entries still
/// being written are the oplog's open record ids (Capped::allocate).
pub struct KeyTracker {
    table: Table,
    /// No entry older than this is alive (_cappedOldestKeyHint).
    oldest_alive: Mutex<i64>,
    last_compaction: Mutex<Instant>,
}

impl KeyTracker {
    /// Where the next pass starts: no entry older than this is alive.
    pub fn oldest_alive(&self) -> i64 {
        *self.oldest_alive.lock().unwrap()
    }
}

/// How this store trims its oplog.
pub enum Trim {
    Stones(Mutex<Stones>),
    KeyTracker(KeyTracker),
}

impl Trim {
    /// As the engine's server did: stones for WiredTiger, the key tracker for RocksDB.
    pub fn for_engine(engine: &dyn Engine, cap_bytes: i64) -> Result<Trim> {
        if engine.trims_oplog_by_key_tracker() {
            return Ok(Trim::KeyTracker(KeyTracker {
                table: engine.table(TRACKER, TableKind::Index)?,
                oldest_alive: Mutex::new(0),
                last_compaction: Mutex::new(Instant::now()),
            }));
        }
        Ok(Trim::Stones(Mutex::new(Stones::new(cap_bytes))))
    }

    /// Whether a pass starts where the last one ended, so that new entries must be marked open
    /// until their transaction ends (MongoRocks' oplogDiskLocRegister); stones trim whole
    /// committed ranges and need no such mark.
    pub fn needs_open_entries(&self) -> bool {
        matches!(self, Trim::KeyTracker(_))
    }

    /// Inside an entry's insert transaction: the tracker's key (RocksDB), unregistered as
    /// RocksOplogKeyTracker::insertKey wrote it.
    pub fn on_insert(&self, kv: &mut dyn Session, rid: i64, bytes: i64) -> Result<()> {
        if let Trim::KeyTracker(tracker) = self {
            kv.put_unregistered(tracker.table, &keys::record_key(rid), &(bytes as u32).to_be_bytes())?;
        }
        Ok(())
    }

    /// After the insert committed: the stones' accounting (WiredTiger).
    pub fn on_commit(&self, rid: i64, bytes: i64) {
        if let Trim::Stones(stones) = self {
            stones.lock().unwrap().add(rid, bytes);
        }
    }

    /// After a reopen: the stones are counted again from the entries (mongod scans or samples the
    /// oplog at startup, _calculateStones).
    pub fn recount(&self, session: &mut dyn Session, records: Table) -> Result<()> {
        let Trim::Stones(stones) = self else { return Ok(()) };
        let mut s = stones.lock().unwrap();
        let mut first = None;
        session.scan(records, b"", None, false, &mut |k, v| {
            let rid = keys::record_id(k);
            first.get_or_insert(rid);
            s.add(rid, v.len() as i64);
            true
        })?;
        s.first = first.unwrap_or(1);
        Ok(())
    }
}

/// One trimming pass: entries out until the oplog fits, nothing more can go, or the store is
/// closing (`stopping`: a backlog of stones is left, as mongod's shutdown left it, instead of
/// holding the close for as long as the backlog takes; on LSM tables a truncate walks and
/// removes every entry, and a smoke load's backlog once held the close for nine minutes).
pub fn trim(ctx: &mut Ctx, oplog: &Arc<Collection>, how: &Trim, stopping: &AtomicBool) -> Result<()> {
    match how {
        Trim::Stones(stones) => trim_stones(ctx, oplog, stones, stopping),
        Trim::KeyTracker(tracker) => trim_tracked(ctx, oplog, tracker),
    }
}

fn trim_stones(ctx: &mut Ctx, oplog: &Arc<Collection>, stones: &Mutex<Stones>, stopping: &AtomicBool) -> Result<()> {
    let capped = oplog.capped.as_ref().unwrap();
    while capped.over() && !stopping.load(Ordering::Relaxed) {
        let (first, stone) = {
            let s = stones.lock().unwrap();
            match s.sealed.front() {
                Some(stone) => (s.first, *stone),
                None => return Ok(()),
            }
        };
        // The oplog is a b-tree file on every WiredTiger system (oplog_table_config): a stone's
        // range goes in one truncate, as mongod's reclaimOplog did.
        let (low, high) = (keys::record_key(first), keys::record_key(stone.last));
        ctx.transaction(|c| c.kv.truncate(oplog.records, &low, &high))?;
        {
            let mut s = stones.lock().unwrap();
            s.sealed.pop_front();
            s.first = stone.last + 1;
        }
        capped.removed(stone.bytes, stone.last - first + 1);
        oplog.num_records.fetch_sub(stone.last - first + 1, Ordering::Relaxed);
    }
    Ok(())
}

fn trim_tracked(ctx: &mut Ctx, oplog: &Arc<Collection>, tracker: &KeyTracker) -> Result<()> {
    let capped = oplog.capped.as_ref().unwrap();
    let excess = capped.excess();
    if excess <= 0 {
        return Ok(());
    }
    let start = keys::record_key(*tracker.oldest_alive.lock().unwrap());
    // Read before the pass's snapshot: the pass never trims past an entry that could still
    // commit behind its start.
    let bound = capped.settled_below(&oplog.next_id);
    let (freed, victims) = ctx.transaction(|c| {
        let mut victims = Vec::new();
        let mut freed = 0i64;
        c.kv.scan(tracker.table, &start, None, false, &mut |k, v| {
            if keys::record_id(k) >= bound {
                return false;
            }
            freed += u32::from_be_bytes(v[..4].try_into().unwrap_or([0; 4])) as i64;
            victims.push(k.to_vec());
            freed < excess && victims.len() < TRACKER_PASS
        })?;
        for key in &victims {
            c.kv.delete(oplog.records, key)?; // registered, as deleting a record was
            c.kv.delete_unregistered(tracker.table, key)?;
        }
        Ok((freed, victims))
    })?;
    if let Some(last) = victims.last() {
        *tracker.oldest_alive.lock().unwrap() = keys::record_id(last) + 1;
    }
    capped.removed(freed, victims.len() as i64);
    oplog.num_records.fetch_sub(victims.len() as i64, Ordering::Relaxed);
    let mut last_compaction = tracker.last_compaction.lock().unwrap();
    if last_compaction.elapsed() >= TRACKER_COMPACTION_EVERY {
        *last_compaction = Instant::now();
        let below = keys::record_key(*tracker.oldest_alive.lock().unwrap());
        ctx.kv.suggest_compaction(oplog.records, &below)?;
        ctx.kv.suggest_compaction(tracker.table, &below)?;
    }
    Ok(())
}

pub struct Trimmer {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Trimmer {
    /// Checks every 100 ms (1 s when there was nothing to trim, as MongoRocks' thread slept).
    pub fn start(store: Weak<RecordStore>, oplog: Arc<Collection>) -> Result<Trimmer> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let handle = std::thread::Builder::new().name("oplog-trimmer".into()).spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                let over = oplog.capped.as_ref().map(|c| c.over()).unwrap_or(false);
                if over {
                    let Some(store) = store.upgrade() else { return };
                    let Some(how) = store.oplog_trim.as_ref() else { return };
                    let trimmed = store.session().and_then(|mut ctx| trim(&mut ctx, &oplog, how, &stopping));
                    if let Err(e) = trimmed {
                        eprintln!("oplog trimming failed: {e}");
                        if e.kind == crate::error::Kind::Fatal {
                            return;
                        }
                    }
                }
                let pause = if over { 100 } else { 1000 };
                for _ in 0..pause / 50 {
                    if stopping.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        })?;
        Ok(Trimmer { stop, handle })
    }

    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
    }
}
