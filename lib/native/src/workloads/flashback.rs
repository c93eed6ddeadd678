//! flashback_replay: record an op stream on the first system, replay the capture on the others,
//! as Parse did with production traffic (seed 003). The op streams, the dataset and the
//! translation of mongod captures into Store calls are prepared in Python
//! (lib/enginebench/flashback/native.py); this module runs them.
//!
//! Every system first loads the dataset the capture ran on. Then its N workers share one ordered
//! stream: a worker takes the next op, waits until it is due and runs it (`real`: op k is due at
//! start + (ts_k - ts_0) / speedup, Flashback's -style=real; `stress`: no schedule). How late
//! each op started (the lag behind the schedule) is recorded, and each op's latency both from
//! its actual start and from its scheduled start, so a slow system cannot hide behind the ops it
//! delayed. The recorder writes what it ran, with the time each call started, as the capture
//! the other systems replay. Per query and count, (documents scanned, latency) goes to
//! scans.csv; the replay's summary to replay.json.
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{params, wait_until, MeasureStep, Workload};
use crate::calls::json::{docs_of, filter_of, index_name, list_of, range_of, update_of};
use crate::error::{Error, Result};
use crate::events::{emit, now};
use crate::phase::{Env, Worker};
use crate::recorder::new_histogram;
use crate::calls::{IndexSpec, Store};

