//! The LinkBench workload: graph load, request mix, and the count consistency check, as
//! lib/enginebench/workloads/linkbench/workload.py defines it (the same seeds give the same
//! documents and the same requests; lib/tests checks it).
//!
//! Load (spec §2): `loaders` threads take 2048-id chunks of [startid1, maxid1), highest first,
//! and write links and counts in batches of `load_batch`; one more thread inserts the nodes.
//! Requests (spec §3): each requester draws an operation from LinkBench's FB mix and its
//! arguments from the shuffled Zipf access distributions.
pub mod distributions;
pub mod ops;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bson::{doc, oid::ObjectId, Document};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{params, request_loop, wall_ms, wall_s, MeasureStep, Workload};
use crate::error::Result;
use crate::phase::{Env, Worker};
use crate::pyrandom::Random;
use crate::calls::{bytes, int};
use crate::calls::Store;
use distributions::{geometric_multiget, lognormal_size, AccessChooser, BlendedChooser, LinkCounts, MotifData,
                    NLINKS_SEED, NODE_SEED, UNCORR_SEED};
use ops::{Counts, Link};

pub const DEFAULT_LINK_TYPE: i64 = 123456789;
/// (op, percent) in LinkBench's cumulative order (FBWorkload.properties).
pub const OP_MIX: [(&str, f64); 10] = [
    ("ADD_LINK", 8.9886601), ("DELETE_LINK", 2.9907664), ("UPDATE_LINK", 8.0122125), ("COUNT_LINK", 4.8863567),
    ("MULTIGET_LINK", 0.5261142), ("GET_LINKS_LIST", 50.7119145), ("ADD_NODE", 2.5732789),
    ("UPDATE_NODE", 7.366437), ("DELETE_NODE", 1.0115914), ("GET_NODE", 12.9326683),
];
/// Probability that the id2 of a single-link op hits an existing link (ID2Chooser's pExist).
fn p_exist(op: &str) -> f64 {
    match op {
        "ADD_LINK" => 0.05,
        "UPDATE_LINK" | "DELETE_LINK" => 0.9,
        _ => 0.5, // MULTIGET_LINK
    }
}
const HISTORY_PCT: f64 = 0.3; // getlinklist_history
const TAIL_CACHE_SIZE: usize = 2048;

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub maxid1: i64,
    #[serde(default = "one")]
    pub startid1: i64,
    #[serde(default = "two")]
    pub link_type_count: i64,
    #[serde(default = "load_batch")]
    pub load_batch: usize,
    #[serde(default = "chunk_size")]
    pub chunk_size: i64,
    #[serde(default = "one")]
    pub seed: i64,
    #[serde(default = "link_datasize")]
    pub link_datasize: f64,
    #[serde(default = "node_datasize")]
    pub node_datasize: f64,
    #[serde(default)]
    pub max_degree: Option<i64>,
    /// "linkbenchx" (the post's, the default, as in the Python Params) or "exact".
    #[serde(default = "linkbenchx")]
    pub counts: String,
}

fn one() -> i64 { 1 }
fn two() -> i64 { 2 }
fn load_batch() -> usize { 1024 }
fn chunk_size() -> i64 { 2048 }
fn link_datasize() -> f64 { 8.0 }
fn node_datasize() -> f64 { 128.0 }
fn linkbenchx() -> String { "linkbenchx".into() }

/// What every thread shares: the graph's shape and the access distributions.
pub struct Shared {
    pub cfg: Config,
    pub counts_mode: Counts,
    pub n: i64,
    pub link_types: Vec<i64>,
    pub counts: LinkCounts,
    pub link_reads: BlendedChooser,
    pub link_writes: BlendedChooser,
    pub node_reads: AccessChooser,
    pub node_updates: AccessChooser,
    pub node_deletes: AccessChooser,
}

pub struct LinkBench {
    shared: Arc<Shared>,
    /// Requesters live across the measured phases (warmup, run, sweep), so their streams go on
    /// (new requesters would re-issue the node ids already added).
    requesters: Vec<Arc<Mutex<Requester>>>,
}

