"""The generators against the statistics the workload spec states (linkbench.md)."""
import random
import statistics
import zlib
from collections import Counter

import numpy as np
import pytest

from enginebench.workloads.linkbench.distributions import (
    NLINKS_SEED, InvertibleShuffler, JavaRandom, LinkCounts, MotifData, Zipf, geometric_multiget,
    lognormal_size, nlinks_cdf)
from enginebench.workloads.linkbench.workload import OP_MIX, LinkBench, Params


def test_nlinks_cdf_is_the_published_one():
    values, cumulative = nlinks_cdf()
    mass = np.diff(np.concatenate([[0.0], cumulative]))
    assert cumulative[0] == pytest.approx(0.4533, abs=1e-4)               # 45.3% of nodes: no links
    assert cumulative[values.searchsorted(1)] == pytest.approx(0.7746, abs=1e-4)  # 77.5% at most 1
    assert values[-1] == 961_963 and cumulative[-1] == pytest.approx(1.0)
    assert float((values * mass).sum()) == pytest.approx(4.10, abs=0.01)  # mean out-degree
    assert np.all(np.diff(cumulative) >= 0)


def test_degrees_of_a_graph_follow_the_cdf():
    counts = LinkCounts(1, 1_000_001, 2)
    totals = counts.total(np.arange(1, 1_000_001))
    assert (totals == 0).mean() == pytest.approx(0.4533, abs=0.001)
    assert (totals <= 1).mean() == pytest.approx(0.7746, abs=0.001)
    assert totals.max() == 961_963            # rank 0 gets the top of the CDF
    # LinkBench's per-type split (ID2Chooser.calcLinkCount): 0->0, 1->1, 2->3, 3->4, 4->6, 5->6.
    assert counts.per_type(np.array([0, 1, 2, 3, 4, 5])).sum(axis=1).tolist() == [0, 1, 3, 4, 6, 6]


def test_max_degree_caps_only_the_top():
    capped = LinkCounts(1, 10_001, 2, max_degree=50).total(np.arange(1, 10_001))
    plain = LinkCounts(1, 10_001, 2).total(np.arange(1, 10_001))
    assert capped.max() == 50 and (capped == np.minimum(plain, 50)).all()


def test_java_random_matches_java():
    # new java.util.Random(42): nextInt(100) x3, nextInt(1000000), nextInt(1 << 20), from a JDK.
    rng = JavaRandom(42)
    assert [rng.next_int(100) for _ in range(3)] == [30, 63, 48]
    assert (rng.next_int(1_000_000), rng.next_int(1 << 20)) == (948884, 323715)


@pytest.mark.parametrize("n", [10, 1023, 1024, 4097, 100_000])
def test_shuffler_is_a_bijection_with_an_inverse(n):
    shuffler = InvertibleShuffler(NLINKS_SEED, n)
    ids = np.arange(n)
    permuted = shuffler.permute(ids)
    assert sorted(permuted.tolist()) == ids.tolist()
    assert (shuffler.invert(permuted) == ids).all()
    assert [shuffler.permute_one(i) for i in range(0, n, max(1, n // 97))] == permuted[::max(1, n // 97)].tolist()


def test_zipf_head_probability():
    n, theta = 1_000_000, 0.8
    zipf = Zipf(n, theta)
    rng = random.Random(3)
    draws = Counter(zipf.rank(rng.random()) for _ in range(200_000))
    assert draws[0] / 200_000 == pytest.approx(1 / zipf.zetan, rel=0.05)
    assert draws[1] / 200_000 == pytest.approx(0.5 ** theta / zipf.zetan, rel=0.08)
    assert max(draws) < n


def test_multiget_sizes_as_linkbench_draws_them():
    rng = random.Random(5)
    sizes = [geometric_multiget(rng) for _ in range(100_000)]
    assert min(sizes) == 2 and max(sizes) <= 127          # the off-by-one keeps 1 out
    assert statistics.mean(sizes) == pytest.approx(3.6, abs=0.1)


def test_payload_sizes_are_lognormal_with_the_spec_medians():
    rng = random.Random(9)
    assert statistics.median(lognormal_size(rng, 8, 1.0, 254) for _ in range(50_000)) == pytest.approx(8, abs=1)
    assert statistics.median(lognormal_size(rng, 128, 1.0, 1 << 20) for _ in range(50_000)) == pytest.approx(128, rel=0.05)


def test_motif_data_compresses_as_configured():
    rng = random.Random(1)
    link = MotifData(rng, 32, 100, 0.225)
    node = MotifData(rng, 50, 220, 0.63)
    link_bytes = b"".join(link.make(rng, 128) for _ in range(2000))
    node_bytes = b"".join(node.make(rng, 128) for _ in range(2000))
    assert set(link_bytes) <= set(range(32, 101)) and set(node_bytes) <= set(range(50, 221))
    # More unique chunks compress less: links (22.5% fresh) shrink far more than nodes (63%).
    link_ratio = len(zlib.compress(link_bytes)) / len(link_bytes)
    node_ratio = len(zlib.compress(node_bytes)) / len(node_bytes)
    assert link_ratio < node_ratio < 1


def test_op_mix_frequencies():
    lb = LinkBench(Params(maxid1=10_001))
    requester = lb.requester(0, 1)
    draws = Counter(requester._op() for _ in range(200_000))
    for name, pct in OP_MIX:
        assert draws[name] / 2000 == pytest.approx(pct, abs=max(0.25, pct * 0.05)), name


def test_requesters_never_reuse_new_node_ids():
    lb = LinkBench(Params(maxid1=1001))
    ids = set()
    for w in range(3):
        r = lb.requester(w, 3)
        for _ in range(50):
            ids.add(r._next_node)
            r._next_node += r._node_step
    assert len(ids) == 150 and min(ids) >= 1001
