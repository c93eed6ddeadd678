//! The bundled workload: a small social app's traffic, for users with no capture of their own.
//!
//! Parse's replays were production traffic from a mobile backend, more read- than write-heavy
//! (seed 003). This mix imitates one: users with profiles, posts whose number per user is skewed
//! (a few users post a lot), a counter handed out with findAndModify, and an activity log kept in
//! a capped collection. Reads scan very different numbers of documents (one profile, a page of a
//! feed, a user's posts over a time window, a range of post ids), so latency can be set against
//! documents scanned. Arrivals are Poisson at `rate` ops/s.
//!
//! Everything is generated from `seed`: the loaded dataset and the operation stream are the same
//! on every run and every engine. The generator tracks the ids it inserted and removed itself, so
//! the stream never depends on what an engine answered.
use std::collections::HashSet;
use std::sync::Arc;

use bson::{doc, Bson, Document};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::calls::{int, IndexSpec};
use crate::pyrandom::Random;

pub const DATABASE: &str = "app";
pub const USERS: &str = "users";
pub const POSTS: &str = "posts";
pub const COUNTERS: &str = "counters";
pub const EVENTS: &str = "events";
pub const POST_INDEX: &str = "user_created";
/// Seconds of history the loaded posts cover.
const TIME_SPAN: i64 = 1_000_000;
/// Writes touch posts inserted at least this many ops earlier.
const ID_GAP_OPS: i64 = 2_000;
const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
const LOAD_BATCH: i64 = 500;

/// The mix, as (kind, share).
const MIX: [(&str, f64); 11] = [("profile", 0.15), ("feed", 0.15), ("user_range", 0.12), ("id_range", 0.08),
                                ("count", 0.08), ("post", 0.10), ("event", 0.10), ("like", 0.09),
                                ("profile_update", 0.05), ("next_id", 0.05), ("remove", 0.03)];

/// The bundled workload's shape; a capture's header keeps it, so a replay loads the same data.
#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct AppMixConfig {
    pub users: i64,
    /// Loaded before the capture starts.
    pub posts: i64,
    pub post_bytes: usize,
    /// The activity log's size cap.
    pub capped_mb: f64,
    pub event_bytes: usize,
    /// Mean arrivals per second.
    pub rate: f64,
    /// Length of the generated stream.
    pub duration_s: f64,
    /// Zipf exponent of posts (and activity) per user.
    pub skew: f64,
    pub seed: i64,
}

impl AppMixConfig {
    pub fn capped_bytes(&self) -> i64 {
        (self.capped_mb * (1 << 20) as f64) as i64
    }
}

pub struct AppMix {
    pub cfg: AppMixConfig,
    user_cdf: Vec<f64>,
    mix_cdf: Vec<f64>,
    pool: Vec<u8>,
}

fn bisect_left(cdf: &[f64], x: f64) -> usize {
    cdf.partition_point(|v| *v < x)
}

impl AppMix {
    pub fn new(cfg: AppMixConfig) -> AppMix {
        let weights: Vec<f64> = (0..cfg.users).map(|rank| 1.0 / ((rank + 1) as f64).powf(cfg.skew)).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let user_cdf = weights.iter().map(|w| {
            acc += w / total;
            acc
        }).collect();
        let mut acc = 0.0;
        let mix_cdf = MIX.iter().map(|(_, share)| {
            acc += share;
            acc
        }).collect();
        let mut rng = Random::from_int(cfg.seed as u128);
        let chunk: Vec<u8> = (0..1 << 14).map(|_| *rng.choice(LETTERS)).collect();
        let pool = chunk.repeat(4);
        AppMix { cfg, user_cdf, mix_cdf, pool }
    }

    /// What a capture's header says about the data it ran on, so a replay can load it.
    pub fn descriptor(&self) -> Value {
        json!({"generator": "appmix", "config": self.cfg})
    }

    /// The collections as a capture's header lists them.
    pub fn collections(&self) -> Value {
        let index = IndexSpec::new(POST_INDEX, &[("user", 1), ("created", 1)], false).to_json();
        json!({USERS: {"capped_bytes": null, "indexes": []}, POSTS: {"capped_bytes": null, "indexes": [index]},
               COUNTERS: {"capped_bytes": null, "indexes": []},
               EVENTS: {"capped_bytes": self.cfg.capped_bytes(), "indexes": []}})
    }

    fn user(&self, rng: &mut Random) -> i64 {
        (bisect_left(&self.user_cdf, rng.random()) as i64).min(self.cfg.users - 1)
    }

    fn text(&self, rng: &mut Random, length: usize) -> String {
        let start = rng.randrange(0, (self.pool.len() - length) as i64) as usize;
        String::from_utf8_lossy(&self.pool[start..start + length]).into_owned()
    }