impl LinkBench {
    pub fn new(p: &Value) -> Result<Self> {
        let cfg: Config = params("linkbench", p)?;
        let counts_mode = match cfg.counts.as_str() {
            "exact" => Counts::Exact,
            "linkbenchx" => Counts::LinkbenchX,
            other => crate::bail!("workload linkbench: counts is {other:?}; allowed: exact, linkbenchx"),
        };
        let (start, n) = (cfg.startid1, cfg.maxid1 - cfg.startid1);
        let uncorrelated = Arc::new(AccessChooser::new(start, n, UNCORR_SEED, Some(0.8)));
        // 99.5% of link reads and writes draw from the uncorrelated Zipf(0.8); LinkBench reads
        // its write settings from the read_uncorr_ prefix, so writes blend the same way (§3.4).
        let shared = Shared {
            counts_mode,
            n,
            link_types: (0..cfg.link_type_count).map(|i| DEFAULT_LINK_TYPE + i).collect(),
            counts: LinkCounts::new(cfg.startid1, cfg.maxid1, cfg.link_type_count, cfg.max_degree),
            link_reads: BlendedChooser { uncorrelated: uncorrelated.clone(),
                                         correlated: AccessChooser::new(start, n, NLINKS_SEED, Some(0.8)), blend: 0.995 },
            link_writes: BlendedChooser { uncorrelated, correlated: AccessChooser::new(start, n, NLINKS_SEED, Some(0.741)),
                                          blend: 0.995 },
            node_reads: AccessChooser::new(start, n, NODE_SEED, Some(0.625)),
            node_updates: AccessChooser::new(start, n, NODE_SEED, Some(0.606)),
            node_deletes: AccessChooser::new(start, n, NODE_SEED, None),
            cfg,
        };
        Ok(LinkBench { shared: Arc::new(shared), requesters: Vec::new() })
    }

    /// Documents the load must leave: every node, the links of the degree model, one count row
    /// per (id1, type) with links.
    pub fn expected_counts(&self) -> (i64, i64, i64) {
        let s = &self.shared;
        let (mut links, mut rows) = (0i64, 0i64);
        for id1 in s.cfg.startid1..s.cfg.maxid1 {
            for c in s.counts.per_type(s.counts.total(id1)) {
                links += c;
                rows += (c > 0) as i64;
            }
        }
        (s.n, links, rows)
    }

    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    pub fn requester(&mut self, index: usize, n: usize) -> Arc<Mutex<Requester>> {
        while self.requesters.len() <= index {
            let i = self.requesters.len();
            self.requesters.push(Arc::new(Mutex::new(Requester::new(self.shared.clone(), i, n))));
        }
        self.requesters[index].clone()
    }
}

// -- load ---------------------------------------------------------------------------------------
/// What a link loader writes, in the order it writes it: each (id1, type)'s links, then its
/// count row (id1, type, links, newest time).
pub enum LoadItem {
    Link(Link),
    Count(i64, i64, i64, i64),
}

/// The load items of one chunk of id1s, as a loader thread generates them.
pub fn chunk_items(s: &Shared, start: i64, now_ms: i64) -> Vec<LoadItem> {
    let mut rng = Random::from_str(&format!("{}/links/{start}", s.cfg.seed));
    let datagen = MotifData::new(&mut rng, 32, 100, 0.225);
    let mut items = Vec::new();
    for id1 in start..(start + s.cfg.chunk_size).min(s.cfg.maxid1) {
        let per_type = s.counts.per_type(s.counts.total(id1));
        for (t, &link_type) in s.link_types.iter().enumerate() {
            let nlinks = per_type[t];
            if nlinks == 0 {
                continue;
            }
            let mut newest = 0;
            for j in 0..nlinks {
                let link_time = now_ms - (1 << 31) + rng.randrange(0, 1 << 31);
                newest = newest.max(link_time);
                let size = lognormal_size(&mut rng, s.cfg.link_datasize, 1.0, 254);
                let data = datagen.make(&mut rng, size);
                items.push(LoadItem::Link(Link { link_type, id1, id2: id1 + j, visibility: ops::VISIBLE, time: link_time,
                                                 version: 0, data }));
            }
            items.push(LoadItem::Count(id1, link_type, nlinks, newest));
        }
    }
    items
}

