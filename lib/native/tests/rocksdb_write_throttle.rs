//! MongoRocks' soft_rate_limit kept on RocksDB 7.8 (engines/rocks_throttle.rs): while a level
//! below L0 scores over the limit, RocksDB's own write controller delays writes.
mod common;

use std::time::{Duration, Instant};

use enginebench_runner::engines::{self, Engine, TableKind};

fn stat(engine: &dyn Engine, name: &str) -> Option<i64> {
    engine.stats().into_iter().find(|(n, _)| n == name).map(|(_, v)| v)
}

#[test]
fn a_level_over_the_limit_turns_rocksdbs_write_delay_on() {
    // Data in L1 (one flush compacts L0 into L1, no dynamic levels): 224 KB against L1's 1 MB
    // target scores 0.2 (RocksDB prints one decimal), over a limit of 0.1, so the throttle turns
    // RocksDB's delay on.
    let dir = common::TempDir::new("rocksdb-throttle");
    let all = common::full_options("rocksdb", r#"{"cache_size_mb": 16, "soft_rate_limit": 0.1, "max_bytes_for_level_base_mb": 1,
        "config_string": "level_compaction_dynamic_level_bytes=false;level0_file_num_compaction_trigger=1"}"#);
    // The engine's own options: the record store's (run::open_store takes them) go.
    let (_, options) = enginebench_runner::run::store_options("rocksdb", &all).unwrap();
    let engine = engines::open("rocksdb", &dir.0, &options).unwrap();
    let table = engine.table("collection-t", TableKind::Records).unwrap();
    let mut s = engine.session().unwrap();
    s.begin(true).unwrap();
    for i in 0..2000u32 {
        s.put(table, &i.to_be_bytes(), &[7u8; 100]).unwrap();
    }
    s.commit().unwrap();
    engine.checkpoint().unwrap(); // the flush; its L0 file is then compacted into L1
    let deadline = Instant::now() + Duration::from_secs(10);
    while stat(engine.as_ref(), "mongorocks.soft_rate_limit_delaying") != Some(1) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(stat(engine.as_ref(), "mongorocks.soft_rate_limit_delaying"), Some(1), "{:?}", engine.stats());
    assert_eq!(stat(engine.as_ref(), "mongorocks.soft_rate_limit_delays"), Some(1));
    assert!(stat(engine.as_ref(), "mongorocks.max_level_score_x100").unwrap() > 0);
    // RocksDB took the option: its pending-bytes delay is on (it delays writes once a compaction
    // is owed, which a level over a limit of 1 or more always has; this one's 0.2 owes none).
    assert_eq!(stat(engine.as_ref(), "mongorocks.soft_rate_limit_refused"), Some(0));
    drop(s);
    engine.close().unwrap();
}