/// The schedule starts 20 ms after the workers, so the first op is not late by construction.
const LEAD: Duration = Duration::from_millis(20);
/// Per-op rows (latency against documents scanned) are kept for these op types.
const SCAN_OPS: [&str; 2] = ["query", "count"];
/// Op labels as the results name them (inserts into a capped collection are their own).
const LABELS: [&str; 9] = ["query", "count", "insert", "insert.capped", "update", "findandmodify", "remove", "getmore", "command"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
// Thread counts and timing are the phase plan's (`phases:` in the params file), not these.
struct Config {
    role: String,
    stream: String,
    dataset: Option<String>,
    expected: Option<Value>,
    collections: Map<String, Value>,
    capped: Vec<String>,
    out_dir: String,
    style: String,
    speedup: f64,
    op_filter: Option<Vec<String>>,
    #[serde(default)]
    capture_out: Option<String>,
    #[serde(default)]
    capture_header: Option<Value>,
}

#[derive(Default)]
struct Stats {
    read: BTreeMap<&'static str, u64>,
    run: BTreeMap<&'static str, u64>,
    skipped: BTreeMap<&'static str, BTreeMap<String, u64>>,
    lag: Option<Histogram<u64>>,
    rows: Vec<(&'static str, u64, u64, Option<f64>)>,
}

impl Stats {
    fn merge(&mut self, other: Stats) {
        for (k, v) in other.read {
            *self.read.entry(k).or_default() += v;
        }
        for (k, v) in other.run {
            *self.run.entry(k).or_default() += v;
        }
        for (label, reasons) in other.skipped {
            for (reason, n) in reasons {
                *self.skipped.entry(label).or_default().entry(reason).or_default() += n;
            }
        }
        if let Some(theirs) = other.lag {
            let mine = self.lag.get_or_insert_with(new_histogram);
            let _ = mine.add(&theirs);
        }
        self.rows.extend(other.rows);
    }
}

/// The ordered stream the workers share.
struct Stream {
    lines: std::io::Lines<BufReader<File>>,
    line: usize,
    first_ts: Option<f64>,
    start: Option<Instant>,
    /// Ops of each type in the whole stream (selected or not): the captured-against-replayed check.
    per_type: BTreeMap<&'static str, u64>,
}

/// The capture the recorder writes: a writer thread encodes and appends, so the calls being
/// captured pay for a lock and a channel send (in this process, as Flashback's profiler capture
/// added load to the server it recorded).
struct CaptureWriter {
    send: Mutex<Option<Sender<(f64, Value)>>>,
    thread: Mutex<Option<JoinHandle<Result<u64>>>>,
}

impl CaptureWriter {
    fn start(path: &str, header: &Value) -> Result<CaptureWriter> {
        let mut file = std::io::BufWriter::new(File::create(path).map_err(|e| Error::other(format!("{path}: {e}")))?);
        writeln!(file, "{header}")?;
        let (send, receive) = channel::<(f64, Value)>();
        let path = path.to_string();
        let thread = std::thread::Builder::new().name("capture-writer".into()).spawn(move || -> Result<u64> {
            let mut written = 0;
            for (ts, mut record) in receive {
                record["ts"] = json!(ts);
                record.as_object_mut().map(|o| o.remove("skip"));
                writeln!(file, "{record}").map_err(|e| Error::other(format!("{path}: {e}")))?;
                written += 1;
            }
            file.flush()?;
            Ok(written)
        })?;
        Ok(CaptureWriter { send: Mutex::new(Some(send)), thread: Mutex::new(Some(thread)) })
    }

    /// Timestamped and queued under one lock, so the file is in time order.
    fn add(&self, record: &Value) {
        let send = self.send.lock().unwrap();
        if let Some(s) = send.as_ref() {
            let _ = s.send((now(), record.clone()));
        }
    }

    fn finish(&self) -> Result<u64> {
        self.send.lock().unwrap().take();
        match self.thread.lock().unwrap().take() {
            Some(t) => t.join().map_err(|_| Error::other("the capture writer panicked"))?,
            None => Ok(0),
        }
    }
}

pub struct Flashback {
    cfg: Arc<Config>,
    stream: Option<Arc<Mutex<Stream>>>,
    stats: Arc<Mutex<Stats>>,
    capture: Option<Arc<CaptureWriter>>,
}

fn label_of(cfg: &Config, record: &Value) -> &'static str {
    let op = record["op"].as_str().unwrap_or("command");
    if op == "insert" {
        let collection = record["ns"].as_str().and_then(|ns| ns.split_once('.')).map(|(_, c)| c).unwrap_or("");
        if cfg.capped.iter().any(|c| c == collection) {
            return "insert.capped";
        }
    }
    LABELS.iter().find(|l| **l == op).copied().unwrap_or("command")
}

/// Runs one Store-level op; returns the documents it scanned or wrote.
fn execute(ctx: &mut dyn Store, record: &Value) -> Result<u64> {
    let collection = record["ns"].as_str().and_then(|ns| ns.split_once('.')).map(|(_, c)| c.to_string())
        .ok_or_else(|| Error::other(format!("ns must be 'database.collection': {}", record["ns"])))?;
    let store = &record["store"];
    let args = &store["args"];
    let index = index_name(&args["index"]);
    match store["method"].as_str().unwrap_or_default() {
        "insert_many" => {
            let docs = if args["docs"].is_null() { &record["command"]["documents"] } else { &args["docs"] };
            ctx.insert_many(&collection, &docs_of(docs)?).map(|n| n as u64)
        }
        "get" => Ok(ctx.get(&collection, index, &list_of(&args["key"])?)?.is_some() as u64),
        "get_many" => Ok(ctx.get_many(&collection, index.unwrap_or_default(), &list_of(&args["prefix"])?,
                                      &list_of(&args["last_values"])?)?.len() as u64),
        "scan" => Ok(ctx.scan(&collection, index, &range_of(args)?)?.len() as u64),
        "count" => ctx.count(&collection, index, &range_of(args)?).map(|n| n as u64),
        "update" => Ok(ctx.update(&collection, index, &list_of(&args["key"])?, &update_of(args)?)?.matched as u64),
        "delete" => Ok(ctx.delete(&collection, index, &list_of(&args["key"])?, &filter_of(args)?)? as u64),
        "create_collection" => ctx.create_collection(&collection, args["capped_bytes"].as_i64()).map(|_| 0),
        "create_index" => ctx.create_index(&collection, IndexSpec::from_json(&args["spec"])?).map(|_| 0),
        other => Err(Error::other(format!("unknown Store method {other:?}"))),
    }
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
        Ok(Flashback { cfg: Arc::new(cfg), stream: None, stats: Arc::new(Mutex::new(Stats::default())), capture: None })
    }

    fn dataset_lines(&self) -> Result<Vec<Value>> {
        let Some(path) = &self.cfg.dataset else { return Ok(Vec::new()) };
        let file = File::open(path).map_err(|e| Error::other(format!("{path}: {e}")))?;
        BufReader::new(file).lines().map(|l| {
            let line = l?;
            serde_json::from_str(&line).map_err(|e| Error::other(format!("{path}: {e}")))
        }).collect()
    }

    fn open_stream(&self) -> Result<Stream> {
        let path = &self.cfg.stream;
        let file = File::open(path).map_err(|e| Error::other(format!("{path}: {e}")))?;
        let mut lines = BufReader::new(file).lines();
        lines.next(); // the header
        Ok(Stream { lines, line: 1, first_ts: None, start: None, per_type: BTreeMap::new() })
    }
}

