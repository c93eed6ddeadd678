"""sysbench: the post's dataset at each scale, and a smoke run with its report. Its documents, its
load and the duplicate-key race its transactions meet are checked on the runner's workload
(lib/native/tests/sysbench_generator.rs)."""
import polars as pl
import pytest

from enginebench.params.loader import load_params
from enginebench.families.sysbench import report as sb

from conftest import smoke_run_fixture


def test_paper_scale_is_the_posts_dataset():
    """The post's source page: NUM_COLLECTIONS=640, NUM_DOCUMENTS_PER_COLLECTION=1000000,
    NUM_WRITER_THREADS=64."""
    p = load_params("sysbench_cgroups", "paper")
    assert (p["workload"]["collections"], p["workload"]["docs_per_collection"]) == (640, 1_000_000)
    assert p["phases"]["measure"]["threads"] == 64


# The post's ~250 GB for 640M documents on MMAP (the params file's default-scale comment says
# where it comes from).
POST_BYTES_PER_DOC = 250e9 / 640e6


def test_default_scale_keeps_the_posts_ratios():
    paper, default = load_params("sysbench_cgroups", "paper"), load_params("sysbench_cgroups", "default")

    def data_to_memory(p):
        """Per memory size, data over the memory for the engine's cache and the data: the
        process's own memory (memory_own_mb) is added to the limit, not taken from it."""
        w = p["workload"]
        data_mb = w["collections"] * w["docs_per_collection"] * POST_BYTES_PER_DOC / 2**20
        return {s["label"]: data_mb / s["memory_limit_mb"] for s in p["systems"] if s["role"] in ("btree", "lsm")}
    post, ours = data_to_memory(paper), data_to_memory(default)
    assert post.keys() == ours.keys()
    for label in post:
        assert ours[label] == pytest.approx(post[label], rel=0.1), label
    # Every scaled-down limit adds its engine's own memory, one figure for one engine at one size
    # (WiredTiger's was measured per size: it grows with the cache), never less at a larger size.
    own = {(s["engine"], s["memory_limit_mb"], s["memory_own_mb"]) for s in default["systems"]}
    assert all(mb > 0 for _, _, mb in own)
    assert len(own) == len({(engine, limit) for engine, limit, _ in own})
    for engine, limit, mb in own:
        assert all(other >= mb for e, bigger, other in own if e == engine and bigger > limit), engine
    assert all(s["memory_own_mb"] == 0 for s in paper["systems"])

    def collections_per_writer(p):
        return p["workload"]["collections"] / p["phases"]["measure"]["threads"]
    assert collections_per_writer(default) == collections_per_writer(paper) == 10


smoke = smoke_run_fixture("sysbench_cgroups")


def test_smoke_run(smoke):
    run = smoke
    assert run.manifest["status"] == "complete"
    for s in run.systems:
        assert s["load_verified"]["ok"] and s["consistency"]["mismatches"] == 0
        assert s["resources"]["memory_limit_mb"] == s["memory_limit_mb"]  # each run's own limit
    runs = run.intervals.filter(pl.col("phase") == "run")
    assert (runs["ops_per_s"] > 0).all()
    assert set(run.ops.filter(pl.col("phase") == "run")["op"]) <= {"TRANSACTION", "DUPLICATE_KEY_RETRY"}
    claims = sb.claims_table(run)
    assert set(claims["id"]) == {"sb.lsm_vs_btree", "sb.btree_vs_mmap", "sb.checkpoint", "sb.cache_scaling",
                                 "sb.fractal_flat", "sb.write_per_op", "sb.tokumxse"}
    # TokuMX 2.0.1 and TokuMXse RC6 at the one smoke size: their ratio; TokuMX at two sizes: none.
    tokumxse = claims.filter(pl.col("id") == "sb.tokumxse").row(0, named=True)
    assert tokumxse["measured_ratio"] > 0 and tokumxse["from"].startswith("192 MB: ")
    fractal = claims.filter(pl.col("id") == "sb.fractal_flat").row(0, named=True)
    assert fractal["verdict"] == "not evaluated" and "two memory sizes" in fractal["reason"]
    assert sb.our_matrix(run).height == 1


def test_metrics_over_time_mark_the_half_the_throughput_averages(smoke):
    from enginebench.report import charts, over_time
    table = over_time.interval_table(smoke, sb.OVER_TIME)
    measured = smoke.intervals.filter(pl.col("phase") == "run")
    assert table.height == measured.height and set(table["phase"]) == {"run"}
    assert (table["ops/s"] > 0).all() and (table["p99 (ms)"] > 0).all() and (table["RSS (MiB)"] > 0).all()
    assert table["rKB/o"].is_not_null().all() and table["wKB/o"].is_not_null().all()
    for s in smoke.systems:
        mine = table.filter(pl.col("system") == s["label"])
        window = mine.filter(pl.col("steady"))
        # The marked intervals are the ones steady_rate averages: the second half of the run.
        assert window["interval"].to_list() == mine["interval"].to_list()[mine.height - mine.height // 2:]
        assert window["ops/s"].mean() == pytest.approx(sb.steady_rate(smoke, s["label"]))
    spec = over_time.chart(smoke, sb.OVER_TIME).to_dict()
    assert any("second half" in line for line in spec["title"]["subtitle"])
    assert charts.to_png(over_time.chart(smoke, sb.OVER_TIME))[:4] == b"\x89PNG"


def test_every_interval_is_also_kept_second_by_second(smoke):
    """The runner's ticks (one second each) add up to their interval's count exactly."""
    ticks = smoke.ticks.group_by("system", "phase", "interval").agg(pl.col("ops").sum().alias("ticked"),
                                                                  pl.col("seconds").sum())
    joined = smoke.intervals.join(ticks, on=["system", "phase", "interval"], how="left")
    assert joined.height == smoke.intervals.height and joined["ticked"].is_not_null().all()
    assert (joined["ticked"] == joined["ops"]).all(), joined.select("system", "phase", "interval", "ops", "ticked")
    assert ((joined["seconds_right"] - joined["seconds"]).abs() < 1e-6).all()