fn flush_links(env: &mut Env, counts: Counts, group: Vec<Link>) -> Result<()> {
    env.op("LOAD_LINKS_BULK", None, |ctx| match counts {
        Counts::Exact => {
            let docs: Vec<Document> = group.iter().map(|l| l.document(ObjectId::new())).collect();
            ctx.insert_many(ops::LINK, &docs).map(|n| n as u64)
        }
        // LinkbenchX's bulk of upserts: each a primary-key lookup, then a write.
        Counts::LinkbenchX => group.iter().try_for_each(|l| ops::load_link(ctx, counts, l)).map(|_| group.len() as u64),
    })?;
    Ok(())
}

fn flush_counts(env: &mut Env, counts: Counts, group: Vec<(i64, i64, i64, i64)>) -> Result<()> {
    env.op("LOAD_COUNTS_BULK", None, |ctx| match counts {
        Counts::Exact => {
            let docs: Vec<Document> = group.iter()
                .map(|(id1, lt, n, t)| doc! {"_id": ObjectId::new(), "id": int(*id1), "link_type": int(*lt),
                                            "count": int(*n), "time": int(*t), "version": 0})
                .collect();
            ctx.insert_many(ops::COUNT, &docs).map(|n| n as u64)
        }
        // LinkbenchX: a bulk of replaceOne upserts.
        Counts::LinkbenchX => group.iter().try_for_each(|(id1, lt, n, t)| ops::load_count(ctx, *id1, *lt, *n, *t))
            .map(|_| group.len() as u64),
    })?;
    Ok(())
}

fn load_links(s: Arc<Shared>, chunks: Arc<Mutex<Vec<i64>>>) -> Worker {
    Box::new(move |env: &mut Env| {
        let now_ms = wall_ms();
        let batch = s.cfg.load_batch;
        // The buffers fill across chunks, as LinkBench's loader keeps them.
        let (mut links, mut counts) = (Vec::with_capacity(batch), Vec::with_capacity(batch));
        while !env.stopped() {
            let Some(start) = chunks.lock().unwrap().pop() else { break };
            for item in chunk_items(&s, start, now_ms) {
                match item {
                    LoadItem::Link(link) => {
                        links.push(link);
                        if links.len() >= batch {
                            flush_links(env, s.counts_mode, std::mem::take(&mut links))?;
                        }
                    }
                    LoadItem::Count(id1, lt, n, t) => {
                        counts.push((id1, lt, n, t));
                        if counts.len() >= batch {
                            flush_counts(env, s.counts_mode, std::mem::take(&mut counts))?;
                        }
                    }
                }
            }
        }
        if !links.is_empty() && !env.stopped() {
            flush_links(env, s.counts_mode, links)?;
        }
        if !counts.is_empty() && !env.stopped() {
            flush_counts(env, s.counts_mode, counts)?;
        }
        Ok(())
    })
}

/// The nodes, as LinkBench's node loader makes them.
pub fn node_documents(s: &Shared, now_s: i64, mut each: impl FnMut(Document) -> Result<bool>) -> Result<()> {
    let mut rng = Random::from_str(&format!("{}/nodes", s.cfg.seed));
    let datagen = MotifData::new(&mut rng, 50, 220, 0.63);
    for node_id in s.cfg.startid1..s.cfg.maxid1 {
        let size = lognormal_size(&mut rng, s.cfg.node_datasize, 1.0, (1 << 20) - 1);
        let data = datagen.make(&mut rng, size);
        let node = doc! {"_id": int(node_id), "type": int(ops::NODE_TYPE), "version": 1, "time": int(now_s),
                         "data": bytes(data)};
        if !each(node)? {
            return Ok(());
        }
    }
    Ok(())
}

