//! flashback_replay: record an op stream on the first system, replay the capture on the others,
//! as Parse did with production traffic (seed 003).
//!
//! The recorder runs the bundled application mix live (appmix.rs) and writes what it ran, each
//! op with the time its call started, its Store call and the command it stands for, as the
//! capture the other systems replay. Every system first loads the dataset the capture ran on
//! (its header names the generator and its settings); a capture of someone else's data starts
//! from its collections, empty. Then the N workers share one ordered stream (stream.rs): a
//! worker takes the next op, waits until it is due and runs it (replay.rs). How late each op
//! started is recorded, and each op's latency both from its actual start and from its scheduled
//! start, so a slow system cannot hide behind the ops it delayed. Per query and count,
//! (documents scanned, latency) goes to scans.csv; the replay's summary to replay.json.
pub mod appmix;
pub mod replay;
pub mod stream;
pub mod translate;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{params, wait_until, MeasureStep, Workload};
use crate::calls::{IndexSpec, Store};
use crate::error::{Error, Result};
use crate::events::emit;
use crate::phase::{Env, Worker};
use appmix::{AppMix, AppMixConfig, EVENTS};
use replay::{CaptureWriter, Plan, Stats};
use stream::{Selection, Stream};

/// Per-op rows (latency against documents scanned) are kept for these op types.
const SCAN_OPS: [&str; 2] = ["query", "count"];
/// Op labels as the results name them (inserts into a capped collection are their own).
const LABELS: [&str; 9] = ["query", "count", "insert", "insert.capped", "update", "findandmodify", "remove", "getmore", "command"];
const FORMAT: &str = "enginebench.flashback";
const SAMPLE_DOCS: i64 = 1000;

/// The runner's workload params for one system (lib/enginebench/families/flashback: its role and
/// files). Thread counts and timing are the phase plan's, not these.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// "recorder" (runs the bundled mix live and captures it) or "replayer".
    role: String,
    /// The bundled mix's settings (the recorder's stream and dataset).
    app: AppMixConfig,
    /// A replayer's ops file: the recorder's capture, or a user's.
    #[serde(default)]
    capture_in: Option<String>,
    /// The recorder's capture.
    #[serde(default)]
    capture_out: Option<String>,
    /// Who recorded, for the capture's header.
    #[serde(default)]
    origin: Value,
    out_dir: String,
    style: String,
    speedup: f64,
    op_filter: Option<Vec<String>>,
    /// How a replayer runs a captured count: "collection", as Flashback's replayer did (its
    /// execCount ran coll.Count(): the whole collection, whatever the capture's query;
    /// ParsePlatform/flashback@29326ed ops_executor.go), or "captured" (the query as captured).
    #[serde(default = "collection")]
    count_replay: String,
}

fn collection() -> String {
    "collection".into()
}

pub struct Flashback {
    cfg: Arc<Config>,
    /// The dataset the stream ran on (None: a capture of someone else's data).
    dataset: Option<Arc<AppMix>>,
    collections: Map<String, Value>,
    specs: Arc<BTreeMap<(String, String), IndexSpec>>,
    stream: Option<Arc<Mutex<Stream>>>,
    stats: Arc<Mutex<Stats>>,
    capture: Option<Arc<CaptureWriter>>,
}

fn read_header(path: &str) -> Result<Value> {
    let file = File::open(path).map_err(|e| Error::other(format!("{path}: {e}")))?;
    let mut first = String::new();
    BufReader::new(file).read_line(&mut first)?;
    let header: Value = serde_json::from_str(&first).map_err(|e| Error::other(format!("{path}: its header: {e}")))?;
    if header["format"] != FORMAT {
        crate::bail!("{path}: not an ops file (its header's format is {}, not {FORMAT})", header["format"]);
    }
    Ok(header)
}

