//! What each workload operation asks of the engine, set against the plan mongod 3.2 chose for
//! the same operation (sources: mongo@r3.2.0, mongo-rocks@r3.2.0, Percona-Lab/linkbenchX@84aeea1,
//! tmcallaghan/iibench-mongodb@4215862; each test names the function it follows). The engine is
//! WiredTiger or RocksDB behind a recorder (engines::traced), each test on both where the plan
//! is the store's, not the engine's; "get" is a point lookup (WT search, Rocks Get), "seek" an
//! index cursor positioned at a key that read at most one entry (WT search_near, Rocks Seek),
//! "scan" one that read more; "insert" a write that fails on an existing key (a unique index,
//! as mongod's unique-index insert checks for a duplicate), "put" one that does not, and
//! "put-unregistered" a new record's (MongoRocks registered no write for a record id it had just
//! allocated: insertRecord). A record rewritten or deleted is read first ("get" before its "put"
//! or "delete"), as both record stores did: WiredTigerRecordStore::updateRecord / deleteRecord
//! (mongo@r3.2.0: search, get_value, then the write) and RocksRecordStore::updateRecord /
//! deleteRecord (mongo-rocks@r3.2.0: registerWrite, Get, then the write), for their size counters.
mod common;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use bson::{doc, oid::ObjectId};
use enginebench_runner::calls::{int, Range, Store, Update};
use enginebench_runner::engines::traced::{Call, Traced};
use enginebench_runner::engines::{self, Engine};
use enginebench_runner::layouts::mongod_kv::{oplog, Ctx, Locking, RecordStore, StoreOptions};
use enginebench_runner::workloads::linkbench::ops::{self, Counts, Link};
use enginebench_runner::workloads::linkbench::DEFAULT_LINK_TYPE;

struct Fixture {
    _dir: tempdir::Dir,
    traced: Arc<Traced>,
    store: Arc<RecordStore>,
}

// The engine is closed (its background threads stopped) before its folder is removed: an open
// WiredTiger whose journal folder disappears panics.
impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.store.close();
    }
}