fn load_nodes(s: Arc<Shared>) -> Worker {
    Box::new(move |env: &mut Env| {
        let now_s = wall_s();
        let mut batch = Vec::with_capacity(s.cfg.load_batch);
        node_documents(&s, now_s, |node| {
            if env.stopped() {
                return Ok(false);
            }
            batch.push(node);
            if batch.len() >= s.cfg.load_batch {
                let docs = std::mem::take(&mut batch);
                env.op("LOAD_NODE_BULK", None, |ctx| ctx.insert_many(ops::NODE, &docs).map(|n| n as u64))?;
            }
            Ok(true)
        })?;
        if !batch.is_empty() && !env.stopped() {
            env.op("LOAD_NODE_BULK", None, |ctx| ctx.insert_many(ops::NODE, &batch).map(|n| n as u64))?;
        }
        Ok(())
    })
}

// -- requests -----------------------------------------------------------------------------------
/// One request with its arguments, drawn before it runs.
#[derive(Debug, Clone)]
pub enum Request {
    AddLink(&'static str, Link),
    DeleteLink { id1: i64, link_type: i64, id2: i64, now_ms: i64 },
    CountLink { id1: i64, link_type: i64 },
    MultigetLink { id1: i64, link_type: i64, id2s: Vec<i64> },
    GetLinksList { id1: i64, link_type: i64, history: Option<i64> },
    AddNode(Document),
    UpdateNode { node_id: i64, now_s: i64, data: Vec<u8> },
    DeleteNode(i64),
    GetNode(i64),
}

impl Request {
    pub fn op(&self) -> &'static str {
        match self {
            Request::AddLink(op, _) => op,
            Request::DeleteLink { .. } => "DELETE_LINK",
            Request::CountLink { .. } => "COUNT_LINK",
            Request::MultigetLink { .. } => "MULTIGET_LINK",
            Request::GetLinksList { .. } => "GET_LINKS_LIST",
            Request::AddNode(_) => "ADD_NODE",
            Request::UpdateNode { .. } => "UPDATE_NODE",
            Request::DeleteNode(_) => "DELETE_NODE",
            Request::GetNode(_) => "GET_NODE",
        }
    }

    /// The request's arguments in the Python requester's vocabulary (trace mode).
    pub fn describe(&self) -> Value {
        let hex = |d: &[u8]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        match self {
            Request::AddLink(op, l) => json!({"op": op, "link_type": l.link_type, "id1": l.id1, "id2": l.id2,
                                               "visibility": l.visibility, "time": l.time, "version": l.version,
                                               "data": hex(&l.data)}),
            Request::DeleteLink { id1, link_type, id2, now_ms } =>
                json!({"op": "DELETE_LINK", "id1": id1, "link_type": link_type, "id2": id2, "time": now_ms}),
            Request::CountLink { id1, link_type } => json!({"op": "COUNT_LINK", "id1": id1, "link_type": link_type}),
            Request::MultigetLink { id1, link_type, id2s } =>
                json!({"op": "MULTIGET_LINK", "id1": id1, "link_type": link_type, "id2s": id2s}),
            Request::GetLinksList { id1, link_type, history } =>
                json!({"op": "GET_LINKS_LIST", "id1": id1, "link_type": link_type, "history_max_time": history}),
            Request::AddNode(node) => json!({"op": "ADD_NODE", "id": node.get_i32("_id").map(|v| v as i64)
                                                 .or_else(|_| node.get_i64("_id")).unwrap_or(0),
                                             "time": node.get_i32("time").unwrap_or(0),
                                             "data": hex(node.get_binary_generic("data").map(|v| v.as_slice()).unwrap_or(&[]))}),
            Request::UpdateNode { node_id, now_s, data } =>
                json!({"op": "UPDATE_NODE", "id": node_id, "time": now_s, "data": hex(data)}),
            Request::DeleteNode(id) => json!({"op": "DELETE_NODE", "id": id}),
            Request::GetNode(id) => json!({"op": "GET_NODE", "id": id}),
        }
    }
}