    fn post(&self, rng: &mut Random, post_id: i64, created: i64) -> Document {
        doc! {"_id": int(post_id), "user": int(self.user(rng)), "created": int(created), "likes": 0,
              "body": self.text(rng, self.cfg.post_bytes)}
    }

    /// Fixed size (int32 fields, fixed text), so the cap holds an exact number of events.
    fn event(&self, rng: &mut Random, seq: i64) -> Document {
        doc! {"_id": int(seq), "user": int(self.user(rng)), "kind": int(rng.randrange(0, 8)),
              "body": self.text(rng, self.cfg.event_bytes)}
    }

    fn event_size(&self) -> i64 {
        self.event(&mut Random::from_int(0), 0).to_vec().map(|v| v.len() as i64).unwrap_or(1)
    }

    /// Fill the log past its cap, so capture starts in the steady state: every insert deletes.
    fn load_events(&self) -> i64 {
        self.cfg.capped_bytes() * 5 / 4 / self.event_size() + 1
    }

    pub fn expected_after_load(&self) -> Value {
        let events = self.load_events().min(self.cfg.capped_bytes() / self.event_size());
        json!({USERS: self.cfg.users, POSTS: self.cfg.posts, COUNTERS: 1, EVENTS: events})
    }

    /// (collection, documents) batches of the dataset, deterministic.
    pub fn load_batches(&self) -> Vec<(&'static str, Vec<Document>)> {
        let mut rng = Random::from_int((self.cfg.seed * 7919 + 1) as u128);
        let mut out = Vec::new();
        for start in (0..self.cfg.users).step_by(LOAD_BATCH as usize) {
            out.push((USERS, (start..(start + LOAD_BATCH).min(self.cfg.users)).map(|u| doc! {
                "_id": int(u), "name": format!("user{u}"), "score": 0, "visits": 0, "updated": 0,
                "bio": self.text(&mut rng, 150)}).collect()));
        }
        for start in (0..self.cfg.posts).step_by(LOAD_BATCH as usize) {
            // Created times spread evenly over the history, in id order (as time-ordered ids are).
            out.push((POSTS, (start..(start + LOAD_BATCH).min(self.cfg.posts))
                .map(|i| self.post(&mut rng, i, i * TIME_SPAN / self.cfg.posts.max(1))).collect()));
        }
        out.push((COUNTERS, vec![doc! {"_id": "post_id", "seq": int(self.cfg.posts)}]));
        let events = self.load_events();
        for start in (0..events).step_by(LOAD_BATCH as usize) {
            out.push((EVENTS, (start..(start + LOAD_BATCH).min(events)).map(|s| self.event(&mut rng, s)).collect()));
        }
        out
    }

    /// The operation stream: op records in time order, each with its Store call
    /// ({"ts": seconds from the start, "ns", "op", "store": {"method", "args"}}).
    pub fn operations(app: Arc<AppMix>) -> Operations {
        let (seed, next_post, next_event) = (app.cfg.seed as u128, app.cfg.posts, app.load_events());
        Operations { app, rng: Random::from_int(seed), next_post, next_event, removed: HashSet::new(), t: 0.0, k: 0 }
    }
}

pub struct Operations {
    app: Arc<AppMix>,
    rng: Random,
    next_post: i64,
    next_event: i64,
    removed: HashSet<i64>,
    t: f64,
    k: i64,
}

fn ext(value: Bson) -> Value {
    value.into_relaxed_extjson()
}

fn record(collection: &str, op: &str, method: &str, args: Value) -> Value {
    json!({"ns": format!("{DATABASE}.{collection}"), "op": op, "store": {"method": method, "args": args}})
}

impl Iterator for Operations {
    type Item = Value;