impl Flashback {
    pub fn new(p: &Value) -> Result<Self> {
        let cfg: Config = params("flashback", p)?;
        if !["real", "stress"].contains(&cfg.style.as_str()) {
            crate::bail!("workload flashback: style is {:?}; allowed: real, stress", cfg.style);
        }
        if cfg.speedup <= 0.0 {
            crate::bail!("workload flashback: speedup must be positive (got {})", cfg.speedup);
        }
        if !["collection", "captured"].contains(&cfg.count_replay.as_str()) {
            crate::bail!("workload flashback: count_replay is {:?}; allowed: collection, captured", cfg.count_replay);
        }
        let (dataset, collections) = match (cfg.role.as_str(), &cfg.capture_in) {
            ("recorder", _) => {
                let app = AppMix::new(cfg.app.clone());
                let collections = app.collections();
                (Some(Arc::new(app)), collections)
            }
            ("replayer", Some(path)) => {
                let header = read_header(path)?;
                let dataset = match header["dataset"]["generator"].as_str() {
                    Some("appmix") => Some(Arc::new(AppMix::new(params("flashback", &header["dataset"]["config"])?))),
                    _ => None,
                };
                (dataset, header["collections"].clone())
            }
            (role, _) => crate::bail!("workload flashback: role {role:?} (a replayer needs capture_in); allowed: recorder, replayer"),
        };
        let collections = collections.as_object().cloned().unwrap_or_default();
        let mut specs = BTreeMap::new();
        for (name, meta) in &collections {
            for index in meta["indexes"].as_array().cloned().unwrap_or_default() {
                let spec = IndexSpec::from_json(&index)?;
                specs.insert((name.clone(), spec.name.clone()), spec);
            }
        }
        Ok(Flashback { cfg: Arc::new(cfg), dataset, collections, specs: Arc::new(specs), stream: None,
                       stats: Arc::new(Mutex::new(Stats::default())), capture: None })
    }

    fn capped(&self) -> Vec<String> {
        self.collections.iter().filter(|(_, m)| m["capped_bytes"].as_i64().is_some()).map(|(n, _)| n.clone()).collect()
    }

    fn label_of(capped: &[String], record: &Value) -> &'static str {
        let op = record["op"].as_str().unwrap_or("command");
        if op == "insert" {
            let collection = record["ns"].as_str().and_then(|ns| ns.split_once('.')).map(|(_, c)| c).unwrap_or("");
            if capped.iter().any(|c| c == collection) {
                return "insert.capped";
            }
        }
        LABELS.iter().find(|l| **l == op).copied().unwrap_or("command")
    }

    fn header(&self) -> Value {
        json!({"format": FORMAT, "version": 1, "source": "store",
               "created_at": bson::DateTime::now().try_to_rfc3339_string().ok(), "collections": self.collections,
               "dataset": self.dataset.as_ref().map(|d| d.descriptor()), "origin": self.cfg.origin})
    }
}