/// One request worker's generator and its history-query state.
pub struct Requester {
    s: Arc<Shared>,
    rng: Random,
    link_add: MotifData,
    link_up: MotifData,
    node_add: MotifData,
    node_up: MotifData,
    cumulative: Vec<(f64, &'static str)>,
    next_node: i64,
    node_step: i64,
    /// (id1, link_type) -> the time of the oldest link of a page that hit the limit, in
    /// insertion order (as the Python dict keeps it).
    tail_cache: Vec<((i64, i64), i64)>,
    pub history_queries: u64,
}

impl Requester {
    pub fn new(s: Arc<Shared>, worker_index: usize, n_workers: usize) -> Self {
        let mut rng = Random::from_str(&format!("{}/requests/{worker_index}", s.cfg.seed));
        let link_add = MotifData::new(&mut rng, 32, 100, 0.225);
        let link_up = MotifData::new(&mut rng, 32, 100, 0.225);
        let node_add = MotifData::new(&mut rng, 50, 220, 0.63);
        let node_up = MotifData::new(&mut rng, 50, 220, 0.63);
        let mut total = 0.0;
        let cumulative = OP_MIX.iter().map(|(name, pct)| {
            total += pct;
            (total, *name)
        }).collect();
        Requester { next_node: s.cfg.maxid1 + worker_index as i64, node_step: n_workers as i64, s, rng, link_add, link_up,
                    node_add, node_up, cumulative, tail_cache: Vec::new(), history_queries: 0 }
    }

    fn draw_op(&mut self) -> &'static str {
        let r = self.rng.random() * 100.0;
        self.cumulative.iter().find(|(bound, _)| r <= *bound).map(|(_, n)| *n).unwrap_or(self.cumulative[9].1)
    }

    fn id2(&mut self, id1: i64, type_index: usize, p: f64) -> i64 {
        let span = ((self.s.counts.of(id1, type_index) as f64 / p).ceil() as i64).max(1);
        id1 + self.rng.randrange(0, span)
    }

    pub fn next(&mut self) -> Request {
        let op = self.draw_op();
        let s = self.s.clone();
        match op {
            "ADD_LINK" | "UPDATE_LINK" => self.link_write(&s, op),
            "DELETE_LINK" => {
                let id1 = s.link_writes.choose(&mut self.rng);
                let t = self.rng.randrange(0, s.link_types.len() as i64) as usize;
                let id2 = self.id2(id1, t, p_exist(op));
                Request::DeleteLink { id1, link_type: s.link_types[t], id2, now_ms: wall_ms() }
            }
            "COUNT_LINK" => {
                let id1 = s.link_reads.choose(&mut self.rng);
                let link_type = *self.rng.choice(&s.link_types);
                Request::CountLink { id1, link_type }
            }
            "MULTIGET_LINK" => self.multiget(&s, op),
            "GET_LINKS_LIST" => self.links_list(&s),
            "ADD_NODE" => self.add_node(&s),
            "UPDATE_NODE" => {
                let node_id = s.node_updates.choose(&mut self.rng);
                let size = lognormal_size(&mut self.rng, s.cfg.node_datasize, 1.0, (1 << 20) - 1);
                let data = self.node_up.make(&mut self.rng, size);
                Request::UpdateNode { node_id, now_s: wall_s(), data }
            }
            "DELETE_NODE" => Request::DeleteNode(s.node_deletes.choose(&mut self.rng)),
            _ => Request::GetNode(s.node_reads.choose(&mut self.rng)),
        }
    }

    // The draws below are LinkBench's, in its order (the trace tests hold them to it).

    fn link_write(&mut self, s: &Shared, op: &'static str) -> Request {
        let id1 = s.link_writes.choose(&mut self.rng);
        let t = self.rng.randrange(0, s.link_types.len() as i64) as usize;
        let id2 = self.id2(id1, t, p_exist(op));
        let time = wall_ms();
        let size = lognormal_size(&mut self.rng, s.cfg.link_datasize, 1.0, 254);
        let gen = if op == "ADD_LINK" { &self.link_add } else { &self.link_up };
        let data = gen.make(&mut self.rng, size);
        Request::AddLink(op, Link { link_type: s.link_types[t], id1, id2, visibility: ops::VISIBLE, time, version: 0, data })
    }

