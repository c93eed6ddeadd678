//! MongoRocks' write throttle on a RocksDB that no longer has it.
//!
//! mongo-rocks r3.2.0 set `soft_rate_limit = 2.5` (rocks_engine.cpp RocksEngine::_options). In
//! the RocksDB of its day (4.1 to 4.3: db/column_family.cc RecalculateWriteStallConditions) that
//! delayed every write to `delayed_write_rate` (1 MB/s) whenever the highest compaction score of
//! levels 1 and below passed it (db/version_set.cc ComputeCompactionScore: a level's bytes over
//! its target), after the L0 and memtable rules. RocksDB 7.8 has no such option. Its nearest
//! equivalent is its own delay, which starts when the estimated pending compaction bytes reach
//! `soft_pending_compaction_bytes_limit`: same write controller, same starting rate, but a debt
//! of bytes instead of one level's overflow. So the runner keeps 4.x's condition and lets 7.8
//! delay: every POLL it reads 7.8's own per-level scores (the `rocksdb.cfstats-no-file-histogram`
//! property's Score column) and, while the highest of levels 1 and below is over the limit,
//! sets `soft_pending_compaction_bytes_limit` to 1 byte (RocksDB then delays writes as its
//! pending-bytes rule does, from `delayed_write_rate`), back to 0 (none) when it falls under.
//! With a limit of 1 or more (MongoRocks' 2.5) a level over it always carries compaction debt,
//! so RocksDB's rule (pending bytes >= 1) then holds. The scores are read as RocksDB prints them,
//! to one decimal. The difference that remains: 7.8 lowers the delayed rate while the debt grows (SetupDelay,
//! x0.8 per recalculation, at least 16 KB/s) where 4.x held it at 1 MB/s.
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the condition is read: RocksDB 4.x recalculated it at each new version (flush or
/// compaction), which on a loaded engine is every few hundred milliseconds at most.
pub const POLL: Duration = Duration::from_millis(100);

/// The scores of the levels in a `rocksdb.cfstats` text, by level number: its compaction
/// table's rows `  L<n>  files/compacting  size unit  score ...` (db/internal_stats.cc
/// PrintLevelStats at 7.8.3: "%4s %6d/%-3d %8s %5.1f ...", the size with its unit).
pub fn level_scores(cfstats: &str) -> Vec<(usize, f64)> {
    let mut out = Vec::new();
    for line in cfstats.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(level) = fields.first().and_then(|f| f.strip_prefix('L')).and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        if fields.get(1).is_some_and(|f| f.contains('/')) {
            if let Some(score) = fields.get(4).and_then(|s| s.parse::<f64>().ok()) {
                out.push((level, score));
            }
        }
        if line.contains("Sum") {
            break;
        }
    }
    out
}

/// The highest score of levels 1 and below (4.x's max_compaction_score: level 0 is scored by
/// its files and left out).
pub fn max_score_below_l0(scores: &[(usize, f64)]) -> f64 {
    scores.iter().filter(|(level, _)| *level >= 1).map(|(_, s)| *s).fold(0.0, f64::max)
}

/// What the throttle did, for the engine's stats: how many times it began delaying, for how
/// long in all, and the highest score it read.
#[derive(Default)]
pub struct Throttled {
    pub delaying: AtomicBool,
    pub episodes: AtomicI64,
    pub delayed_ms: AtomicI64,
    pub max_score_x100: AtomicI64,
    pub since: Mutex<Option<Instant>>,
    /// Option changes RocksDB refused (none expected: the option is a mutable one).
    pub refused: AtomicI64,
}

impl Throttled {
    /// One reading: returns whether the delay should now be on and whether that changed.
    pub fn read(&self, max_score: f64, limit: f64) -> (bool, bool) {
        self.max_score_x100.fetch_max((max_score * 100.0) as i64, Ordering::Relaxed);
        let over = max_score > limit;
        let was = self.delaying.swap(over, Ordering::Relaxed);
        let mut since = self.since.lock().unwrap();
        if over && !was {
            self.episodes.fetch_add(1, Ordering::Relaxed);
            *since = Some(Instant::now());
        } else if !over && was {
            if let Some(start) = since.take() {
                self.delayed_ms.fetch_add(start.elapsed().as_millis() as i64, Ordering::Relaxed);
            }
        }
        (over, over != was)
    }

