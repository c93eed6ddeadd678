//! LinkBench's operations on the record store of every embedded engine, in both count semantics
//! (`counts:`): the document writes each operation makes, what the consistency check reports
//! after them, concurrent writers under exact counts, and the load's shared chunk queue.
//! `linkbenchx` follows LinkbenchX's MongoDB store (Percona-Lab/linkbenchX at 84aeea1,
//! src/main/java/com/percona/LinkBench/LinkStoreMongoDBv2.java); `exact` follows LinkBench's MySQL
//! store. Moved from lib/tests/test_linkbench_operations.py and test_linkbench_counts.py, which
//! drove the deleted Python operations over the same record store.
mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bson::{doc, Bson, Document, RawDocumentBuf};
use serde_json::{json, Value};

use common::{each_engine, int_field, Embedded};
use enginebench_runner::calls::{int, Filter, IndexSpec, PageEntry, Range, Store, Update, UpdateResult};
use enginebench_runner::error::Result;
use enginebench_runner::pyrandom::Random;
use enginebench_runner::workloads::linkbench::ops::{self, Counts, Link, COUNT, COUNT_PK, LINK, NODE};
use enginebench_runner::workloads::linkbench::{self, LinkBench};
use enginebench_runner::workloads::Workload;

fn link(id2: i64, time: i64, data: &[u8]) -> Link {
    Link { link_type: 7, id1: 1, id2, visibility: ops::VISIBLE, time, version: 0, data: data.to_vec() }
}

fn linkbench(params: Value) -> LinkBench {
    LinkBench::new(&params).unwrap()
}

/// The id2s of (1, 7)'s visible links, newest first, as GET_LINKS_LIST returns them.
fn listed(ctx: &mut dyn Store, counts: Counts) -> Vec<i64> {
    ops::get_link_list(ctx, counts, 1, 7, ops::MAX_TIME, 0).unwrap().iter().map(|d| int_field(d, "id2").unwrap()).collect()
}

// -- the operations under exact counts --------------------------------------------------------
#[test]
fn count_follows_visible_links() {
    each_engine(|e| {
        let mut c = e.ctx();
        let s: &mut dyn Store = &mut c;
        let exact = Counts::Exact;
        ops::create_schema(s).unwrap();
        assert_eq!(ops::count_links(s, 1, 7).unwrap(), 0);
        assert_eq!(ops::add_link(s, exact, &link(2, 100, b"d")).unwrap(), 1, "{}: a new link: +1", e.label);
        assert_eq!(ops::add_link(s, exact, &link(3, 100, b"d")).unwrap(), 1);
        assert_eq!(ops::count_links(s, 1, 7).unwrap(), 2);
        assert_eq!(ops::add_link(s, exact, &link(2, 200, b"d")).unwrap(), 0, "an update of a visible link: unchanged");
        assert_eq!(ops::count_links(s, 1, 7).unwrap(), 2);
        assert_eq!(ops::delete_link(s, exact, 1, 7, 2, 300).unwrap(), 1, "hide: -1");
        assert_eq!(ops::delete_link(s, exact, 1, 7, 2, 301).unwrap(), 0, "already hidden: unchanged");
        assert_eq!(ops::delete_link(s, exact, 1, 7, 99, 302).unwrap(), 0, "missing: unchanged");
        assert_eq!(ops::count_links(s, 1, 7).unwrap(), 1);
        assert_eq!(listed(s, exact), [3], "hidden links are not listed");
        assert_eq!(ops::multiget_links(s, exact, 1, 7, &[2, 3, 4]).unwrap(), 2, "but multiget returns them");
        assert_eq!(ops::add_link(s, exact, &link(2, 400, b"d")).unwrap(), 1, "visible again: +1");
        assert_eq!(ops::count_links(s, 1, 7).unwrap(), 2);
        assert_eq!(listed(s, exact), [2, 3], "newest first");
    });
}

#[test]
fn nodes() {
    each_engine(|e| {
        let mut c = e.ctx();
        let s: &mut dyn Store = &mut c;
        ops::create_schema(s).unwrap();
        ops::add_node(s, &doc! {"_id": 5, "type": int(ops::NODE_TYPE), "version": 1, "time": 1, "data": "x"}).unwrap();
        assert_eq!(ops::update_node(s, 5, 2, 9, b"y".to_vec()).unwrap(), 1);
        assert_eq!(int_field(&s.get(NODE, None, &[int(5)]).unwrap().unwrap(), "version"), Some(2));
        assert_eq!(ops::get_node(s, 5).unwrap(), 1);
        assert_eq!(ops::update_node(s, 6, 2, 9, b"y".to_vec()).unwrap(), 0);
        assert_eq!(ops::delete_node(s, 5).unwrap(), 1);
        assert!(s.get(NODE, None, &[int(5)]).unwrap().is_none() && ops::get_node(s, 5).unwrap() == 0);
    });
}