    fn multiget(&mut self, s: &Shared, op: &'static str) -> Request {
        let id1 = s.link_reads.choose(&mut self.rng);
        let t = self.rng.randrange(0, s.link_types.len() as i64) as usize;
        let size = geometric_multiget(&mut self.rng);
        let span = ((s.counts.of(id1, t) as f64 / p_exist(op)).ceil() as i64).max(1);
        let id2s = if span <= size {
            (0..size).map(|j| id1 + j).collect()
        } else {
            let mut chosen: Vec<i64> = Vec::new();
            for _ in 0..size {
                let mut candidate = 0;
                for _attempt in 0..100 { // re-draw duplicates, as ID2Chooser does
                    candidate = id1 + self.rng.randrange(0, span);
                    if !chosen.contains(&candidate) {
                        break;
                    }
                }
                if !chosen.contains(&candidate) {
                    chosen.push(candidate);
                }
            }
            chosen.sort();
            chosen
        };
        Request::MultigetLink { id1, link_type: s.link_types[t], id2s }
    }

    fn links_list(&mut self, s: &Shared) -> Request {
        if !self.tail_cache.is_empty() && self.rng.random() * 100.0 < HISTORY_PCT {
            // History: the page after the oldest link of a list that hit the limit.
            let i = self.rng.randbelow(self.tail_cache.len() as u64) as usize;
            let ((id1, link_type), oldest) = self.tail_cache[i];
            self.history_queries += 1;
            return Request::GetLinksList { id1, link_type, history: Some(oldest) };
        }
        let id1 = s.link_reads.choose(&mut self.rng);
        let link_type = *self.rng.choice(&s.link_types);
        Request::GetLinksList { id1, link_type, history: None }
    }

    fn add_node(&mut self, s: &Shared) -> Request {
        let time = wall_s();
        let size = lognormal_size(&mut self.rng, s.cfg.node_datasize, 1.0, (1 << 20) - 1);
        let data = self.node_add.make(&mut self.rng, size);
        let node = doc! {"_id": int(self.next_node), "type": int(ops::NODE_TYPE), "version": 1, "time": int(time),
                         "data": bytes(data)};
        self.next_node += self.node_step;
        Request::AddNode(node)
    }

    /// Runs a request; returns the documents it wrote or returned.
    pub fn execute(&mut self, ctx: &mut dyn Store, request: &Request) -> Result<u64> {
        let counts = self.s.counts_mode;
        match request {
            Request::AddLink(_, link) => ops::add_link(ctx, counts, link),
            Request::DeleteLink { id1, link_type, id2, now_ms } => ops::delete_link(ctx, counts, *id1, *link_type, *id2, *now_ms),
            Request::CountLink { id1, link_type } => ops::count_links(ctx, *id1, *link_type),
            Request::MultigetLink { id1, link_type, id2s } => ops::multiget_links(ctx, counts, *id1, *link_type, id2s),
            Request::GetLinksList { id1, link_type, history } => {
                let (max_time, offset) = match history { Some(t) => (*t, 1), None => (ops::MAX_TIME, 0) };
                let rows = ops::get_link_list(ctx, counts, *id1, *link_type, max_time, offset)?;
                self.remember_tail((*id1, *link_type), rows.last().map(ops::link_time), rows.len(), history.is_some());
                Ok(rows.len() as u64)
            }
            Request::AddNode(node) => ops::add_node(ctx, node),
            Request::UpdateNode { node_id, now_s, data } => ops::update_node(ctx, *node_id, 2, *now_s, data.clone()),
            Request::DeleteNode(id) => ops::delete_node(ctx, *id),
            Request::GetNode(id) => ops::get_node(ctx, *id),
        }
    }

    fn remember_tail(&mut self, key: (i64, i64), last_time: Option<i64>, rows: usize, replace: bool) {
        let at = self.tail_cache.iter().position(|(k, _)| *k == key);
        if rows >= ops::RANGE_LIMIT {
            match at {
                Some(i) => self.tail_cache[i].1 = last_time.unwrap_or(0),
                None => {
                    if self.tail_cache.len() >= TAIL_CACHE_SIZE {
                        let victim = self.rng.randbelow(self.tail_cache.len() as u64) as usize;
                        self.tail_cache.remove(victim);
                    }
                    self.tail_cache.push((key, last_time.unwrap_or(0)));
                }
            }
        } else if replace {
            if let Some(i) = at {
                self.tail_cache.remove(i);
            }
        }
    }
}

