//! LinkBench's generator against the statistics its spec states (linkbench.md §2-§3): the nlinks
//! CDF and the degrees it gives a graph, the max_degree cap, java.util.Random, the shuffler, the
//! Zipf head, the multiget sizes, the payload sizes, the motif data's compressibility, the op mix
//! and the requesters' new node ids. Moved from lib/tests/test_linkbench_distributions.py, with
//! the same seeds and tolerances, now that the runner's generator is the only one.
mod common;

use std::collections::{BTreeMap, HashSet};

use serde_json::json;

use enginebench_runner::pyrandom::Random;
use enginebench_runner::workloads::linkbench::distributions::{
    geometric_multiget, lognormal_size, nlinks_cdf, InvertibleShuffler, JavaRandom, LinkCounts, MotifData, Zipf,
    NLINKS_SEED};
use enginebench_runner::workloads::linkbench::{LinkBench, Request, OP_MIX};

fn close(got: f64, want: f64, abs: f64) -> bool {
    (got - want).abs() <= abs
}

#[test]
fn nlinks_cdf_is_the_published_one() {
    let (values, cumulative) = nlinks_cdf();
    let (mut mean, mut previous) = (0.0, 0.0);
    for (v, c) in values.iter().zip(cumulative) {
        mean += *v as f64 * (c - previous);
        previous = *c;
    }
    assert!(close(cumulative[0], 0.4533, 1e-4), "45.3% of nodes have no links: {}", cumulative[0]);
    let at_one = values.partition_point(|v| *v < 1); // numpy's searchsorted(1)
    assert!(close(cumulative[at_one], 0.7746, 1e-4), "77.5% have at most 1: {}", cumulative[at_one]);
    assert_eq!(*values.last().unwrap(), 961_963);
    assert!(close(*cumulative.last().unwrap(), 1.0, 1e-6));
    assert!(close(mean, 4.10, 0.01), "mean out-degree {mean}");
    assert!(cumulative.windows(2).all(|w| w[1] >= w[0]));
}

#[test]
fn degrees_of_a_graph_follow_the_cdf() {
    let counts = LinkCounts::new(1, 1_000_001, 2, None);
    let totals: Vec<i64> = (1..1_000_001).map(|id1| counts.total(id1)).collect();
    let share = |f: &dyn Fn(i64) -> bool| totals.iter().filter(|t| f(**t)).count() as f64 / totals.len() as f64;
    assert!(close(share(&|t| t == 0), 0.4533, 0.001), "{}", share(&|t| t == 0));
    assert!(close(share(&|t| t <= 1), 0.7746, 0.001), "{}", share(&|t| t <= 1));
    assert_eq!(*totals.iter().max().unwrap(), 961_963, "rank 0 gets the top of the CDF");
    // LinkBench's per-type split (ID2Chooser.calcLinkCount): 0->0, 1->1, 2->3, 3->4, 4->6, 5->6.
    let split: Vec<i64> = (0..6).map(|t| counts.per_type(t).iter().sum()).collect();
    assert_eq!(split, [0, 1, 3, 4, 6, 6]);
}

#[test]
fn max_degree_caps_only_the_top() {
    let capped = LinkCounts::new(1, 10_001, 2, Some(50));
    let plain = LinkCounts::new(1, 10_001, 2, None);
    assert_eq!((1..10_001).map(|i| capped.total(i)).max(), Some(50));
    assert!((1..10_001).all(|i| capped.total(i) == plain.total(i).min(50)));
}

#[test]
fn java_random_matches_java() {
    // new java.util.Random(42): nextInt(100) x3, nextInt(1000000), nextInt(1 << 20), from a JDK.
    let mut rng = JavaRandom::new(42);
    assert_eq!([rng.next_int(100), rng.next_int(100), rng.next_int(100)], [30, 63, 48]);
    assert_eq!((rng.next_int(1_000_000), rng.next_int(1 << 20)), (948884, 323715));
}

#[test]
fn shuffler_is_a_bijection_with_an_inverse() {
    for n in [10, 1023, 1024, 4097, 100_000] {
        let shuffler = InvertibleShuffler::new(NLINKS_SEED, n);
        let mut permuted: Vec<i64> = (0..n).map(|i| shuffler.permute(i)).collect();
        assert!((0..n).all(|i| shuffler.invert(permuted[i as usize]) == i), "n={n}");
        permuted.sort();
        assert_eq!(permuted, (0..n).collect::<Vec<_>>(), "n={n}");
    }
}