#[test]
fn concurrent_writers_keep_counts_exact() {
    // Threads adding and hiding the same links at once: the transaction must keep counts exact.
    each_engine(|e| {
        {
            let mut c = e.ctx();
            linkbench(json!({"maxid1": 200, "max_degree": 20, "counts": "exact"})).setup(&mut c).unwrap();
        }
        std::thread::scope(|scope| {
            for seed in 0..4u128 {
                let store = e.store.clone();
                scope.spawn(move || {
                    let mut c = store.session().unwrap();
                    let mut rng = Random::from_int(seed);
                    for _ in 0..300 {
                        let id2 = 1 + rng.randrange(0, 6);
                        if rng.random() < 0.6 {
                            let time = rng.randrange(0, 1000);
                            ops::add_link(&mut c, Counts::Exact, &link(id2, time, b"d")).unwrap();
                        } else {
                            ops::delete_link(&mut c, Counts::Exact, 1, 7, id2, 5).unwrap();
                        }
                    }
                });
            }
        });
        let mut c = e.ctx();
        let checked = linkbench::check(&mut c).unwrap();
        assert_eq!(checked["mismatches"], 0, "{}: {checked}", e.label);
        assert_eq!(ops::count_links(&mut c, 1, 7).unwrap() as usize, listed(&mut c, Counts::Exact).len(), "{}", e.label);
    });
}

/// A LinkBench graph set up and loaded as the runner loads it (its loaders and node loader on
/// threads of their own).
fn loaded(e: &Embedded, params: Value, loaders: usize) -> (LinkBench, common::Ran) {
    let mut lb = linkbench(params);
    {
        let mut c = e.ctx();
        lb.setup(&mut c).unwrap();
    }
    let ran = common::run_on(e, lb.load(loaders).unwrap(), None);
    ran.assert_ok();
    (lb, ran)
}

#[test]
fn consistency_check_finds_every_kind_of_mismatch() {
    // The check merges count rows and visible links page by page (10,000 entries a page): a graph
    // of 16,000 nodes has count rows and links over several pages. A wrong count, a missing row
    // and a stray row are each found.
    each_engine(|e| {
        let (mut lb, _) = loaded(e, json!({"maxid1": 16_000, "max_degree": 50}), 1);
        let mut c = e.ctx();
        let clean = lb.check(&mut c).unwrap();
        let rows = c.count(COUNT, None, &Range::default()).unwrap();
        assert!(rows > 10_000, "{}: {rows} count rows, not enough to need two pages", e.label);
        assert_eq!(clean["mismatches"], 0, "{}: {clean}", e.label);
        assert_eq!(clean["count_rows"], json!(rows), "{}: the pages join exactly", e.label);
        let first_two = c.scan(COUNT, Some(COUNT_PK), &Range { limit: Some(2), ..Default::default() }).unwrap();
        let id_of = |d: &RawDocumentBuf| Bson::try_from(d.get("_id").unwrap().unwrap()).unwrap();
        c.update(COUNT, None, &[id_of(&first_two[0])], &Update { set: Some(doc! {"count": 999}.into()), ..Default::default() }).unwrap();
        c.delete(COUNT, None, &[id_of(&first_two[1])], &Vec::new()).unwrap();
        c.insert_many(COUNT, &[doc! {"_id": bson::oid::ObjectId::new(), "id": 1_000_000_000, "link_type": 1, "count": 2,
                                    "time": 0, "version": 0}]).unwrap();
        let found = lb.check(&mut c).unwrap();
        assert_eq!(found["mismatches"], 3, "{}: {found}", e.label);
        let counts: BTreeSet<String> = found["examples"].as_array().unwrap().iter().map(|x| x["count"].to_string()).collect();
        assert_eq!(counts, ["999", "null", "2"].iter().map(|s| s.to_string()).collect(), "{}: {found}", e.label);
    });
}