// -- the consistency check ----------------------------------------------------------------------
/// Compares every count row with the number of visible links of its (id1, type). Both sides are
/// read page by page in key order and merged, so the check needs memory for one page of each,
/// not for the whole graph (it runs inside the run's memory limit).
pub fn check(ctx: &mut dyn Store) -> Result<Value> {
    const PAGE: usize = 10_000;
    let mut links = Pager::new(ops::LINK, ops::LINK_LIST, false);
    let mut counts = Pager::new(ops::COUNT, ops::COUNT_PK, true);
    let (mut mismatches, mut rows, mut visible_total) = (0u64, 0u64, 0i64);
    let mut examples = Vec::new();
    // Visible links per (id1, type), summed over consecutive index entries.
    let next_list = |ctx: &mut dyn Store, links: &mut Pager| -> Result<Option<((i64, i64), i64)>> {
        let mut current: Option<((i64, i64), i64)> = None;
        loop {
            let Some((fields, _)) = links.peek(ctx, PAGE)? else { return Ok(current) };
            let key = (as_i64(&fields[0]), as_i64(&fields[1]));
            match &mut current {
                Some((k, _)) if *k != key => return Ok(current),
                Some((_, v)) => *v += (as_i64(&fields[2]) == ops::VISIBLE) as i64,
                None => current = Some((key, (as_i64(&fields[2]) == ops::VISIBLE) as i64)),
            }
            links.advance();
        }
    };
    let mut link = next_list(ctx, &mut links)?;
    let mut count = counts.take(ctx, PAGE)?;
    loop {
        let count_key = count.as_ref().map(|(f, d)| ((as_i64(&f[0]), as_i64(&f[1])), d.clone()));
        let (key, visible, stored) = match (&link, &count_key) {
            (None, None) => break,
            (Some((lk, v)), Some((ck, _))) if lk < ck => {
                let out = (*lk, *v, None);
                link = next_list(ctx, &mut links)?;
                out
            }
            (Some((lk, v)), None) => {
                let out = (*lk, *v, None);
                link = next_list(ctx, &mut links)?;
                out
            }
            (Some((lk, v)), Some((ck, doc))) if lk == ck => {
                let out = (*lk, *v, Some(stored_count(doc)));
                link = next_list(ctx, &mut links)?;
                count = counts.take(ctx, PAGE)?;
                out
            }
            (_, Some((ck, doc))) => {
                let out = (*ck, 0, Some(stored_count(doc)));
                count = counts.take(ctx, PAGE)?;
                out
            }
        };
        visible_total += visible;
        rows += stored.is_some() as u64;
        if stored.unwrap_or(0) != visible {
            mismatches += 1;
            if examples.len() < 5 {
                examples.push(json!({"id1": key.0, "link_type": key.1, "count": stored, "visible_links": visible}));
            }
        }
    }
    Ok(json!({"count_rows": rows, "visible_links": visible_total, "mismatches": mismatches, "examples": examples}))
}

fn stored_count(doc: &Option<bson::RawDocumentBuf>) -> i64 {
    doc.as_ref().and_then(|d| match d.get("count").ok().flatten() {
        Some(bson::RawBsonRef::Int32(v)) => Some(v as i64),
        Some(bson::RawBsonRef::Int64(v)) => Some(v),
        Some(bson::RawBsonRef::Double(v)) => Some(v as i64),
        _ => None,
    }).unwrap_or(0)
}

fn as_i64(v: &bson::Bson) -> i64 {
    crate::calls::as_i64(Some(v)).unwrap_or(i64::MIN)
}

/// Walks an index page by page.
struct Pager {
    collection: &'static str,
    index: &'static str,
    fetch: bool,
    page: std::collections::VecDeque<(Vec<u8>, Vec<bson::Bson>, Option<bson::RawDocumentBuf>)>,
    after: Option<Vec<u8>>,
    done: bool,
}

