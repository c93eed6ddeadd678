//! Flashback's bundled application mix (lib/native/src/workloads/flashback/appmix.rs): the same
//! seed gives the same stream and dataset, another seed another stream, and the stream is the mix
//! it says. Moved from lib/tests/test_flashback_replay.py, which checked the deleted Python mix.
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use enginebench_runner::workloads::flashback::appmix::{AppMix, AppMixConfig};

/// lib/enginebench/families/flashback/params.py's defaults, smaller.
fn config(seed: i64) -> AppMixConfig {
    AppMixConfig { users: 50, posts: 2000, post_bytes: 400, capped_mb: 0.1, event_bytes: 200, rate: 400.0,
                   duration_s: 10.0, skew: 1.1, seed }
}

fn operations(seed: i64) -> Vec<Value> {
    AppMix::operations(Arc::new(AppMix::new(config(seed)))).collect()
}

#[test]
fn bundled_workload_is_deterministic_and_mixed() {
    let (first, again) = (operations(1), operations(1));
    assert!(first == again && first.len() > 3000, "{} ops", first.len());
    assert_eq!(AppMix::new(config(1)).load_batches(), AppMix::new(config(1)).load_batches());
    assert_ne!(operations(2), first);
    assert!(first.windows(2).all(|w| w[1]["ts"].as_f64() >= w[0]["ts"].as_f64()));
    let mut shares: BTreeMap<&str, f64> = BTreeMap::new();
    for r in &first {
        *shares.entry(r["op"].as_str().unwrap()).or_default() += 1.0 / first.len() as f64;
    }
    let want = [("query", 0.50), ("count", 0.08), ("insert", 0.20), ("update", 0.14), ("findandmodify", 0.05),
                ("remove", 0.03)];
    assert!((want.iter().map(|(_, s)| s).sum::<f64>() - 1.0).abs() < 1e-9);
    assert_eq!(shares.len(), want.len(), "{shares:?}");
    for (op, share) in want {
        assert!((shares[op] - share).abs() <= 0.03, "{op}: {shares:?}");
    }
}
