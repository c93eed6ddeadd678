//! What each workload operation asks of the engine, set against the plan mongod 3.2 chose for
//! the same operation (sources: mongo@r3.2.0, mongo-rocks@r3.2.0, Percona-Lab/linkbenchX@84aeea1,
//! tmcallaghan/iibench-mongodb@4215862; each test names the function it follows). The engine is
//! WiredTiger behind a recorder (engines::traced); "get" is a point lookup (WT search, Rocks
//! Get), "seek" an index cursor positioned at a key that read at most one entry (WT search_near,
//! Rocks Seek), "scan" one that read more.
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use bson::{doc, oid::ObjectId};
use enginebench_runner::calls::{int, Range, Store, Update};
use enginebench_runner::engines::traced::{Call, Traced};
use enginebench_runner::engines::{self, Engine};
use enginebench_runner::store::{oplog, Ctx, Locking, RecordStore, StoreOptions};
use enginebench_runner::workloads::linkbench::ops::{self, Counts, Link};
use enginebench_runner::workloads::linkbench::DEFAULT_LINK_TYPE;

struct Fixture {
    _dir: tempdir::Dir,
    traced: Arc<Traced>,
    store: Arc<RecordStore>,
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

fn fixture(name: &str, oplog: bool, insert_group: usize) -> Fixture {
    on_engine("wiredtiger", name, oplog, insert_group, 64 << 20)
}

fn on_engine(engine: &str, name: &str, oplog: bool, insert_group: usize, oplog_bytes: i64) -> Fixture {
    let dir = tempdir::Dir::new(name);
    let options = serde_json::json!({"cache_size_mb": 32});
    let inner = engines::open(engine, &dir.0, options.as_object().unwrap()).unwrap();
    let traced = Arc::new(Traced::new(inner));
    let store = RecordStore::open(traced.clone() as Arc<dyn Engine>, StoreOptions {
        insert_group, oplog, oplog_bytes, locking: Locking::None, ring_capped: false,
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
    let f = fixture("getnode", false, 1);
    let mut ctx = linkbench(&f);
    assert_eq!(ops::get_node(&mut ctx, 1).unwrap(), 1);
    assert_eq!(f.calls(), vec![c("get", "index-node-_id_"), c("get", "collection-node")]);
}

#[test]
fn update_and_delete_node_filter_on_type_so_they_seek() {
    // updateNodeImpl / deleteNodeImpl filter {_id, type}: not isSimpleIdQuery, so an IXSCAN of
    // the _id index (seek, WT search_near) and a FETCH of the record.
    let f = fixture("updnode", false, 1);
    let mut ctx = linkbench(&f);
    assert_eq!(ops::update_node(&mut ctx, 1, 2, 6, vec![1, 2, 3]).unwrap(), 1);
    assert_eq!(f.calls(), vec![c("seek", "index-node-_id_"), c("get", "collection-node"), c("put", "collection-node")]);
    assert_eq!(ops::delete_node(&mut ctx, 1).unwrap(), 1);
    assert_eq!(f.calls(), vec![c("seek", "index-node-_id_"), c("get", "collection-node"), c("delete", "index-node-_id_"),
                               c("delete", "collection-node")]);
}

#[test]
fn count_link_reads_its_row_through_the_unique_index_with_a_seek() {
    // countLinksImpl: find({id, link_type}) on the unique count_pk: an IXSCAN (seek, never a
    // point get: only IDHACK uses seekExact) and a FETCH.
    let f = fixture("countlink", false, 1);
    let mut ctx = linkbench(&f);
    ops::count_links(&mut ctx, 1, DEFAULT_LINK_TYPE).unwrap();
    assert_eq!(f.calls(), vec![c("seek", "index-count-count_pk"), c("get", "collection-count")]);
}

#[test]
fn get_links_list_counts_then_scans_under_linkbenchx_and_only_scans_under_exact() {
    // getLinkListImpl: linkResult.size() (a count command: COUNT_SCAN over id1_type) before the
    // find (IXSCAN of id1_type in reverse, then a FETCH of each link).
    let f = fixture("linklist", false, 1);
    let mut ctx = linkbench(&f);
    let rows = ops::get_link_list(&mut ctx, Counts::LinkbenchX, 1, DEFAULT_LINK_TYPE, ops::MAX_TIME, 0).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(f.calls(), vec![c("scan", "index-link-id1_type"), c("scan", "index-link-id1_type"),
                               c("get", "collection-link"), c("get", "collection-link")]);
    ops::get_link_list(&mut ctx, Counts::Exact, 1, DEFAULT_LINK_TYPE, ops::MAX_TIME, 0).unwrap();
    assert_eq!(f.calls(), vec![c("scan", "index-link-id1_type"), c("get", "collection-link"), c("get", "collection-link")]);
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
    let f = fixture("multiget", false, 1);
    let mut ctx = linkbench(&f);
    assert_eq!(ops::multiget_links(&mut ctx, Counts::LinkbenchX, 1, DEFAULT_LINK_TYPE, &[1, 2]).unwrap(), 2);
    let one = [c("seek", "index-link-link_pk"), c("get", "collection-link")];
    let expected: Vec<_> = one.iter().chain(one.iter()).chain(one.iter()).chain(one.iter()).cloned().collect();
    assert_eq!(f.calls(), expected);
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
    let set_same = Update { set: Some(doc! {"v": 5.0}), ..Default::default() };
    let result = ctx.update("c", None, &[int(1)], &set_same).unwrap();
    assert!(result.matched);
    assert_eq!(f.calls(), vec![c("get", "index-c-_id_"), c("get", "collection-c")]);
    let set_new = Update { set: Some(doc! {"v": 6}), ..Default::default() };
    ctx.update("c", None, &[int(1)], &set_new).unwrap();
    let calls = f.calls();
    assert!(calls.contains(&c("put", "collection-c")), "{calls:?}");
    assert!(calls.iter().any(|(k, t)| *k == "put" && t == "collection-oplog.rs"), "the change is logged: {calls:?}");
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
fn rocksdb_trims_its_oplog_from_its_key_tracker() {
    // mongo-rocks@r3.2.0 rocks_record_store.cpp cappedDeleteAsNeeded_inlock: the tracker's keys
    // and sizes are walked (never the entries), then each entry and tracker key is deleted.
    let f = on_engine("rocksdb", "tracker", true, 1, 100_000);
    overfill_and_trim(&f);
    let calls = f.calls();
    assert_eq!(calls[0].1, "oplog-key-tracker", "{calls:?}");
    assert!(calls.iter().all(|(kind, table)| (*kind == "scan" && table == "oplog-key-tracker") || *kind == "delete"),
            "{calls:?}");
    assert!(calls.iter().any(|call| *call == c("delete", oplog::TABLE)));
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