/// The next selected op and its due time (None in stress style), or None at the end.
fn take(cfg: &Config, stream: &Mutex<Stream>) -> Result<Option<(Value, Option<Instant>)>> {
    let mut s = stream.lock().unwrap();
    loop {
        let Some(line) = s.lines.next() else { return Ok(None) };
        s.line += 1;
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let record: Value = serde_json::from_str(&line)
            .map_err(|e| Error::other(format!("{}:{}: not a JSON object: {e}", cfg.stream, s.line)))?;
        let ts = record["ts"].as_f64().ok_or_else(|| Error::other(format!("{}:{}: ts must be a number", cfg.stream, s.line)))?;
        if s.first_ts.is_none() {
            // Anchored on the first op of the stream, selected or not, so a filtered replay keeps
            // the selected ops at their original offsets.
            s.first_ts = Some(ts);
            s.start = Some(Instant::now() + LEAD);
        }
        let label = label_of(cfg, &record);
        *s.per_type.entry(label).or_default() += 1;
        let op = record["op"].as_str().unwrap_or_default();
        if let Some(select) = &cfg.op_filter {
            if !select.iter().any(|t| t == op) {
                continue;
            }
        }
        let due = if cfg.style == "stress" {
            None
        } else {
            let offset = (ts - s.first_ts.unwrap()) / cfg.speedup;
            Some(s.start.unwrap() + Duration::from_secs_f64(offset.max(0.0)))
        };
        return Ok(Some((record, due)));
    }
}

fn replayer(cfg: Arc<Config>, stream: Arc<Mutex<Stream>>, stats: Arc<Mutex<Stats>>, capture: Option<Arc<CaptureWriter>>) -> Worker {
    Box::new(move |env: &mut Env| {
        let mut mine = Stats { lag: Some(new_histogram()), ..Default::default() };
        let result = (|| -> Result<()> {
            while !env.stopped() {
                let Some((record, due)) = take(&cfg, &stream)? else { return Ok(()) };
                let label = label_of(&cfg, &record);
                *mine.read.entry(label).or_default() += 1;
                if let Some(reason) = record["skip"].as_str() {
                    *mine.skipped.entry(label).or_default().entry(reason.to_string()).or_default() += 1;
                    continue;
                }
                if let Some(due) = due {
                    if !wait_until(env, due) {
                        return Ok(());
                    }
                    let late = Instant::now().saturating_duration_since(due).as_micros() as u64;
                    let _ = mine.lag.as_mut().unwrap().record(late.max(1));
                }
                if let Some(c) = &capture {
                    c.add(&record);
                }
                let t0 = Instant::now();
                let done = env.op(label, due, |ctx| execute(ctx, &record))?;
                let latency_us = t0.elapsed().as_micros() as u64;
                *mine.run.entry(label).or_default() += 1;
                let op = record["op"].as_str().unwrap_or_default();
                if let (true, Some(n)) = (SCAN_OPS.contains(&op), done) {
                    let offset = due.map(|d| {
                        let start = stream.lock().unwrap().start.unwrap();
                        d.saturating_duration_since(start).as_secs_f64()
                    });
                    mine.rows.push((label, n, latency_us, offset));
                }
            }
            Ok(())
        })();
        stats.lock().unwrap().merge(mine);
        result
    })
}

