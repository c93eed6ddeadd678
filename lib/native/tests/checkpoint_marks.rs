//! The engine's own checkpoints, as a phase reads them to mark each in the measured time
//! (engines::Engine::checkpoint_marks): a checkpoint raises the count begun and, taking a
//! millisecond or more, the time of those finished; reading them changes nothing.
mod common;

use common::Embedded;
use bson::doc;
use enginebench_runner::calls::Store;

fn write_some(store: &Embedded, n: i64) {
    let mut ctx = store.ctx();
    ctx.create_collection("c", None).unwrap();
    let docs: Vec<_> = (0..n).map(|i| doc! {"_id": i, "pad": "x".repeat(2000)}).collect();
    ctx.insert_many("c", &docs).unwrap();
}

fn marks_move_with_a_checkpoint(label: &'static str, options: &str) {
    let store = Embedded::open(label, "wiredtiger", options);
    let before = store.store.checkpoint_marks().unwrap_or_else(|| panic!("{label}: no checkpoint counters"));
    assert_eq!(store.store.checkpoint_marks(), Some(before), "{label}: reading the counters moved them");
    write_some(&store, 20_000);
    store.store.checkpoint().unwrap();
    let after = store.store.checkpoint_marks().unwrap();
    assert!(after.started > before.started, "{label}: {before:?} -> {after:?}: no checkpoint begun");
    assert!(after.finished_ms >= before.finished_ms, "{label}: {before:?} -> {after:?}");
}

#[test]
fn wiredtiger_today_reports_its_checkpoints() {
    if std::env::var("EB_CHECKPOINT_MARKS_TREE").is_ok() {
        return; // the child process of the test below loads the post's tree instead
    }
    marks_move_with_a_checkpoint("wt-marks", r#"{"checkpoint_s": 3600}"#);
}

#[test]
fn the_posts_tree_reports_its_checkpoints_under_the_older_names() {
    // A runner loads one WiredTiger release: the post's tree in a process of its own.
    if std::env::var("EB_CHECKPOINT_MARKS_TREE").is_err() {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "the_posts_tree_reports_its_checkpoints_under_the_older_names", "--nocapture"])
            .env("EB_CHECKPOINT_MARKS_TREE", "1").status().unwrap();
        assert!(status.success());
        return;
    }
    marks_move_with_a_checkpoint("wt307-marks", r#"{"version": "mongodb-3.0.7", "checkpoint_s": 3600}"#);
}

#[test]
fn an_engine_without_checkpoint_counters_reports_none() {
    if std::env::var("EB_CHECKPOINT_MARKS_TREE").is_ok() {
        return;
    }
    let store = Embedded::open("rx-marks", "rocksdb", "{}");
    assert_eq!(store.store.checkpoint_marks(), None);
}