mod tempdir {
    /// A folder under the system's temporary folder, removed when dropped.
    pub struct Dir(pub std::path::PathBuf);
    impl Dir {
        pub fn new(name: &str) -> Dir {
            let path = std::env::temp_dir().join(format!("eb-engine-calls-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            Dir(path)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The engines whose record store the access-path tests run on.
const ENGINES: [&str; 2] = ["wiredtiger", "rocksdb"];

fn fixture(name: &str, oplog: bool, insert_group: usize) -> Fixture {
    on_engine("wiredtiger", name, oplog, insert_group, 64 << 20)
}

/// The test's body once on each of ENGINES, in its own folder.
fn each_engine(name: &str, body: impl Fn(&Fixture, &str)) {
    for engine in ENGINES {
        let f = on_engine(engine, &format!("{name}-{engine}"), false, 1, 64 << 20);
        body(&f, engine);
    }
}

fn on_engine(engine: &str, name: &str, oplog: bool, insert_group: usize, oplog_bytes: i64) -> Fixture {
    on_engine_options(engine, name, r#"{"cache_size_mb": 32}"#, oplog, insert_group, oplog_bytes)
}

fn on_engine_options(engine: &str, name: &str, overrides: &str, oplog: bool, insert_group: usize, oplog_bytes: i64) -> Fixture {
    let dir = tempdir::Dir::new(name);
    let (_, options) = enginebench_runner::run::store_options(engine, &common::full_options(engine, overrides)).unwrap();
    let inner = engines::open(engine, &dir.0, &options).unwrap();
    let traced = Arc::new(Traced::new(inner));
    let store = RecordStore::open(traced.clone() as Arc<dyn Engine>, StoreOptions {
        insert_group, oplog, oplog_bytes, locking: Locking::None, ring_capped: false, yields: None,
    }).unwrap();
    Fixture { _dir: dir, traced, store }
}

/// Fills a small oplog past its size with one write per transaction, then trims it once.
fn overfill_and_trim(f: &Fixture) {
    let mut ctx = f.ctx();
    ctx.create_collection("c", None).unwrap();
    let docs: Vec<_> = (0..2000).map(|i| doc! {"_id": i, "pad": "x".repeat(200)}).collect();
    ctx.insert_many("c", &docs).unwrap();
    let oplog = f.store.collection(oplog::NAME).unwrap();
    f.traced.take();
    oplog::trim(&mut ctx, &oplog, f.store.oplog_trim.as_ref().unwrap(), &AtomicBool::new(false)).unwrap();
}

impl Fixture {
    fn ctx(&self) -> Ctx {
        self.store.session().unwrap()
    }
    /// The calls since the last look, as (kind, table), commits left out.
    fn calls(&self) -> Vec<(&'static str, String)> {
        self.traced.take().into_iter().filter(|c: &Call| c.kind != "commit").map(|c| (c.kind, c.table)).collect()
    }
    fn commits(&self) -> usize {
        self.traced.take().iter().filter(|c| c.kind == "commit").count()
    }
}

fn c(kind: &'static str, table: &str) -> (&'static str, String) {
    (kind, table.to_string())
}

fn link(id1: i64, id2: i64, time: i64) -> Link {
    Link { link_type: DEFAULT_LINK_TYPE, id1, id2, visibility: ops::VISIBLE, time, version: 0, data: vec![7; 8] }
}

/// A LinkBench graph: node 1, two links of node 1 and their count row (LinkbenchX's load).
fn linkbench(f: &Fixture) -> Ctx {
    let mut ctx = f.ctx();
    ops::create_schema(&mut ctx).unwrap();
    ops::add_node(&mut ctx, &doc! {"_id": 1, "type": int(ops::NODE_TYPE), "version": 1, "time": 5, "data": "x"}).unwrap();
    for id2 in [1, 2] {
        ops::load_link(&mut ctx, Counts::LinkbenchX, &link(1, id2, 100 + id2)).unwrap();
    }
    ops::load_count(&mut ctx, 1, DEFAULT_LINK_TYPE, 2, 102).unwrap();
    f.traced.take();
    ctx
}

#[test]
fn get_node_is_idhack_two_point_lookups() {
    // LinkStoreMongoDBv2.getNodeImpl: find({_id}) -> IDHackStage (idhack.cpp): findSingle (the
    // unique _id index's seekExact, WT search) and the record's seekExact.
    each_engine("getnode", |f, engine| {
        let mut ctx = linkbench(f);
        assert_eq!(ops::get_node(&mut ctx, 1).unwrap(), 1);
        assert_eq!(f.calls(), vec![c("get", "index-node-_id_"), c("get", "collection-node")], "{engine}");
    });
}

#[test]
fn update_and_delete_node_filter_on_type_so_they_seek() {
    // updateNodeImpl / deleteNodeImpl filter {_id, type}: not isSimpleIdQuery, so an IXSCAN of
    // the _id index (seek, WT search_near) and a FETCH of the record.
    each_engine("updnode", |f, engine| {
        let mut ctx = linkbench(f);
        assert_eq!(ops::update_node(&mut ctx, 1, 2, 6, vec![1, 2, 3]).unwrap(), 1);
        assert_eq!(f.calls(), vec![c("seek", "index-node-_id_"), c("get", "collection-node"), c("get", "collection-node"), c("put", "collection-node")],
                   "{engine}");
        assert_eq!(ops::delete_node(&mut ctx, 1).unwrap(), 1);
        assert_eq!(f.calls(), vec![c("seek", "index-node-_id_"), c("get", "collection-node"), c("delete", "index-node-_id_"),
                                   c("get", "collection-node"), c("delete", "collection-node")], "{engine}");
    });
}

#[test]
fn count_link_reads_its_row_through_the_unique_index_with_a_seek() {
    // countLinksImpl: find({id, link_type}) on the unique count_pk: an IXSCAN (seek, never a
    // point get: only IDHACK uses seekExact) and a FETCH.
    each_engine("countlink", |f, engine| {
        let mut ctx = linkbench(f);
        ops::count_links(&mut ctx, 1, DEFAULT_LINK_TYPE).unwrap();
        assert_eq!(f.calls(), vec![c("seek", "index-count-count_pk"), c("get", "collection-count")], "{engine}");
    });
}

#[test]
fn get_links_list_counts_then_scans_under_linkbenchx_and_only_scans_under_exact() {
    // getLinkListImpl: linkResult.size() (a count command: COUNT_SCAN over id1_type) before the
    // find (IXSCAN of id1_type in reverse, then a FETCH of each link).
    each_engine("linklist", |f, engine| {
        let mut ctx = linkbench(f);
        let rows = ops::get_link_list(&mut ctx, Counts::LinkbenchX, 1, DEFAULT_LINK_TYPE, ops::MAX_TIME, 0).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(f.calls(), vec![c("scan", "index-link-id1_type"), c("scan", "index-link-id1_type"),
                                   c("get", "collection-link"), c("get", "collection-link")], "{engine}");
        ops::get_link_list(&mut ctx, Counts::Exact, 1, DEFAULT_LINK_TYPE, ops::MAX_TIME, 0).unwrap();
        assert_eq!(f.calls(), vec![c("scan", "index-link-id1_type"), c("get", "collection-link"), c("get", "collection-link")],
                   "{engine}");
    });
}

#[test]
fn an_empty_link_list_is_counted_and_not_fetched() {
    let f = fixture("emptylist", false, 1);
    let mut ctx = linkbench(&f);
    let rows = ops::get_link_list(&mut ctx, Counts::LinkbenchX, 9, DEFAULT_LINK_TYPE, ops::MAX_TIME, 0).unwrap();
    assert!(rows.is_empty());
    assert_eq!(f.calls(), vec![c("seek", "index-link-id1_type")]);
}

#[test]
fn multiget_counts_its_in_then_fetches_each_link() {
    // multigetLinksImpl: linkResult.count() then the find; an $in on link_pk is several index
    // intervals, so both are IXSCAN + FETCH per id2 (turnIxscanIntoCount needs one interval).
    each_engine("multiget", |f, engine| {
        let mut ctx = linkbench(f);
        assert_eq!(ops::multiget_links(&mut ctx, Counts::LinkbenchX, 1, DEFAULT_LINK_TYPE, &[1, 2]).unwrap(), 2);
        let one = [c("seek", "index-link-link_pk"), c("get", "collection-link")];
        let expected: Vec<_> = one.iter().chain(one.iter()).chain(one.iter()).chain(one.iter()).cloned().collect();
        assert_eq!(f.calls(), expected, "{engine}");
    });
}

#[test]
fn an_update_that_changes_nothing_writes_nothing_and_logs_nothing() {
    // UpdateStage::transformAndUpdate writes (and logs) only when docWasModified; a $set to the
    // value a field has is a no-op (ModifierSet::prepare).
    let f = fixture("noop", true, 1);
    let mut ctx = f.ctx();
    ctx.create_collection("c", None).unwrap();
    ctx.insert_many("c", &[doc! {"_id": 1, "v": 5}]).unwrap();
    f.traced.take();
    let set_same = Update { set: Some(doc! {"v": 5.0}.into()), ..Default::default() };
    let result = ctx.update("c", None, &[int(1)], &set_same).unwrap();
    assert!(result.matched);
    assert_eq!(f.calls(), vec![c("get", "index-c-_id_"), c("get", "collection-c")]);
    let set_new = Update { set: Some(doc! {"v": 6}.into()), ..Default::default() };
    ctx.update("c", None, &[int(1)], &set_new).unwrap();
    let calls = f.calls();
    assert!(calls.contains(&c("put", "collection-c")), "{calls:?}");
    assert!(calls.iter().any(|(k, t)| *k == "put-unregistered" && t == "collection-oplog.rs"), "the change is logged: {calls:?}");
}

#[test]
fn inserts_are_one_transaction_per_document_as_in_3_2_and_grouped_from_3_4() {
    // mongo@r3.2.0 batch_executor.cpp insertOne: a WriteUnitOfWork per document; r3.4.0
    // write_ops_exec.cpp: up to internalInsertMaxBatchSize (64) in one.
    let docs: Vec<_> = (0..3).map(|i| doc! {"_id": i}).collect();
    for (group, commits) in [(1, 3), (64, 1)] {
        let f = fixture(&format!("group{group}"), false, group);
        let mut ctx = f.ctx();
        ctx.create_collection("c", None).unwrap();
        f.traced.take();
        ctx.insert_many("c", &docs).unwrap();
        assert_eq!(f.commits(), commits, "insert_group {group}");
    }
}

#[test]
fn iibench_or_runs_one_index_scan_per_clause() {
    // MyQuery.run sends {$or: [{price: P, dateandtime: T, customerid: {$gte: C}}, {price: P,
    // dateandtime: {$gt: T}}, {price: {$gt: P}}]}, limit n, no sort, no hint: an OR stage that
    // runs one IXSCAN per clause in turn (or.cpp); the projection is covered by pdc.
    let f = fixture("ior", false, 1);
    let mut ctx = f.ctx();
    ctx.create_collection("p", None).unwrap();
    ctx.create_index("p", enginebench_runner::calls::IndexSpec::new("pdc", &[("price", 1), ("dateandtime", 1), ("customerid", 1)], false)).unwrap();
    let docs: Vec<_> = (0..20).map(|i| doc! {"_id": ObjectId::new(), "price": i as f64, "dateandtime": 7, "customerid": i}).collect();
    ctx.insert_many("p", &docs).unwrap();
    f.traced.take();
    let rows = ctx.scan("p", Some("pdc"), &Range {
        low: Some(vec![bson::Bson::Double(5.0), int(7), int(5)]), limit: Some(4), as_or: true,
        fields: Some(vec!["price".into(), "dateandtime".into(), "customerid".into()]), ..Default::default()
    }).unwrap();
    assert_eq!(rows.len(), 4);
    let kinds: Vec<_> = f.calls();
    assert_eq!(kinds.len(), 3, "three clauses, three index scans, no fetch: {kinds:?}");
    assert!(kinds.iter().all(|(_, t)| t == "index-p-pdc"), "{kinds:?}");
}

#[test]
fn sysbench_point_selects_are_idhack_and_ranges_scan_the_id_index() {
    // sysbench-mongodb's point select: findOne({_id}) (IDHACK); its ranges: find({_id: {$gte, $lte}})
    // with a projection, an IXSCAN of _id_ and a FETCH per row.
    let f = fixture("sysbench", false, 1);
    let mut ctx = f.ctx();
    ctx.create_collection("sbtest1", None).unwrap();
    let docs: Vec<_> = (1..=5).map(|i| doc! {"_id": i, "k": i, "c": "c", "pad": "p"}).collect();
    ctx.insert_many("sbtest1", &docs).unwrap();
    f.traced.take();
    ctx.get("sbtest1", None, &[int(3)]).unwrap();
    assert_eq!(f.calls(), vec![c("get", "index-sbtest1-_id_"), c("get", "collection-sbtest1")]);
    ctx.scan("sbtest1", None, &Range { low: Some(vec![int(2)]), high: Some(vec![int(4)]), fields: Some(vec!["c".into()]),
                                       ..Default::default() }).unwrap();
    let calls = f.calls();
    assert_eq!(calls[0], c("scan", "index-sbtest1-_id_"));
    assert_eq!(calls[1..], [c("get", "collection-sbtest1"), c("get", "collection-sbtest1"), c("get", "collection-sbtest1")]);
}

#[test]
fn wiredtiger_trims_its_oplog_by_whole_stones_without_reading_them() {
    // mongo@r3.2.0 wiredtiger_record_store.cpp reclaimOplog: WT_SESSION::truncate of the oldest
    // stone's record-id range; no entry is read.
    let f = on_engine("wiredtiger", "stones", true, 1, 100_000);
    overfill_and_trim(&f);
    let calls = f.calls();
    assert!(!calls.is_empty() && calls.iter().all(|call| *call == c("truncate", oplog::TABLE)), "{calls:?}");
}

#[test]
fn an_lsm_systems_oplog_is_a_btree_file_trimmed_by_whole_stones() {
    // mongo@r3.0.7 and r3.2.0 wiredtiger_record_store.cpp generateCreateString: "force file for
    // oplog" appends type=file after the collection config, so `type=lsm` never reached the oplog.
    let dir = tempdir::Dir::new("lsm-oplog");
    let options = common::full_options("wiredtiger", r#"{"cache_size_mb": 32, "table_type": "lsm"}"#);
    let (_, options) = enginebench_runner::run::store_options("wiredtiger", &options).unwrap();
    let engine = engines::open("wiredtiger", &dir.0, &options).unwrap();
    let config = engine.config();
    assert!(config["record_table_config"].as_str().unwrap().starts_with("type=lsm"), "{config}");
    assert!(config["oplog_table_config"].as_str().unwrap().starts_with("type=file,memory_page_max=10m"), "{config}");
    engine.close().unwrap();
    let f = on_engine_options("wiredtiger", "lsm-stones", r#"{"cache_size_mb": 32, "table_type": "lsm"}"#, true, 1, 100_000);
    overfill_and_trim(&f);
    let calls = f.calls();
    assert!(!calls.is_empty() && calls.iter().all(|call| *call == c("truncate", oplog::TABLE)), "{calls:?}");
}

#[test]
fn rocksdb_trims_its_oplog_from_its_key_tracker() {
    // mongo-rocks@r3.2.0 rocks_record_store.cpp cappedDeleteAsNeeded_inlock: the tracker's keys
    // and sizes are walked (never the entries), then each entry and tracker key is deleted.
    // The entry's delete registers the write; the tracker's own key does not (deleteKey).
    let f = on_engine("rocksdb", "tracker", true, 1, 100_000);
    overfill_and_trim(&f);
    let calls = f.calls();
    assert_eq!(calls[0].1, "oplog-key-tracker", "{calls:?}");
    assert!(calls.iter().all(|call| *call == c("scan", "oplog-key-tracker") || *call == c("delete", oplog::TABLE)
                             || *call == c("delete-unregistered", "oplog-key-tracker")), "{calls:?}");
    assert!(calls.iter().any(|call| *call == c("delete", oplog::TABLE)));
    assert!(calls.iter().any(|call| *call == c("delete-unregistered", "oplog-key-tracker")));
}

/// The record id of the oldest entry left in the oplog.
fn first_oplog_entry(f: &Fixture) -> i64 {
    let table = f.traced.table(oplog::TABLE, engines::TableKind::Records).unwrap();
    let mut first = None;
    let mut session = f.traced.session().unwrap();
    session.begin(false).unwrap();
    session.scan(table, b"", None, false, &mut |k, _| {
        first = Some(enginebench_runner::keys::record_id(k));
        false
    }).unwrap();
    session.rollback();
    first.unwrap()
}

#[test]
fn rocksdb_trimming_starts_at_the_oldest_entry_alive_not_at_the_trimmed_tombstones() {
    // cappedDeleteAsNeeded_inlock seeks to _cappedOldestKeyHint, the entry after the last one it
    // deleted: the tracker's start holds a tombstone for every entry trimmed since the last
    // compaction, and a walk from there passed over all of them on every pass.
    let f = on_engine("rocksdb", "tracker-hint", true, 1, 100_000);
    overfill_and_trim(&f);
    let Some(oplog::Trim::KeyTracker(tracker)) = f.store.oplog_trim.as_ref() else { panic!("no key tracker") };
    let hint = tracker.oldest_alive();
    assert!(hint > 1, "a pass that trimmed leaves its hint past what it deleted: {hint}");
    assert_eq!(first_oplog_entry(&f), hint, "the hint is the oldest entry left");
}

#[test]
fn rocksdb_trimming_stops_before_an_entry_still_being_written() {
    // CappedVisibilityManager::isCappedHidden: a pass stops at the oldest entry of an open
    // transaction, so the entry cannot commit behind the next pass's start.
    let f = on_engine("rocksdb", "tracker-open", true, 1, 100_000);
    let mut open = f.ctx();
    open.create_collection("c", None).unwrap();
    open.begin_explicit().unwrap();
    open.insert_many("c", &[doc! {"_id": -1}]).unwrap();
    let mut other = f.ctx();
    let docs: Vec<_> = (0..2000).map(|i| doc! {"_id": i, "pad": "x".repeat(200)}).collect();
    other.insert_many("c", &docs).unwrap();
    let oplog = f.store.collection(oplog::NAME).unwrap();
    let trim = f.store.oplog_trim.as_ref().unwrap();
    let oplog::Trim::KeyTracker(tracker) = trim else { panic!("no key tracker") };
    oplog::trim(&mut other, &oplog, trim, &AtomicBool::new(false)).unwrap();
    let held_back = tracker.oldest_alive();
    assert!(oplog.capped.as_ref().unwrap().over(), "the pass stopped at the open entry though still over its size");
    open.commit_explicit().unwrap();
    oplog::trim(&mut other, &oplog, trim, &AtomicBool::new(false)).unwrap();
    assert!(tracker.oldest_alive() > held_back, "once committed, trimming goes on");
    assert!(!oplog.capped.as_ref().unwrap().over());
}

#[test]
fn an_oplog_entry_holds_the_inserted_bytes_and_has_no_id() {
    // mongod 3.2 (oplog.cpp _logOpsInner): {ts, t, h, v, op, ns, o[, o2]}; the oplog has no
    // _id index and its entries no _id. The inserted document gets its ObjectId first.
    let f = fixture("oplogentry", true, 1);
    let mut ctx = f.ctx();
    ctx.create_collection("c", None).unwrap();
    ctx.insert_many("c", &[doc! {"a": 1, "b": "x"}]).unwrap();
    let stored = ctx.natural("c", None).unwrap().remove(0);
    let entries = ctx.natural(oplog::NAME, None).unwrap();
    let entry = bson::Document::try_from(entries.last().unwrap().clone()).unwrap();
    assert_eq!(entry.keys().collect::<Vec<_>>(), ["ts", "t", "h", "v", "op", "ns", "o"]);
    assert_eq!(entry.get_str("op").unwrap(), "i");
    let o = entry.get_document("o").unwrap();
    assert_eq!(o, &bson::Document::try_from(stored.clone()).unwrap());
    assert_eq!(o.keys().collect::<Vec<_>>(), ["_id", "a", "b"]);
    assert!(matches!(o.get("_id"), Some(bson::Bson::ObjectId(_))));
}

/// The calls since the last look with each commit shown as "commit", to see the transactions.
fn with_commits(f: &Fixture) -> Vec<(&'static str, String)> {
    f.traced.take().into_iter().map(|c: Call| (c.kind, c.table)).collect()
}

fn calls_of(spec: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    spec.iter().map(|(k, t)| c(k, t)).collect()
}

#[test]
fn add_node_inserts_its_index_key_then_its_record_in_one_transaction() {
    // addNodeImpl: insert({_id, ...}): one WriteUnitOfWork (batch_executor.cpp insertOne), the
    // record and the unique _id index's key (a duplicate-checking insert).
    each_engine("addnode", |f, engine| {
        let mut ctx = linkbench(f);
        ops::add_node(&mut ctx, &doc! {"_id": 2, "type": int(ops::NODE_TYPE), "version": 1, "time": 5, "data": "y"}).unwrap();
        assert_eq!(with_commits(f), calls_of(&[("insert", "index-node-_id_"), ("put-unregistered", "collection-node"), ("commit", "")]),
                   "{engine}");
    });
}

#[test]
fn add_link_upserts_by_link_pk_then_replaces_and_increments_its_count() {
    // addLinkImpl (LinkbenchX): update(link_pk key, {$setOnInsert, $set: visibility}, upsert): an
    // IXSCAN of link_pk that finds nothing, then the insert (the record and a key in each index,
    // unique ones duplicate-checked); then countColl.update(count key, replacement, upsert), an
    // insert here; then $inc: IXSCAN of count_pk, FETCH, write. One transaction per statement.
    each_engine("addlink", |f, engine| {
        let mut ctx = linkbench(f);
        assert_eq!(ops::add_link(&mut ctx, Counts::LinkbenchX, &link(2, 7, 200)).unwrap(), 1);
        assert_eq!(with_commits(f), calls_of(&[
            ("seek", "index-link-link_pk"), ("insert", "index-link-_id_"), ("insert", "index-link-link_pk"),
            ("put", "index-link-id1_type"), ("put-unregistered", "collection-link"), ("commit", ""),
            ("seek", "index-count-count_pk"), ("insert", "index-count-_id_"), ("insert", "index-count-count_pk"),
            ("put-unregistered", "collection-count"), ("commit", ""),
            ("seek", "index-count-count_pk"), ("get", "collection-count"), ("get", "collection-count"), ("put", "collection-count"), ("commit", ""),
        ]), "{engine}");
    });
}

#[test]
fn update_link_of_an_existing_link_writes_only_what_changed() {
    // UPDATE_LINK is addLink on an existing link: the upsert finds it and its $set of the same
    // visibility is a no-op (no write, UpdateStage); the count is replaced (its keys unchanged:
    // the record only) and incremented; then the $set of data, time and version moves the link's
    // id1_type key (those fields are in it): the old key deleted, the new one written.
    each_engine("updlink", |f, engine| {
        let mut ctx = linkbench(f);
        ops::add_link(&mut ctx, Counts::LinkbenchX, &link(1, 1, 300)).unwrap();
        assert_eq!(with_commits(f), calls_of(&[
            ("seek", "index-link-link_pk"), ("get", "collection-link"), ("commit", ""),
            ("seek", "index-count-count_pk"), ("get", "collection-count"), ("get", "collection-count"), ("put", "collection-count"), ("commit", ""),
            ("seek", "index-count-count_pk"), ("get", "collection-count"), ("get", "collection-count"), ("put", "collection-count"), ("commit", ""),
            ("seek", "index-link-link_pk"), ("get", "collection-link"), ("delete", "index-link-id1_type"),
            ("put", "index-link-id1_type"), ("get", "collection-link"), ("put", "collection-link"), ("commit", ""),
        ]), "{engine}");
    });
}

#[test]
fn delete_link_hides_the_link_by_its_id_and_rewrites_its_count() {
    // deleteLinkImpl (LinkbenchX, no expunge): find by link_pk (IXSCAN + FETCH); update({_id},
    // visibility hidden): IDHACK (point gets), the id1_type key moved (visibility is in it);
    // the count replaced and incremented; the $set of a negative count to 0 matches nothing
    // here and writes nothing; a find of the count for its _id. A link that is not there costs
    // the one seek.
    each_engine("dellink", |f, engine| {
        let mut ctx = linkbench(f);
        assert_eq!(ops::delete_link(&mut ctx, Counts::LinkbenchX, 1, DEFAULT_LINK_TYPE, 1, 0).unwrap(), 1);
        assert_eq!(with_commits(f), calls_of(&[
            ("seek", "index-link-link_pk"), ("get", "collection-link"),
            ("get", "index-link-_id_"), ("get", "collection-link"), ("delete", "index-link-id1_type"),
            ("put", "index-link-id1_type"), ("get", "collection-link"), ("put", "collection-link"), ("commit", ""),
            ("seek", "index-count-count_pk"), ("get", "collection-count"), ("get", "collection-count"), ("put", "collection-count"), ("commit", ""),
            ("seek", "index-count-count_pk"), ("get", "collection-count"), ("get", "collection-count"), ("put", "collection-count"), ("commit", ""),
            ("seek", "index-count-count_pk"), ("get", "collection-count"), ("commit", ""),
            ("seek", "index-count-count_pk"), ("get", "collection-count"),
        ]), "{engine}");
        assert_eq!(ops::delete_link(&mut ctx, Counts::LinkbenchX, 1, DEFAULT_LINK_TYPE, 9, 0).unwrap(), 0);
        assert_eq!(with_commits(f), calls_of(&[("seek", "index-link-link_pk")]), "{engine}");
    });
}

#[test]
fn sysbench_writes_are_idhack_and_move_only_the_keys_they_change() {
    // sysbench-mongodb's updates by _id (IDHACK): $inc of the indexed k moves its k_1 key, $set
    // of c touches the record only; its delete removes the record and every key; its re-insert
    // writes them again (the _id key duplicate-checked).
    each_engine("sbwrites", |f, engine| {
        let mut ctx = f.ctx();
        ctx.create_collection("sb", None).unwrap();
        ctx.create_index("sb", enginebench_runner::calls::IndexSpec::new("k_1", &[("k", 1)], false)).unwrap();
        ctx.insert_many("sb", &[doc! {"_id": 1, "k": 1, "c": "c", "pad": "p"}]).unwrap();
        f.traced.take();
        ctx.update("sb", None, &[int(1)], &Update { inc: Some(doc! {"k": 1}.into()), ..Default::default() }).unwrap();
        assert_eq!(with_commits(f), calls_of(&[("get", "index-sb-_id_"), ("get", "collection-sb"), ("delete", "index-sb-k_1"),
                                                ("put", "index-sb-k_1"), ("get", "collection-sb"), ("put", "collection-sb"), ("commit", "")]), "{engine}");
        ctx.update("sb", None, &[int(1)], &Update { set: Some(doc! {"c": "d"}.into()), ..Default::default() }).unwrap();
        assert_eq!(with_commits(f), calls_of(&[("get", "index-sb-_id_"), ("get", "collection-sb"), ("get", "collection-sb"), ("put", "collection-sb"),
                                                ("commit", "")]), "{engine}");
        ctx.delete("sb", None, &[int(1)], &Vec::new()).unwrap();
        assert_eq!(with_commits(f), calls_of(&[("get", "index-sb-_id_"), ("get", "collection-sb"), ("delete", "index-sb-_id_"),
                                                ("delete", "index-sb-k_1"), ("get", "collection-sb"), ("delete", "collection-sb"), ("commit", "")]),
                   "{engine}");
        ctx.insert_many("sb", &[doc! {"_id": 1, "k": 2, "c": "c", "pad": "p"}]).unwrap();
        assert_eq!(with_commits(f), calls_of(&[("insert", "index-sb-_id_"), ("put", "index-sb-k_1"), ("put-unregistered", "collection-sb"),
                                                ("commit", "")]), "{engine}");
    });
}

#[test]
fn an_iibench_insert_writes_its_record_and_one_key_per_index() {
    // iibench-mongodb's insert of one document (insertOne under 3.2): the record, the _id key
    // (duplicate-checked) and one key in each secondary index.
    each_engine("iiinsert", |f, engine| {
        let mut ctx = f.ctx();
        ctx.create_collection("ii", None).unwrap();
        for (name, fields) in [("marketsegment", vec![("price", 1), ("customerid", 1)]),
                               ("registersegment", vec![("cashregisterid", 1), ("price", 1), ("customerid", 1)]),
                               ("pdc", vec![("price", 1), ("dateandtime", 1), ("customerid", 1)])] {
            ctx.create_index("ii", enginebench_runner::calls::IndexSpec::new(name, &fields, false)).unwrap();
        }
        f.traced.take();
        ctx.insert_many("ii", &[doc! {"_id": ObjectId::new(), "price": 1.0, "cashregisterid": 4, "dateandtime": 2,
                                      "customerid": 3}]).unwrap();
        assert_eq!(with_commits(f), calls_of(&[("insert", "index-ii-_id_"), ("put", "index-ii-marketsegment"),
                                                ("put", "index-ii-registersegment"), ("put", "index-ii-pdc"),
                                                ("put-unregistered", "collection-ii"), ("commit", "")]), "{engine}");
    });
}

#[test]
fn a_capped_collections_deleter_never_passes_a_record_still_being_written() {
    // mongo-rocks@r3.2.0 rocks_record_store.cpp: capped inserts are registered uncommitted
    // (getNextAndAddUncommittedRecord) and cappedDeleteAsNeeded_inlock stops at the first one
    // (isCappedHidden); each pass starts where the last ended (_cappedOldestKeyHint), so a record
    // passed while open would commit behind that start and never be deleted.
    each_engine("capped-open", |f, engine| {
        let mut open = f.ctx();
        open.create_collection("log", Some(20_000)).unwrap();
        open.begin_explicit().unwrap();
        open.insert_many("log", &[doc! {"_id": -1, "pad": "x".repeat(200)}]).unwrap();
        let mut other = f.ctx();
        let docs: Vec<_> = (0..300).map(|i| doc! {"_id": i, "pad": "x".repeat(200)}).collect();
        other.insert_many("log", &docs).unwrap();
        assert_eq!(other.natural("log", None).unwrap().len(), 300, "{engine}: nothing deleted past the open record");
        open.commit_explicit().unwrap();
        other.insert_many("log", &[doc! {"_id": 1000, "pad": "x".repeat(200)}]).unwrap();
        let left = other.natural("log", None).unwrap();
        assert!(left.len() < 100, "{engine}: the collection fits again ({} documents)", left.len());
        assert!(left.iter().all(|d| d.get_i32("_id").unwrap() != -1), "{engine}: the once-open record went first");
    });
}

#[test]
fn a_thread_reads_through_an_index_added_after_its_last_read() {
    // Ctx::with_index keeps each thread's copy of a collection's index list: an index added
    // since (by this thread or another) is found, through the key it was built with, and a
    // name that is no index is still refused.
    let f = fixture("newindex", false, 1);
    let mut reader = f.ctx();
    let mut writer = f.ctx();
    reader.create_collection("c", None).unwrap();
    reader.create_index("c", enginebench_runner::calls::IndexSpec::new("a_1", &[("a", 1)], false)).unwrap();
    reader.insert_many("c", &[doc! {"_id": 1, "a": 10, "b": 20}]).unwrap();
    assert!(reader.get("c", Some("a_1"), &[int(10)]).unwrap().is_some());
    writer.create_index("c", enginebench_runner::calls::IndexSpec::new("b_1", &[("b", 1)], false)).unwrap();
    let found = reader.get("c", Some("b_1"), &[int(20)]).unwrap().expect("the new index finds the document");
    assert_eq!(found.get_i32("_id").unwrap(), 1);
    assert!(reader.get("c", Some("a_1"), &[int(10)]).unwrap().is_some());
    let refused = reader.get("c", Some("c_1"), &[int(1)]).unwrap_err().to_string();
    assert!(refused.contains("has no index \"c_1\""), "{refused}");
}

#[test]
fn a_query_scan_yields_every_128_entries_and_seeks_again() {
    // mongo@r3.2.0 query_knobs.cpp: internalQueryExecYieldIterations 128 (or 10 ms); the yield
    // abandons the snapshot and the restored cursor seeks again (mongo-rocks r3.2.0
    // rocks_index.cpp restore: a new iterator and seekCursor; wiredtiger_index.cpp restore:
    // seekWTCursor). A count over 1,000 index entries: 8 scans (7 of 128 entries, one of 104)
    // with a yield between each two, and the same count; a forward and a reverse find return
    // every entry once, in order. Without yields: one scan.
    for engine in ENGINES {
        for yields in [Some((128, std::time::Duration::from_secs(3600))), None] {
            let dir = tempdir::Dir::new(&format!("yields-{engine}-{}", yields.is_some()));
            let (_, options) = enginebench_runner::run::store_options(engine, &common::full_options(engine, r#"{"cache_size_mb": 32}"#)).unwrap();
            let traced = Arc::new(Traced::new(engines::open(engine, &dir.0, &options).unwrap()));
            let store = RecordStore::open(traced.clone() as Arc<dyn Engine>, StoreOptions {
                insert_group: 64, oplog: false, oplog_bytes: 0, locking: Locking::None, ring_capped: false, yields,
            }).unwrap();
            let mut ctx = store.session().unwrap();
            ctx.create_collection("c", None).unwrap();
            ctx.create_index("c", enginebench_runner::calls::IndexSpec::new("x_1", &[("x", 1)], false)).unwrap();
            let docs: Vec<_> = (0..1000).map(|i| doc! {"_id": i, "x": i}).collect();
            ctx.insert_many("c", &docs).unwrap();
            traced.take();
            assert_eq!(ctx.count("c", Some("x_1"), &Range::default()).unwrap(), 1000, "{engine}");
            let calls = traced.take();
            let kinds = |kind: &str| calls.iter().filter(|c| c.kind == kind).count();
            let (scans, yielded) = if yields.is_some() { (8, 7) } else { (1, 0) };
            assert_eq!((kinds("scan"), kinds("yield")), (scans, yielded), "{engine} {yields:?}");
            for reverse in [false, true] {
                let rows = ctx.scan("c", Some("x_1"), &Range { reverse, fields: Some(vec!["x".into()]), ..Default::default() }).unwrap();
                let mut xs: Vec<i64> = rows.iter().map(|d| common::int_field(d, "x").unwrap()).collect();
                if reverse {
                    xs.reverse();
                }
                assert_eq!(xs, (0..1000).collect::<Vec<i64>>(), "{engine} reverse={reverse}");
            }
            drop(ctx);
            let _ = store.close();
        }
    }
}