impl Pager {
    fn new(collection: &'static str, index: &'static str, fetch: bool) -> Self {
        Pager { collection, index, fetch, page: Default::default(), after: None, done: false }
    }

    fn fill(&mut self, ctx: &mut dyn Store, n: usize) -> Result<()> {
        if self.page.is_empty() && !self.done {
            let page = ctx.index_page(self.collection, Some(self.index), self.after.as_deref(), n, self.fetch)?;
            self.done = page.len() < n;
            if let Some(last) = page.last() {
                self.after = Some(last.0.clone());
            }
            self.page.extend(page);
        }
        Ok(())
    }

    fn peek(&mut self, ctx: &mut dyn Store, n: usize) -> Result<Option<(Vec<bson::Bson>, Option<bson::RawDocumentBuf>)>> {
        self.fill(ctx, n)?;
        Ok(self.page.front().map(|(_, f, d)| (f.clone(), d.clone())))
    }

    fn advance(&mut self) {
        self.page.pop_front();
    }

    fn take(&mut self, ctx: &mut dyn Store, n: usize) -> Result<Option<(Vec<bson::Bson>, Option<bson::RawDocumentBuf>)>> {
        let front = self.peek(ctx, n)?;
        self.advance();
        Ok(front)
    }
}

/// The runner's entry to this family (workloads/mod.rs).
pub fn build(params: &Value) -> Result<Box<dyn Workload>> {
    Ok(Box::new(LinkBench::new(params)?))
}

impl Workload for LinkBench {
    fn setup(&mut self, ctx: &mut dyn Store) -> Result<()> {
        ops::create_schema(ctx)
    }

    fn load(&mut self, threads: usize) -> Result<Vec<Worker>> {
        let s = &self.shared;
        let starts: Vec<i64> = (s.cfg.startid1..s.cfg.maxid1).step_by(s.cfg.chunk_size as usize).collect();
        // Popped from the end: highest ids first, as LinkBench queues them.
        let chunks = Arc::new(Mutex::new(starts));
        let mut workers: Vec<Worker> = (0..threads).map(|_| load_links(self.shared.clone(), chunks.clone())).collect();
        workers.push(load_nodes(self.shared.clone()));
        Ok(workers)
    }

    /// The post's load tables: documents inserted into all collections per second, and per-op
    /// figures divided by node inserts.
    fn load_accounting(&self) -> Value {
        json!({"rate": "items", "rate_ops": null, "per_op": "LOAD_NODE_BULK"})
    }

    fn expected_after_load(&self, _load_threads: usize) -> Value {
        let (nodes, links, rows) = self.expected_counts();
        json!({ops::NODE: nodes, ops::LINK: links, ops::COUNT: rows})
    }

    fn verify(&mut self, ctx: &mut dyn Store) -> Result<(Value, Value)> {
        let expected = self.expected_after_load(0);
        let mut found = serde_json::Map::new();
        for name in [ops::NODE, ops::LINK, ops::COUNT] {
            found.insert(name.into(), json!(ctx.count(name, None, &Default::default())?));
        }
        Ok((expected, Value::Object(found)))
    }

    fn measure(&mut self, step: &MeasureStep) -> Result<Vec<Worker>> {
        let n = step.threads;
        let mut workers: Vec<Worker> = Vec::new();
        for i in 0..n {
            let requester = self.requester(i, n);
            let rate = step.rate_per_s.map(|r| r / n as f64);
            let offset = i as f64 / n as f64; // staggered, so arrivals are spread, not bunched
            workers.push(Box::new(move |env: &mut Env| {
                let mut requester = requester.lock().unwrap();
                request_loop(env, rate, offset, |env, intended: Option<Instant>| {
                    let request = requester.next();
                    env.op(request.op(), intended, |ctx| requester.execute(ctx, &request))?;
                    Ok(())
                })
            }));
        }
        Ok(workers)
    }

    fn check(&mut self, ctx: &mut dyn Store) -> Result<Value> {
        let mut result = check(ctx)?;
        result["counts"] = json!(self.shared.cfg.counts);
        Ok(result)
    }
}
