//! The server layouts: how one MongoDB server laid its collections and indexes out over a storage
//! engine's tables, each an implementation of the Store calls (crate::calls::Store). A folder is
//! named for its server and the engines under it:
//!
//! - `mongod_kv`: mongod 3.x's record store (a table per collection keyed by a record id, a table
//!   per index), over the key-value contract of crate::engines: WiredTiger, RocksDB (as
//!   MongoRocks), LMDB (standing in for MMAPv1) and the fractal tree (as TokuMXse's tokuft engine);
//! - `tokumx_ft`: TokuMX's, over the fractal tree only (the collection clustered in its `_id`
//!   index, secondary keys carrying the primary key, update messages).
/// Runs `attempt` until it ends in anything but a write conflict, counting each conflict and
/// waiting between attempts as mongod did (write_conflict_exception.cpp logAndBackoff: none for 4
/// attempts, then 1 ms below 10, 5 ms below 100, then 10 ms).
pub fn retry_conflicts<T>(conflicts: &std::sync::atomic::AtomicU64, mut attempt: impl FnMut() -> crate::error::Result<T>)
                          -> crate::error::Result<T> {
    for n in 0u32.. {
        match attempt() {
            Err(e) if e.is_conflict() => {
                conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let ms = match n { 0..=3 => 0, 4..=9 => 1, 10..=99 => 5, _ => 10 };
                if ms > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                }
            }
            other => return other,
        }
    }
    unreachable!()
}

pub mod document;
pub mod fields;
pub mod mongod_kv;
pub mod tokumx_ft;
