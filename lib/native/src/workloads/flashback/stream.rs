//! The ordered op stream a replay's workers share, and its schedule.
//!
//! The recorder's stream is the bundled mix generated live (appmix.rs); a replayer's is an ops
//! file (lib/enginebench/flashback/format.py specifies it): the recorder's capture or a user's.
//! `real` style: op k is due at start + (ts_k - ts_0) / speedup, Flashback's -style=real;
//! `stress`: no schedule. The schedule is anchored on the first op of the stream, selected or
//! not, so a filtered replay keeps the selected ops at their original offsets.
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::appmix::{AppMix, Operations};
use crate::error::{Error, Result};

/// The schedule starts 20 ms after the workers, so the first op is not late by construction.
const LEAD: Duration = Duration::from_millis(20);

enum Source {
    Generated(Operations),
    File { path: String, lines: std::io::Lines<BufReader<File>>, line: usize },
}

pub struct Stream {
    source: Source,
    first_ts: Option<f64>,
    pub start: Option<Instant>,
    /// Ops of each type in the whole stream (selected or not): the captured-against-replayed check.
    pub per_type: BTreeMap<&'static str, u64>,
}

/// How the workers take ops: the schedule's style, its speed-up, the types replayed.
pub struct Selection<'a> {
    pub style: &'a str,
    pub speedup: f64,
    pub op_filter: Option<&'a [String]>,
}

impl Stream {
    pub fn generated(app: Arc<AppMix>) -> Stream {
        Stream { source: Source::Generated(AppMix::operations(app)), first_ts: None, start: None, per_type: BTreeMap::new() }
    }

    /// An ops file, after its header line.
    pub fn file(path: &str) -> Result<Stream> {
        let file = File::open(path).map_err(|e| Error::other(format!("{path}: {e}")))?;
        let mut lines = BufReader::new(file).lines();
        lines.next();
        Ok(Stream { source: Source::File { path: path.to_string(), lines, line: 1 }, first_ts: None, start: None,
                    per_type: BTreeMap::new() })
    }

    fn next_record(&mut self) -> Result<Option<Value>> {
        match &mut self.source {
            Source::Generated(ops) => Ok(ops.next()),
            Source::File { path, lines, line } => loop {
                let Some(text) = lines.next() else { return Ok(None) };
                *line += 1;
                let text = text?;
                if text.trim().is_empty() {
                    continue;
                }
                return serde_json::from_str(&text).map(Some)
                    .map_err(|e| Error::other(format!("{path}:{line}: not a JSON object: {e}")));
            },
        }
    }

    /// The next selected op and its due time (None in stress style), or None at the end.
    pub fn take(&mut self, how: &Selection, label: impl Fn(&Value) -> &'static str) -> Result<Option<(Value, Option<Instant>)>> {
        loop {
            let Some(record) = self.next_record()? else { return Ok(None) };
            let ts = record["ts"].as_f64().ok_or_else(|| Error::other(format!("an op without a numeric ts: {record}")))?;
            if self.first_ts.is_none() {
                self.first_ts = Some(ts);
                self.start = Some(Instant::now() + LEAD);
            }
            *self.per_type.entry(label(&record)).or_default() += 1;
            let op = record["op"].as_str().unwrap_or_default();
            if how.op_filter.is_some_and(|select| !select.iter().any(|t| t == op)) {
                continue;
            }
            let due = (how.style != "stress").then(|| {
                let offset = (ts - self.first_ts.unwrap()) / how.speedup;
                self.start.unwrap() + Duration::from_secs_f64(offset.max(0.0))
            });
            return Ok(Some((record, due)));
        }
    }
}