#[test]
fn the_load_writes_each_chunk_once() {
    // Two link loaders and the node loader share the chunk queue: every document of the graph is
    // written once, whichever loader took its chunk, and both loaders took chunks.
    let e = Embedded::wiredtiger();
    let mut lb = linkbench(json!({"maxid1": 5001, "max_degree": 1000, "chunk_size": 256}));
    {
        let mut c = e.ctx();
        lb.setup(&mut c).unwrap();
    }
    let writers: Arc<Mutex<BTreeSet<usize>>> = Arc::default();
    let seen = writers.clone();
    let hook: common::Hook = Arc::new(move |call: &common::Call| {
        if call.collection == LINK && matches!(call.method, "insert_many" | "update") {
            seen.lock().unwrap().insert(call.worker);
        }
    });
    let ran = common::run_watched(&e, lb.load(2).unwrap(), None, hook);
    ran.assert_ok();
    let (nodes, links, rows) = lb.expected_counts();
    let items: u64 = ran.ops.iter().filter(|(op, _)| op.starts_with("LOAD_")).map(|(_, t)| t.items).sum();
    assert_eq!(items as i64, nodes + links + rows);
    let mut c = e.ctx();
    let (expected, found) = lb.verify(&mut c).unwrap();
    assert_eq!(expected, found);
    assert_eq!(*writers.lock().unwrap(), BTreeSet::from([0, 1]), "both link loaders took chunks");
}

#[test]
fn counts_other_than_the_two_are_refused() {
    let refused = LinkBench::new(&json!({"maxid1": 10, "counts": "mysql"})).err().unwrap();
    assert!(refused.message.contains("allowed: exact, linkbenchx"), "{}", refused.message);
}

// -- document writes per operation -----------------------------------------------------------
#[derive(Default)]
struct Writes {
    /// Documents inserted, deleted, or updated so that the document changed (what mongod logs
    /// to its oplog; an update setting the values a document already has writes nothing there).
    writes: AtomicU64,
    /// Updates that matched, changed or not.
    rewrites: AtomicU64,
}

/// A store that counts the documents each call writes.
struct Counting<'a> {
    inner: Box<dyn Store + 'a>,
    n: Arc<Writes>,
}

impl Store for Counting<'_> {
    fn create_collection(&mut self, name: &str, capped_bytes: Option<i64>) -> Result<()> {
        self.inner.create_collection(name, capped_bytes)
    }
    fn create_index(&mut self, collection: &str, spec: IndexSpec) -> Result<()> {
        self.inner.create_index(collection, spec)
    }
    fn insert_many(&mut self, collection: &str, docs: &[Document]) -> Result<usize> {
        let n = self.inner.insert_many(collection, docs)?;
        self.n.writes.fetch_add(n as u64, Ordering::SeqCst);
        Ok(n)
    }
    fn update(&mut self, collection: &str, index: Option<&str>, key: &[Bson], update: &Update) -> Result<UpdateResult> {
        let before = self.inner.get(collection, index, key)?;
        let result = self.inner.update(collection, index, key, update)?;
        if result.matched {
            self.n.rewrites.fetch_add(1, Ordering::SeqCst);
            let changed = self.inner.get(collection, index, key)? != before;
            self.n.writes.fetch_add(changed as u64, Ordering::SeqCst);
        }
        self.n.writes.fetch_add(result.upserted as u64, Ordering::SeqCst);
        Ok(result)
    }
    fn delete(&mut self, collection: &str, index: Option<&str>, key: &[Bson], filter: &Filter) -> Result<bool> {
        let deleted = self.inner.delete(collection, index, key, filter)?;
        self.n.writes.fetch_add(deleted as u64, Ordering::SeqCst);
        Ok(deleted)
    }
    fn get(&mut self, collection: &str, index: Option<&str>, key: &[Bson]) -> Result<Option<RawDocumentBuf>> {
        self.inner.get(collection, index, key)
    }
    fn get_many(&mut self, collection: &str, index: &str, prefix: &[Bson], last: &[Bson]) -> Result<Vec<RawDocumentBuf>> {
        self.inner.get_many(collection, index, prefix, last)
    }
    fn scan(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<Vec<RawDocumentBuf>> {
        self.inner.scan(collection, index, range)
    }
    fn count_in(&mut self, collection: &str, index: &str, prefix: &[Bson], last: &[Bson]) -> Result<usize> {
        self.inner.count_in(collection, index, prefix, last)
    }
    fn count(&mut self, collection: &str, index: Option<&str>, range: &Range) -> Result<usize> {
        self.inner.count(collection, index, range)
    }
    fn index_page(&mut self, collection: &str, index: Option<&str>, after: Option<&[u8]>, n: usize, fetch: bool)
                  -> Result<Vec<PageEntry>> {
        self.inner.index_page(collection, index, after, n, fetch)
    }
    fn natural(&mut self, collection: &str, limit: Option<usize>) -> Result<Vec<RawDocumentBuf>> {
        self.inner.natural(collection, limit)
    }
    fn transaction_dyn(&mut self, f: &mut dyn FnMut(&mut dyn Store) -> Result<()>) -> Result<()> {
        let n = self.n.clone();
        self.inner.transaction_dyn(&mut |s| f(&mut Counting { inner: Box::new(s), n: n.clone() }))
    }
    fn atomic(&self) -> bool {
        self.inner.atomic()
    }
}

