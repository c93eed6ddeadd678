//! The oplog of a replica-set member (the posts' op1 setups): every write appends an entry in
//! the same transaction, and the oplog is trimmed to its size in the background, as mongod 3.2
//! (WiredTiger's oplog stones) and MongoRocks (RocksRecordStoreThread) did. On the mmap
//! stand-in the oplog is a ring, as MMAPv1's was.
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bson::{doc, Bson, Document, Timestamp};

use super::{capped, Collection, RecordStore};
use crate::error::Result;

pub const NAME: &str = "oplog.rs";
static INCREMENT: AtomicU64 = AtomicU64::new(0);

/// An entry as mongod 3.2 writes it: {ts, t, h, v, op, ns, o[, o2]}.
pub fn entry(op: &str, collection: &str, o: Bson, o2: Option<Bson>) -> Document {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let inc = INCREMENT.fetch_add(1, Ordering::Relaxed);
    // A 64-bit hash of the operation, as mongod's `h` field: here a mixed counter.
    let h = (inc ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(0xBF58_476D_1CE4_E5B9) as i64;
    let mut e = doc! {
        "ts": Timestamp { time: now.as_secs() as u32, increment: inc as u32 },
        "t": 1i64, "h": h, "v": 2, "op": op, "ns": format!("enginebench.{collection}"), "o": o,
    };
    if let Some(o2) = o2 {
        e.insert("o2", o2);
    }
    e
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
                    let trimmed = store.session().and_then(|mut ctx| capped::delete_oldest(&mut ctx, &oplog));
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