/// Inserts batches in order (LOAD_<COLLECTION> ops).
fn loader(batches: Vec<(&'static str, Vec<bson::Document>)>) -> Worker {
    Box::new(move |env: &mut Env| {
        for (collection, docs) in batches {
            if env.stopped() {
                return Ok(());
            }
            let name: &'static str = Box::leak(format!("LOAD_{}", collection.to_uppercase()).into_boxed_str());
            env.op(name, None, |ctx| ctx.insert_many(collection, &docs).map(|n| n as u64))?;
        }
        Ok(())
    })
}

/// One replay worker: takes the next due op, runs it, records what it did.
struct Replayer {
    cfg: Arc<Config>,
    capped: Vec<String>,
    specs: Arc<BTreeMap<(String, String), IndexSpec>>,
    stream: Arc<Mutex<Stream>>,
    capture: Option<Arc<CaptureWriter>>,
}

impl Replayer {
    fn take(&self) -> Result<Option<(Value, Option<Instant>)>> {
        let how = Selection { style: &self.cfg.style, speedup: self.cfg.speedup, op_filter: self.cfg.op_filter.as_deref() };
        self.stream.lock().unwrap().take(&how, |r| Flashback::label_of(&self.capped, r))
    }

    /// The recorder's capture gets each op with the command its Store call stands for (an
    /// insert's documents only in the command).
    fn capture(&self, record: &Value) -> Result<()> {
        let Some(capture) = &self.capture else { return Ok(()) };
        let mut captured = record.clone();
        captured["command"] = bson::Bson::Document(replay::command_of(&record["store"], record, &self.specs)?)
            .into_relaxed_extjson();
        if let Some(args) = captured["store"]["args"].as_object_mut() {
            args.remove("docs");
        }
        capture.add(captured);
        Ok(())
    }

    fn run(&self, env: &mut Env, mine: &mut Stats) -> Result<()> {
        let runs_commands = env.ctx.runs_commands();
        while !env.stopped() {
            let Some((record, due)) = self.take()? else { return Ok(()) };
            let label = Flashback::label_of(&self.capped, &record);
            *mine.read.entry(label).or_default() += 1;
            let whole = self.cfg.role == "replayer" && self.cfg.count_replay == "collection";
            let plan = replay::plan(&record, runs_commands, whole)?;
            if let Plan::Skip(reason) = plan {
                mine.skip(label, reason);
                continue;
            }
            if let Some(due) = due {
                if !wait_until(env, due) {
                    return Ok(());
                }
                let late = Instant::now().saturating_duration_since(due).as_micros() as u64;
                let _ = mine.lag.as_mut().unwrap().record(late.max(1));
            }
            self.capture(&record)?;
            let t0 = Instant::now();
            let done = env.op(label, due, |ctx| replay::execute(ctx, &record, &plan))?;
            let latency_us = t0.elapsed().as_micros() as u64;
            *mine.run.entry(label).or_default() += 1;
            if let (true, Some(n)) = (SCAN_OPS.contains(&record["op"].as_str().unwrap_or_default()), done) {
                let start = self.stream.lock().unwrap().start;
                let offset = due.zip(start).map(|(d, s)| d.saturating_duration_since(s).as_secs_f64());
                mine.rows.push((label, n, latency_us, offset));
            }
        }
        Ok(())
    }
}

/// The runner's entry to this family (workloads/mod.rs).
pub fn build(params: &Value) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Flashback::new(params)?))
}

impl Workload for Flashback {
    fn setup(&mut self, ctx: &mut dyn Store) -> Result<()> {
        for (name, meta) in &self.collections {
            ctx.create_collection(name, meta["capped_bytes"].as_i64())?;
            for index in meta["indexes"].as_array().cloned().unwrap_or_default() {
                ctx.create_index(name, IndexSpec::from_json(&index)?)?;
            }
        }
        Ok(())
    }

    /// `threads` loaders share the ordinary collections' batches; the capped log is filled in
    /// order (its oldest events go first) by one loader of its own.
    fn load(&mut self, threads: usize) -> Result<Vec<Worker>> {
        let Some(app) = &self.dataset else { return Ok(Vec::new()) };
        let (in_order, others): (Vec<_>, Vec<_>) = app.load_batches().into_iter().partition(|(c, _)| *c == EVENTS);
        let mut shares: Vec<Vec<_>> = vec![Vec::new(); threads.max(1)];
        for (i, batch) in others.into_iter().enumerate() {
            let n = shares.len();
            shares[i % n].push(batch);
        }
        let mut workers: Vec<Worker> = shares.into_iter().map(loader).collect();
        workers.push(loader(in_order));
        Ok(workers)
    }

    fn load_accounting(&self) -> Value {
        json!({"rate": "items", "rate_ops": null, "per_op": null})
    }

    fn expected_after_load(&self, _load_threads: usize) -> Value {
        self.dataset.as_ref().map(|d| d.expected_after_load()).unwrap_or_else(|| json!({}))
    }

    /// Users, then posts, then the activity log, each to its end: the generator on the same
    /// settings with at most SAMPLE_DOCS documents of each (a document's size depends on the
    /// byte settings, not on how many there are).
    fn size_sample(&mut self) -> Result<Vec<Worker>> {
        let Some(app) = &self.dataset else { return Ok(Vec::new()) };
        let mut cfg = app.cfg.clone();
        cfg.users = cfg.users.min(SAMPLE_DOCS);
        cfg.posts = cfg.posts.min(SAMPLE_DOCS);
        cfg.capped_mb = cfg.capped_mb.min(SAMPLE_DOCS as f64 * cfg.event_bytes as f64 / (1 << 20) as f64);
        Ok(vec![loader(AppMix::new(cfg).load_batches())])
    }