fn writes_of(s: &mut Counting, call: impl FnOnce(&mut dyn Store) -> Result<u64>) -> u64 {
    let before = s.n.writes.load(Ordering::SeqCst);
    call(s).unwrap();
    s.n.writes.load(Ordering::SeqCst) - before
}

#[test]
fn document_writes_per_operation() {
    // exact: the link, and the count only when it changes. linkbenchx: the link upsert, the
    // count replaced and then $inc'ed; an existing link's upsert sets the visibility it already
    // has (no change) and a second update writes its data.
    for (counts, new_link, existing_link, hide) in [(Counts::Exact, 2, 1, 2), (Counts::LinkbenchX, 3, 3, 3)] {
        each_engine(|e| {
            let mut s = Counting { inner: Box::new(e.ctx()), n: Arc::default() };
            ops::create_schema(&mut s).unwrap();
            let why = format!("{}, {counts:?}", e.label);
            assert_eq!(writes_of(&mut s, |s| ops::add_link(s, counts, &link(2, 100, b"d"))), new_link, "{why}");
            assert_eq!(writes_of(&mut s, |s| ops::add_link(s, counts, &link(2, 200, b"e"))), existing_link, "{why}");
            assert_eq!(writes_of(&mut s, |s| ops::delete_link(s, counts, 1, 7, 2, 300)), hide, "{why}");
            assert_eq!(writes_of(&mut s, |s| ops::delete_link(s, counts, 1, 7, 2, 301)), 0, "{why}: already hidden");
        });
    }
}

#[test]
fn linkbenchx_counts_lose_their_count_as_linkbenchx_left_them() {
    // The replacement upsert drops `count`, and the $inc that follows increments only `version`;
    // a new count row gets count 1. The check reports the drift and says which semantics ran.
    each_engine(|e| {
        let mut lb = linkbench(json!({"maxid1": 100, "max_degree": 5}));
        let mut c = e.ctx();
        lb.setup(&mut c).unwrap();
        ops::add_link(&mut c, Counts::LinkbenchX, &link(2, 100, b"d")).unwrap();
        let row = c.get(COUNT, Some(COUNT_PK), &[int(1), int(7)]).unwrap().unwrap();
        assert_eq!(int_field(&row, "count"), Some(1), "{}", e.label);
        assert_eq!(lb.check(&mut c).unwrap()["mismatches"], 0, "{}", e.label);
        ops::add_link(&mut c, Counts::LinkbenchX, &link(3, 100, b"d")).unwrap();
        let row = c.get(COUNT, Some(COUNT_PK), &[int(1), int(7)]).unwrap().unwrap();
        assert!(row.get("count").unwrap().is_none() && int_field(&row, "version") == Some(1), "{}: {row:?}", e.label);
        assert_eq!(ops::count_links(&mut c, 1, 7).unwrap(), 0);
        let found = lb.check(&mut c).unwrap();
        assert_eq!((found["mismatches"].clone(), found["counts"].clone()), (json!(1), json!("linkbenchx")), "{}", e.label);
        assert_eq!(found["examples"], json!([{"id1": 1, "link_type": 7, "count": 0, "visible_links": 2}]), "{}", e.label);
    });
}

#[test]
fn request_mix_writes_and_consistency() {
    // A small graph loaded and 4000 requests of LinkBench's mix run on it: ~0.42 document writes
    // per request for exact counts, ~0.70 for LinkbenchX's pattern; the check finds the drift
    // LinkbenchX leaves and none under exact counts.
    for (counts, low, high) in [("exact", 0.35, 0.5), ("linkbenchx", 0.6, 0.8)] {
        let e = Embedded::wiredtiger();
        let (mut lb, _) = loaded(&e, json!({"maxid1": 3000, "max_degree": 50, "counts": counts}), 1);
        let n = Arc::new(Writes::default());
        let requests = 4000;
        {
            let mut s = Counting { inner: Box::new(e.ctx()), n: n.clone() };
            let requester = lb.requester(0, 1);
            let mut requester = requester.lock().unwrap();
            for _ in 0..requests {
                let request = requester.next();
                requester.execute(&mut s, &request).unwrap();
            }
        }
        let per_request = n.writes.load(Ordering::SeqCst) as f64 / requests as f64;
        assert!(low <= per_request && per_request <= high, "{counts}: {per_request} document writes per request");
        let mut c = e.ctx();
        let check = lb.check(&mut c).unwrap();
        assert_eq!(check["counts"], counts);
        if counts == "exact" {
            assert_eq!(check["mismatches"], 0, "{check}");
        } else {
            assert!(check["mismatches"].as_u64().unwrap() > 0, "{check}");
        }
    }
}