    fn next(&mut self) -> Option<Value> {
        let app = self.app.clone();
        let cfg = &app.cfg;
        self.t += self.rng.expovariate(cfg.rate);
        if self.t >= cfg.duration_s {
            return None;
        }
        let kind = MIX[bisect_left(&app.mix_cdf, self.rng.random()).min(MIX.len() - 1)].0;
        let settled = if self.k >= ID_GAP_OPS { (self.next_post - ID_GAP_OPS).max(1) } else { cfg.posts };
        self.k += 1;
        let rng = &mut self.rng;
        let mut out = match kind {
            "post" => {
                let created = TIME_SPAN + (self.t * 1000.0) as i64;
                let post = app.post(rng, self.next_post, created);
                self.next_post += 1;
                record(POSTS, "insert", "insert_many", json!({"docs": [ext(Bson::Document(post))]}))
            }
            "event" => {
                let event = app.event(rng, self.next_event);
                self.next_event += 1;
                record(EVENTS, "insert", "insert_many", json!({"docs": [ext(Bson::Document(event))]}))
            }
            "profile" => record(USERS, "query", "get", json!({"index": null, "key": [app.user(rng)]})),
            "feed" => record(POSTS, "query", "scan", json!({"index": POST_INDEX, "prefix": [app.user(rng)],
                                                            "reverse": true, "limit": 20})),
            "user_range" => user_range(&app, rng),
            "id_range" => id_range(rng, settled),
            "count" => record(POSTS, "count", "count", json!({"index": POST_INDEX, "prefix": [app.user(rng)]})),
            "like" => record(POSTS, "update", "update", json!({"index": null, "key": [rng.randrange(0, settled)],
                                                               "inc": {"likes": 1}})),
            "profile_update" => {
                let user = app.user(rng);
                record(USERS, "update", "update", json!({"index": null, "key": [user],
                    "set": {"updated": (self.t * 1000.0) as i64}, "inc": {"visits": 1, "score": rng.randrange(1, 10)}}))
            }
            "next_id" => record(COUNTERS, "findandmodify", "update", json!({"index": null, "key": ["post_id"],
                                                                             "inc": {"seq": 1}, "return_before": true})),
            // remove: a settled post not removed before; with too few left, a count instead
            _ if self.removed.len() as i64 >= settled / 2 =>
                record(POSTS, "count", "count", json!({"index": POST_INDEX, "prefix": [app.user(rng)]})),
            _ => remove(rng, &mut self.removed, settled),
        };
        out["ts"] = json!(self.t);
        Some(out)
    }
}

/// A settled post not removed before.
fn remove(rng: &mut Random, removed: &mut HashSet<i64>, settled: i64) -> Value {
    let mut victim = rng.randrange(0, settled);
    while removed.contains(&victim) {
        victim = rng.randrange(0, settled);
    }
    removed.insert(victim);
    record(POSTS, "remove", "delete", json!({"index": null, "key": [victim]}))
}

/// A user's posts over a time window of log-uniform width (1/20,000 to 1/4 of the span).
fn user_range(app: &AppMix, rng: &mut Random) -> Value {
    let (lo, hi) = (((TIME_SPAN as f64) / 2e4).ln(), ((TIME_SPAN as f64) / 4.0).ln());
    let width = rng.uniform(lo, hi).exp() as i64;
    let low = rng.randrange(0, TIME_SPAN - width);
    record(POSTS, "query", "scan", json!({"index": POST_INDEX, "prefix": [app.user(rng)], "low": low,
                                          "high": low + width}))
}

/// Settled posts over an id range of log-uniform width (1 to 2,000).
fn id_range(rng: &mut Random, settled: i64) -> Value {
    let width = rng.uniform(0.0, 2000f64.ln()).exp() as i64;
    let low = rng.randrange(0, (settled - width).max(1));
    record(POSTS, "query", "scan", json!({"index": null, "low": low, "high": low + width - 1}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> AppMix {
        AppMix::new(AppMixConfig { users: 50, posts: 1000, post_bytes: 40, capped_mb: 0.05, event_bytes: 30,
                                   rate: 500.0, duration_s: 2.0, skew: 1.1, seed: 1 })
    }

    #[test]
    fn the_stream_and_the_dataset_are_the_same_on_every_run() {
        let (a, b) = (Arc::new(small()), Arc::new(small()));
        assert_eq!(AppMix::operations(a.clone()).collect::<Vec<_>>(), AppMix::operations(b.clone()).collect::<Vec<_>>());
        assert_eq!(a.load_batches(), b.load_batches());
        let ops: Vec<Value> = AppMix::operations(a).collect();
        assert!(ops.len() > 500 && ops.len() < 1500, "about rate x duration ops: {}", ops.len());
        assert!(ops.windows(2).all(|w| w[0]["ts"].as_f64() < w[1]["ts"].as_f64()));
    }

    #[test]
    fn the_loaded_log_overflows_its_cap_and_every_event_has_one_size() {
        let app = small();
        let events: Vec<Document> = app.load_batches().into_iter().filter(|(c, _)| *c == EVENTS).flat_map(|(_, d)| d).collect();
        let sizes: HashSet<usize> = events.iter().map(|d| d.to_vec().unwrap().len()).collect();
        assert_eq!(sizes.len(), 1);
        assert!(events.len() as i64 * app.event_size() > app.cfg.capped_bytes());
        assert_eq!(app.expected_after_load()[EVENTS], json!(app.cfg.capped_bytes() / app.event_size()));
    }
}
