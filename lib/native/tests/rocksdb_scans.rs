//! RocksDB's scans as MongoRocks r3.2.0 made them (`scans: mongorocks`) and bounded at their
//! range (`scans: bounded`), told apart by what RocksDB's iterators step over: the deletions
//! its perf context counts (internal_delete_skipped_count). Sources: mongo-rocks r3.2.0
//! rocks_recovery_unit.cpp (NewIterator, PrefixStrippingIterator: the upper bound is the next
//! prefix, the end of the whole collection or index) and rocks_index.cpp (seekCursor: a reverse
//! scan seeks, then steps back; updatePosition checks the range's end after each step).
mod common;

use enginebench_runner::engines::rocksdb::skipped_deletions;
use enginebench_runner::engines::{self, Engine, Session, Table, TableKind};

const LIVE: usize = 10;
const DELETED: usize = 990;

fn key(i: usize) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// An index table with LIVE keys, then DELETED keys written and deleted after them (their
/// tombstones still in the memtable), and a second table after it.
fn store(scans: &str) -> (common::TempDir, std::sync::Arc<dyn Engine>, Table, Table) {
    store_of("index-a", &format!(r#"{{"cache_size_mb": 16, "scans": "{scans}"}}"#))
}

fn store_of(name: &str, options: &str) -> (common::TempDir, std::sync::Arc<dyn Engine>, Table, Table) {
    let dir = common::TempDir::new("rocksdb-scans");
    // The engine's own options: the record store's (run::open_store takes them) go.
    let (_, options) = enginebench_runner::run::store_options("rocksdb", &common::full_options("rocksdb", options)).unwrap();
    let engine = engines::open("rocksdb", &dir.0, &options).unwrap();
    let (table, next) = (engine.table(name, TableKind::Index).unwrap(), engine.table("index-z", TableKind::Index).unwrap());
    let mut s = engine.session().unwrap();
    s.begin(true).unwrap();
    for i in 0..LIVE + DELETED {
        s.put(table, &key(i), b"").unwrap();
    }
    s.put(next, &key(0), b"").unwrap();
    s.commit().unwrap();
    s.begin(true).unwrap();
    for i in LIVE..LIVE + DELETED {
        s.delete(table, &key(i)).unwrap();
    }
    s.commit().unwrap();
    (dir, engine, table, next)
}

/// The keys a scan of [k0000, k0010) visits, and the deletions RocksDB stepped over for it.
fn scan(s: &mut dyn Session, table: Table, reverse: bool) -> (Vec<Vec<u8>>, u64) {
    let mut seen = Vec::new();
    let high = key(LIVE);
    let (result, skipped) = skipped_deletions(|| {
        s.scan(table, &key(0), Some(&high), reverse, &mut |k, _| {
            seen.push(k.to_vec());
            true
        })
    });
    result.unwrap();
    (seen, skipped)
}

fn expected(reverse: bool) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..LIVE).map(key).collect();
    if reverse {
        keys.reverse();
    }
    keys
}

#[test]
fn mongorocks_scans_walk_past_the_range_to_the_end_of_the_table() {
    let (_dir, engine, table, _) = store("mongorocks");
    let mut s = engine.session().unwrap();
    s.begin(false).unwrap();
    // Forward: the step after k0009 goes on over every deletion up to the table's end.
    let (seen, skipped) = scan(s.as_mut(), table, false);
    assert_eq!(seen, expected(false));
    assert!(skipped >= DELETED as u64, "forward: {skipped} deletions skipped");
    // Reverse: Seek(k0010) walks forward over them to the table's end, finds nothing, and
    // SeekToLast walks back over them again to k0009.
    let (seen, skipped) = scan(s.as_mut(), table, true);
    assert_eq!(seen, expected(true));
    assert!(skipped >= 2 * DELETED as u64, "reverse: {skipped} deletions skipped");
    s.commit().unwrap();
    engine.close().unwrap();
}

#[test]
fn bounded_scans_stop_at_the_range() {
    let (_dir, engine, table, _) = store("bounded");
    let mut s = engine.session().unwrap();
    s.begin(false).unwrap();
    for reverse in [false, true] {
        let (seen, skipped) = scan(s.as_mut(), table, reverse);
        assert_eq!(seen, expected(reverse));
        assert!(skipped < 10, "reverse={reverse}: {skipped} deletions skipped");
    }
    s.commit().unwrap();
    engine.close().unwrap();
}

#[test]
fn a_reverse_scan_inside_a_writing_transaction_keeps_to_its_range() {
    // The transaction's own writes (the batch side of its iterator, which knows no bound) hold a
    // key of the next table and one past the range: neither is visited.
    for scans in ["mongorocks", "bounded"] {
        let (_dir, engine, table, next) = store(scans);
        let mut s = engine.session().unwrap();
        s.begin(true).unwrap();
        s.put(next, &key(5), b"").unwrap();
        s.put(table, &key(LIVE + 1), b"").unwrap();
        let (seen, _) = scan(s.as_mut(), table, true);
        assert_eq!(seen, expected(true), "{scans}");
        s.rollback();
        engine.close().unwrap();
    }
}

fn compactions(engine: &dyn Engine) -> i64 {
    engine.stats().into_iter().find(|(name, _)| name == "mongorocks.tombstone_compactions").map(|(_, n)| n).unwrap()
}

#[test]
fn a_step_over_enough_deletions_suggests_one_compaction_per_interval() {
    // rocks_compaction_scheduler.cpp at r3.2.0: a step that skipped kSkippedDeletionsThreshold
    // deletions or more reports its prefix; one engine-wide timer, started at open, lets one
    // SuggestCompactRange through per kMinCompactionIntervalMins. Here 500 deletions and 1 s.
    let options = r#"{"cache_size_mb": 16, "tombstone_compaction_skips": 500, "tombstone_compaction_interval_s": 1}"#;
    let (_dir, engine, table, _) = store_of("index-a", options);
    let mut s = engine.session().unwrap();
    s.begin(false).unwrap();
    scan(s.as_mut(), table, false);
    assert_eq!(compactions(engine.as_ref()), 0, "none in the first interval after the engine opened");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    scan(s.as_mut(), table, false);
    assert_eq!(compactions(engine.as_ref()), 1);
    scan(s.as_mut(), table, true);
    assert_eq!(compactions(engine.as_ref()), 1, "at most one per interval");
    s.commit().unwrap();
    drop(s);
    engine.close().unwrap();

    // The oplog's deletions never ask for one (NewIterator passes no scheduler for the oplog).
    let (_dir, engine, oplog, _) = store_of("collection-oplog.rs", options);
    let mut s = engine.session().unwrap();
    s.begin(false).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    scan(s.as_mut(), oplog, false);
    assert_eq!(compactions(engine.as_ref()), 0);
    s.commit().unwrap();
    drop(s);
    engine.close().unwrap();
}