fn loader(lines: Vec<Value>) -> Worker {
    Box::new(move |env: &mut Env| {
        for line in lines {
            if env.stopped() {
                return Ok(());
            }
            let collection = line["collection"].as_str().unwrap_or_default().to_string();
            let docs = docs_of(&line["args"]["docs"])?;
            let name: &'static str = Box::leak(format!("LOAD_{}", collection.to_uppercase()).into_boxed_str());
            env.op(name, None, |ctx| ctx.insert_many(&collection, &docs).map(|n| n as u64))?;
        }
        Ok(())
    })
}

/// The runner's entry to this family (workloads/mod.rs).
pub fn build(params: &Value) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Flashback::new(params)?))
}

impl Workload for Flashback {
    fn setup(&mut self, ctx: &mut dyn Store) -> Result<()> {
        if self.cfg.dataset.is_some() {
            for line in self.dataset_lines()? {
                if line["method"] != "insert_many" {
                    let record = json!({"ns": format!("app.{}", line["collection"].as_str().unwrap_or_default()),
                                        "store": {"method": line["method"], "args": line["args"]}});
                    execute(ctx, &record)?;
                }
            }
        } else {
            // A capture of someone else's data: its collections, empty, as the header says.
            for (name, meta) in &self.cfg.collections {
                ctx.create_collection(name, meta["capped_bytes"].as_i64())?;
                for index in meta["indexes"].as_array().cloned().unwrap_or_default() {
                    ctx.create_index(name, IndexSpec::from_json(&index)?)?;
                }
            }
        }
        Ok(())
    }

    /// `threads` loaders share the ordinary collections' batches; the capped log is filled in
    /// order (its oldest events go first) by one loader of its own.
    fn load(&mut self, threads: usize) -> Result<Vec<Worker>> {
        let batches: Vec<Value> = self.dataset_lines()?.into_iter().filter(|l| l["method"] == "insert_many").collect();
        let capped = |l: &Value| self.cfg.capped.iter().any(|c| l["collection"] == c.as_str());
        let (in_order, others): (Vec<Value>, Vec<Value>) = batches.into_iter().partition(|l| capped(l));
        let mut shares: Vec<Vec<Value>> = vec![Vec::new(); threads.max(1)];
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
        self.cfg.expected.clone().unwrap_or_else(|| json!({}))
    }

    fn samples_per_collection(&self) -> bool {
        true
    }

    fn verify(&mut self, ctx: &mut dyn Store) -> Result<(Value, Value)> {
        let expected = self.cfg.expected.clone().unwrap_or(json!({}));
        let mut found = Map::new();
        for name in expected.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            found.insert(name.clone(), json!(ctx.count(&name, None, &Default::default())?));
        }
        Ok((expected, Value::Object(found)))
    }

    fn measure(&mut self, step: &MeasureStep) -> Result<Vec<Worker>> {
        let stream = Arc::new(Mutex::new(self.open_stream()?));
        self.stream = Some(stream.clone());
        emit("flashback", json!({"role": self.cfg.role, "capture": self.cfg.capture_out.clone().unwrap_or(self.cfg.stream.clone()),
                                 "style": self.cfg.style, "speedup": self.cfg.speedup, "workers": step.threads,
                                 "op_filter": self.cfg.op_filter}));
        if let Some(path) = &self.cfg.capture_out {
            let header = self.cfg.capture_header.clone().unwrap_or(json!({}));
            self.capture = Some(Arc::new(CaptureWriter::start(path, &header)?));
        }
        Ok((0..step.threads).map(|_| replayer(self.cfg.clone(), stream.clone(), self.stats.clone(), self.capture.clone())).collect())
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