    fn samples_per_collection(&self) -> bool {
        true
    }

    fn verify(&mut self, ctx: &mut dyn Store) -> Result<(Value, Value)> {
        let expected = self.expected_after_load(0);
        let mut found = Map::new();
        for name in expected.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            found.insert(name.clone(), json!(ctx.count(&name, None, &Default::default())?));
        }
        Ok((expected, Value::Object(found)))
    }

    fn measure(&mut self, step: &MeasureStep) -> Result<Vec<Worker>> {
        let stream = match (&self.cfg.role[..], &self.dataset, &self.cfg.capture_in) {
            ("recorder", Some(app), _) => Stream::generated(app.clone()),
            (_, _, Some(path)) => Stream::file(path)?,
            _ => crate::bail!("workload flashback: nothing to replay"),
        };
        let stream = Arc::new(Mutex::new(stream));
        self.stream = Some(stream.clone());
        emit("flashback", json!({"role": self.cfg.role, "capture": self.cfg.capture_out.clone().or(self.cfg.capture_in.clone()),
                                 "style": self.cfg.style, "speedup": self.cfg.speedup, "workers": step.threads,
                                 "op_filter": self.cfg.op_filter}));
        if let Some(path) = &self.cfg.capture_out {
            self.capture = Some(Arc::new(CaptureWriter::start(path, &self.header())?));
        }
        Ok((0..step.threads).map(|_| {
            let replayer = Replayer { cfg: self.cfg.clone(), capped: self.capped(), specs: self.specs.clone(),
                                      stream: stream.clone(), capture: self.capture.clone() };
            let stats = self.stats.clone();
            Box::new(move |env: &mut Env| {
                let mut mine = Stats::worker();
                let result = replayer.run(env, &mut mine);
                stats.lock().unwrap().merge(mine);
                result
            }) as Worker
        }).collect())
    }

    fn after_measure(&mut self, _name: &str) -> Result<()> {
        let captured = match &self.capture {
            Some(c) => Some(c.finish()?),
            None => None,
        };
        let stats = std::mem::take(&mut *self.stats.lock().unwrap());
        let out = std::path::Path::new(&self.cfg.out_dir);
        let mut scans = std::io::BufWriter::new(File::create(out.join("scans.csv"))?);
        writeln!(scans, "op,docs_scanned,latency_us,due_s")?;
        for (label, docs, latency, due) in &stats.rows {
            writeln!(scans, "{label},{docs},{latency},{}", due.map(|d| d.to_string()).unwrap_or_default())?;
        }
        scans.flush()?;
        let per_type = self.stream.as_ref().map(|s| s.lock().unwrap().per_type.clone()).unwrap_or_default();
        let lag = stats.lag.as_ref().filter(|h| !h.is_empty()).map(|h| json!({
            "p50": h.value_at_quantile(0.5) as f64 / 1000.0, "p99": h.value_at_quantile(0.99) as f64 / 1000.0,
            "max": h.max() as f64 / 1000.0, "ops": h.len()}));
        let summary = json!({"event": "replay_summary", "role": self.cfg.role, "ops_read": stats.read, "ops_run": stats.run,
                             "skipped": stats.skipped, "captured_ops": captured,
                             "capture_ops_per_type": if self.cfg.role == "recorder" { Value::Null } else { json!(per_type) },
                             "lag_ms": lag});
        std::fs::write(out.join("replay.json"), serde_json::to_string_pretty(&summary).unwrap())?;
        emit("replay_summary", summary);
        Ok(())
    }

    fn check(&mut self, _ctx: &mut dyn Store) -> Result<Value> {
        crate::bail!("flashback has no consistency check (its plan ends with the replay)")
    }
}