    /// The milliseconds delayed so far, the current episode included.
    pub fn delayed_ms_now(&self) -> i64 {
        let ongoing = self.since.lock().unwrap().map_or(0, |s| s.elapsed().as_millis() as i64);
        self.delayed_ms.load(Ordering::Relaxed) + ongoing
    }

    pub fn stats(&self) -> Vec<(String, i64)> {
        vec![
            ("mongorocks.soft_rate_limit_delays".to_string(), self.episodes.load(Ordering::Relaxed)),
            ("mongorocks.soft_rate_limit_delayed_ms".to_string(), self.delayed_ms_now()),
            ("mongorocks.soft_rate_limit_delaying".to_string(), self.delaying.load(Ordering::Relaxed) as i64),
            ("mongorocks.max_level_score_x100".to_string(), self.max_score_x100.load(Ordering::Relaxed)),
            ("mongorocks.soft_rate_limit_refused".to_string(), self.refused.load(Ordering::Relaxed)),
        ]
    }
}

/// The polling thread's handle: stopped (and joined) by `stop`.
pub struct Poller {
    pub state: Arc<Throttled>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Poller {
    /// `read_scores` gives the engine's current cfstats text; `set_delay(true/false)` turns
    /// RocksDB's own delay on or off (false where RocksDB refused the change).
    pub fn start(limit: f64, read_scores: impl Fn() -> Option<String> + Send + 'static,
                 set_delay: impl Fn(bool) -> bool + Send + 'static) -> std::io::Result<Poller> {
        let state = Arc::new(Throttled::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (thread_state, stopping) = (state.clone(), stop.clone());
        let handle = std::thread::Builder::new().name("rocksdb-throttle".into()).spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                std::thread::sleep(POLL);
                let Some(text) = read_scores() else { continue };
                let (on, changed) = thread_state.read(max_score_below_l0(&level_scores(&text)), limit);
                if changed && !set_delay(on) {
                    thread_state.refused.fetch_add(1, Ordering::Relaxed);
                }
            }
        })?;
        Ok(Poller { state, stop, handle: Some(handle) })
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The compaction table as RocksDB 7.8.3 prints it (db/internal_stats.cc: the header, then
    // PrintLevelStats per level, then the Sum and Int rows); columns after Score trimmed.
    const CFSTATS: &str = "\n** Compaction Stats [default] **\n\
Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB)\n\
------------------------------------------------------------------\n\
  L0      3/0    12.10 MB   0.8      0.0     0.0      0.0       0.0\n\
  L4      2/1    40.00 MB   2.6      0.1     0.0      0.1       0.1\n\
  L5      4/0    90.25 MB   1.1      0.2     0.1      0.1       0.2\n\
  L6     20/0   512.00 MB   0.0      0.0     0.0      0.0       0.0\n\
 Sum     29/1   654.35 MB   0.0      0.3     0.1      0.2       0.3\n\
 Int      0/0     0.00 KB   0.0      0.0     0.0      0.0       0.0\n";

    #[test]
    fn the_scores_of_each_level_are_read_from_the_compaction_table() {
        assert_eq!(level_scores(CFSTATS), vec![(0, 0.8), (4, 2.6), (5, 1.1), (6, 0.0)]);
        // Level 0 is left out, as 4.x's max_compaction_score left it.
        assert_eq!(max_score_below_l0(&level_scores(CFSTATS)), 2.6);
        assert_eq!(max_score_below_l0(&[(0, 9.0)]), 0.0);
    }

    #[test]
    fn the_delay_is_on_while_the_score_is_over_the_limit() {
        let t = Throttled::default();
        assert_eq!(t.read(2.4, 2.5), (false, false));
        assert_eq!(t.read(2.6, 2.5), (true, true));
        assert_eq!(t.read(3.0, 2.5), (true, false));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(t.read(1.0, 2.5), (false, true));
        let stats: std::collections::HashMap<String, i64> = t.stats().into_iter().collect();
        assert_eq!(stats["mongorocks.soft_rate_limit_delays"], 1);
        assert!(stats["mongorocks.soft_rate_limit_delayed_ms"] >= 20);
        assert_eq!(stats["mongorocks.max_level_score_x100"], 300);
    }
}