#[test]
fn zipf_head_probability() {
    let (n, theta) = (1_000_000, 0.8);
    let zipf = Zipf::new(n, theta);
    let mut rng = Random::from_int(3);
    let mut draws: BTreeMap<i64, u64> = BTreeMap::new();
    for _ in 0..200_000 {
        *draws.entry(zipf.rank(rng.random())).or_default() += 1;
    }
    let p0 = draws[&0] as f64 / 200_000.0;
    let p1 = draws[&1] as f64 / 200_000.0;
    let (want0, want1) = (1.0 / zipf.zetan, 0.5f64.powf(theta) / zipf.zetan);
    assert!((p0 - want0).abs() <= want0 * 0.05, "{p0} vs {want0}");
    assert!((p1 - want1).abs() <= want1 * 0.08, "{p1} vs {want1}");
    assert!(*draws.keys().last().unwrap() < n);
}

#[test]
fn multiget_sizes_as_linkbench_draws_them() {
    let mut rng = Random::from_int(5);
    let sizes: Vec<i64> = (0..100_000).map(|_| geometric_multiget(&mut rng)).collect();
    // The off-by-one keeps 1 out.
    assert_eq!(*sizes.iter().min().unwrap(), 2);
    assert!(*sizes.iter().max().unwrap() <= 127);
    let mean = sizes.iter().sum::<i64>() as f64 / sizes.len() as f64;
    assert!(close(mean, 3.6, 0.1), "mean multiget size {mean}");
}

#[test]
fn payload_sizes_are_lognormal_with_the_spec_medians() {
    let mut rng = Random::from_int(9);
    let links = common::median((0..50_000).map(|_| lognormal_size(&mut rng, 8.0, 1.0, 254) as f64).collect());
    let nodes = common::median((0..50_000).map(|_| lognormal_size(&mut rng, 128.0, 1.0, 1 << 20) as f64).collect());
    assert!(close(links, 8.0, 1.0), "link payload median {links}");
    assert!((nodes - 128.0).abs() <= 128.0 * 0.05, "node payload median {nodes}");
}

#[test]
fn motif_data_compresses_as_configured() {
    let mut rng = Random::from_int(1);
    let link = MotifData::new(&mut rng, 32, 100, 0.225);
    let node = MotifData::new(&mut rng, 50, 220, 0.63);
    let link_bytes: Vec<u8> = (0..2000).flat_map(|_| link.make(&mut rng, 128)).collect();
    let node_bytes: Vec<u8> = (0..2000).flat_map(|_| node.make(&mut rng, 128)).collect();
    assert!(link_bytes.iter().all(|b| (32..=100).contains(b)) && node_bytes.iter().all(|b| (50..=220).contains(b)));
    // More unique chunks compress less: links (22.5% fresh) shrink far more than nodes (63%).
    let (link_ratio, node_ratio) = (common::zlib_ratio(&link_bytes, 6), common::zlib_ratio(&node_bytes, 6));
    assert!(link_ratio < node_ratio && node_ratio < 1.0, "{link_ratio} {node_ratio}");
}

#[test]
fn op_mix_frequencies() {
    let mut lb = LinkBench::new(&json!({"maxid1": 10_001})).unwrap();
    let requester = lb.requester(0, 1);
    let mut requester = requester.lock().unwrap();
    let mut draws: BTreeMap<&str, u64> = BTreeMap::new();
    for _ in 0..200_000 {
        *draws.entry(requester.next().op()).or_default() += 1;
    }
    for (name, pct) in OP_MIX {
        let got = *draws.get(name).unwrap_or(&0) as f64 / 2000.0;
        assert!(close(got, pct, (pct * 0.05).max(0.25)), "{name}: {got}% drawn, {pct}% in the mix");
    }
}

#[test]
fn requesters_never_reuse_new_node_ids() {
    let mut lb = LinkBench::new(&json!({"maxid1": 1001})).unwrap();
    let mut ids = HashSet::new();
    for w in 0..3 {
        let requester = lb.requester(w, 3);
        let mut requester = requester.lock().unwrap();
        let mut added = 0;
        while added < 50 {
            if let Request::AddNode(node) = requester.next() {
                let id = node.get_i32("_id").map(i64::from).or_else(|_| node.get_i64("_id")).unwrap();
                ids.insert(id);
                added += 1;
            }
        }
    }
    assert_eq!(ids.len(), 150);
    assert!(*ids.iter().min().unwrap() >= 1001);
}
