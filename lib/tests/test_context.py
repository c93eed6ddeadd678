"""The context tables (report/context.py) on a synthetic run folder, whose figures are chosen so
every ratio is known, and setups.csv's own rules. The same functions on real smoke runs are
tested beside those runs' fixtures (test_smoke_run.py, test_run_reports.py)."""
import json

import polars as pl
import pytest
import yaml

from enginebench.paths import params_dir, reference_dir
from enginebench.report import context, html
from enginebench.report.rundata import load_run
from enginebench.report.scale import FACTS, NOT_STATED

MB = 1 << 20


def _system(label, role, engine, options, recorded=None, status="complete", seconds=10.0):
    params = {"label": label, "role": role, "engine": engine, "options": options, "memory_limit_mb": None}
    run = {"status": status, "version": "1.0", "device": "vdx", "engine_config": recorded,
           "resources": {"memory_limit_mb": 256}, "phases": [{"phase": "load", "seconds": seconds}]}
    return params, run


@pytest.fixture
def synthetic_run(tmp_path):
    """An iibench run of two intervals: wt inserts 2x and queries 0.5x rx's, and ends 3x its size;
    a third system never ran."""
    systems = [_system("wt", "btree", "wiredtiger", {"cache_size_mb": 64},
                       {"release": "1.0", "cache_size_mb": 64, "block_compressor": "snappy",
                        "connection_config": "create,cache_size=64M"}),
               _system("rx", "lsm", "rocksdb", {"cache_size_mb": 32},
                       {"cache_size_mb": 32, "compression": "snappy", "bloom_bits_per_key": 10}, seconds=12.0),
               _system("mongo", "btree", "mongod", {"oplog": True}, status="not run")]
    systems[1][1]["engine_config"]["storage"] = {"wiredTiger": {"cacheSizeGB": 0.03}}  # a mongod's nested YAML
    manifest = {"run_id": "synthetic", "experiment": "iibench_500m", "scale": "smoke", "status": "complete",
                "host": {"memory_bytes": 4 << 30}, "resources": {"storage_profile": "none"},
                "params": {"notebook": "iibench", "workload": {"name": "iibench"}, "systems": [p for p, _ in systems],
                           "phases": {"load": {"threads": 2, "interval_s": 5.0}, "measure": None}},
                "systems": {p["label"]: r for p, r in systems if r["status"] != "not run"}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    intervals, ops = [], []
    for label, inserts, queries, size in (("wt", 20_000, 250, 300 * MB), ("rx", 10_000, 500, 100 * MB)):
        for k in range(2):
            intervals.append({"system": label, "phase": "load", "interval": k, "seconds": 5.0, "t_end": float(k + 1),
                              "size_du_bytes": size // (2 - k)})
            ops.append({"system": label, "phase": "load", "interval": k, "op": "INSERT", "count": inserts // 10,
                        "items": inserts // 2, "slow": 0})
            ops.append({"system": label, "phase": "load", "interval": k, "op": "QUERY_PDC", "count": queries,
                        "items": queries, "slow": 0})
    pl.DataFrame(intervals).write_parquet(tmp_path / "intervals.parquet")
    pl.DataFrame(ops).write_parquet(tmp_path / "ops.parquet")
    return load_run(tmp_path)


def test_scale_mapping_on_a_synthetic_run(synthetic_run):
    table = context.scale_mapping(synthetic_run)
    by = {(r["setting"], r["systems"]): r for r in table.iter_rows(named=True)}
    memory = by[("memory for the server", "all")]
    assert memory["the post"] == "144 GB" and memory["this run"] == "256 MB"
    assert memory["this run / the post"] == pytest.approx(256 / (144 * 1024))
    assert memory["source"] == "001_722dff21ca67c6a7.txt" and "144G of RAM" in memory["the post's words"]
    assert by[("engine cache", "wt")]["the post"] == NOT_STATED and by[("engine cache", "wt")]["this run / the post"] is None
    size = by[("database size at the end", "wt")]
    assert size["this run"] == "300 MB" and size["this run / the post"] == pytest.approx(300 / (442 * 1024))
    assert by[("measured part", "rx")]["this run"] == "12 s"  # no planned duration: as long as the load took
    assert by[("client threads", "all")]["this run / the post"] == pytest.approx(0.2)
    assert "mongo" not in " ".join(table["systems"])  # it never ran: nothing of it was measured
    assert "<table" in html.table(table, "The post's scale and ours")


def test_scale_mapping_of_a_client_sweep(synthetic_run):
    synthetic_run.manifest["params"]["phases"]["measure"] = {"threads": [1, 2, 4], "duration_s": 30}
    table = context.scale_mapping(synthetic_run)
    threads = table.filter(pl.col("setting") == "client threads").row(0, named=True)
    assert threads["this run"] == "1 to 4 (a sweep)" and threads["this run / the post"] == pytest.approx(0.4)
    measured = table.filter(pl.col("setting") == "measured part").row(0, named=True)
    assert measured["this run"] == "30 s per client count" and measured["systems"] == "all"


def test_normalised_view_on_a_synthetic_run(synthetic_run):
    table = context.normalised_view(synthetic_run)
    rows = {r["metric"]: r for r in table.iter_rows(named=True)}
    assert set(rows) == {"insert rate", "query rate", "size at the end, GB"}
    assert rows["insert rate"]["the post's ratio"] == pytest.approx(20273 / 24187)
    assert rows["insert rate"]["our ratio"] == pytest.approx(2.0) and rows["insert rate"]["same side of 1"] == "no"
    assert rows["query rate"]["our ratio"] == pytest.approx(0.5) and rows["query rate"]["same side of 1"] == "no"
    assert rows["size at the end, GB"]["our ratio"] == pytest.approx(3.0)
    assert rows["size at the end, GB"]["same side of 1"] == "yes"
    assert set(table["direction"]) == {"b-tree / LSM"}
    assert rows["query rate"]["the post's rows"] == "WiredTiger 3.1.5 624 / RocksDB 3.0.x 136"


def test_engine_configuration_on_a_synthetic_run(synthetic_run):
    table = context.engine_configuration(synthetic_run)
    assert table["system"].to_list() == ["wt", "rx", "mongo"]  # one row per system, params order
    rows = {r["system"]: r for r in table.iter_rows(named=True)}
    assert rows["wt"]["cache_size_mb"] == "64" and rows["wt"]["block_compressor"] == "snappy"
    assert rows["rx"]["bloom_bits_per_key"] == "10" and rows["wt"]["bloom_bits_per_key"] is None
    assert rows["rx"]["storage.wiredTiger.cacheSizeGB"] == "0.03"
    assert rows["mongo"]["settings from"] == "the params (not run)" and rows["mongo"]["oplog"] == "yes"
    assert "connection_config" not in table.columns and "release" not in table.columns
    assert table.columns[:6] == ["system", "engine", "version", "settings", "settings from", "cache_size_mb"]


def test_an_experiment_without_setup_rows_is_named():
    from enginebench.report.scale import post_setup
    with pytest.raises(ValueError, match=r"setups.csv: no rows for experiment 'nope'.*known: flashback_replay"):
        post_setup("nope")


def test_every_setup_row_has_its_source_and_every_experiment_its_facts():
    setups = pl.read_csv(reference_dir() / "setups.csv", infer_schema_length=0).fill_null("")
    seeds = set(pl.read_csv(reference_dir() / "claims.csv")["seed"])
    assert setups["source"].is_in(list(seeds)).all(), "each row names one of the posts' seed files"
    assert (setups["quote"] != "").all(), "each row quotes its words, or says it is not stated"
    unstated = setups.filter(pl.col("value") == "")
    assert unstated["quote"].str.starts_with(NOT_STATED).all()
    for path in sorted(params_dir().glob("*.yaml")):
        params = yaml.safe_load(path.read_text())
        mine = setups.filter(pl.col("experiment") == params["experiment"])
        assert sorted(mine["fact"]) == sorted(FACTS), path.name
        if params.get("seed"):
            assert set(mine["source"]) == {params["seed"]}, path.name


def test_a_memory_matrix_with_each_engines_own_memory_is_matched_tier_by_tier():
    # sysbench's default: limits are 32/64/96 MB plus each engine's own memory (150 or 50 MB).
    # The scale table compares the 32/64/96 MB with the post's sizes, names the limit beside
    # them, and ranks each engine's tiers among its own.
    from types import SimpleNamespace
    from enginebench.report.scale import _grouped, _peers, _ratio, show
    run = SimpleNamespace(manifest={"resources": {}}, systems=[
        {"label": f"{e}.{tier}", "engine": engine, "memory_limit_mb": mb, "memory_own_mb": own,
         "resources": {"memory_limit_mb": mb + own}}
        for e, engine, own in (("wt", "wiredtiger", 150), ("rx", "rocksdb", 50))
        for tier, mb in ((1, 32), (2, 64), (3, 96))])
    groups = _grouped(run, "memory")
    shown = {labels[0]: show("memory", ours) for ours, labels in groups}
    assert shown["wt.1"] == "32 MB (a 182 MB limit less 150 MB of the process's own memory)"
    assert shown["rx.3"] == "96 MB (a 146 MB limit less 50 MB of the process's own memory)"
    post = [16 << 30, 32 << 30, 48 << 30]
    ratios = {label: _ratio(ours, post, _peers(run, groups, labels)) for ours, labels in groups for label in labels}
    assert ratios["wt.1"] == pytest.approx(32 * MB / (16 << 30)) == ratios["rx.1"]
    assert ratios["wt.3"] == pytest.approx(96 * MB / (48 << 30)) == ratios["rx.3"]

def test_the_engine_table_shows_what_differs_and_lists_what_is_shared(synthetic_run):
    from enginebench.report.engine_table import split_settings
    full = context.engine_configuration(synthetic_run)
    differing, shared = split_settings(full)
    assert differing.columns[:5] == ["system", "engine", "version", "settings", "settings from"]
    for column in differing.columns[5:]:  # every column left has two values among the systems having it
        assert full[column].drop_nulls().n_unique() > 1, column
    shown = {c for c in full.columns[5:] if c not in differing.columns}
    listed = " ".join(shared)
    assert all(f"{c} " in listed for c in shown if full[c].drop_nulls().len()), (shown, shared)
    assert any(line.startswith("rocksdb only: ") and "bloom_bits_per_key 10" in line for line in shared), shared


def test_the_scale_line_says_how_long_a_phase_measured_until_steady_ran(synthetic_run):
    from enginebench.report.page import scale_line
    synthetic_run.manifest["params"]["phases"]["measure"] = {"threads": 4, "until_steady": True, "min_duration_s": 60,
                                                             "duration_s": 300, "interval_s": 20}
    synthetic_run.manifest["systems"]["wt"]["phases"] = [{"phase": "load", "seconds": 80}, {"phase": "run", "seconds": 80.0}]
    line = scale_line(synthetic_run)
    assert "measured until steady (60-300 s in 20-s intervals)" in line and "wt 80 s" in line


def test_a_headline_sentence_says_when_a_claim_holds_in_direction_only():
    from enginebench.report.page import claim_sentences
    claims = pl.DataFrame([
        {"claim": "Load rate for WiredTiger is more than 2X better than RocksDB", "published_ratio": 2.43,
         "measured_ratio": 6.53, "expect": "greater than 1", "verdict": "holds", "size": "direction only", "reason": ""},
        {"claim": "Query rate for WiredTiger is about 1.3X better", "published_ratio": 1.34, "measured_ratio": 1.30,
         "expect": "greater than 1", "verdict": "holds", "size": "holds", "reason": ""},
        # A bound in milliseconds and a fitted slope are not ratios (claims.csv fb.writes_fast, fb.scan_linear).
        {"claim": "On RocksDB all replayed write operations finish in under 10ms", "published_ratio": 10.0,
         "measured_ratio": 24.463, "expect": "less than (ms)", "verdict": "does not hold", "size": None, "reason": ""},
        {"claim": "On RocksDB query latency grows linearly", "published_ratio": None, "measured_ratio": 3.594,
         "expect": "positive linear fit", "verdict": "holds", "size": None, "reason": ""}])
    first, second, bound, slope = claim_sentences(claims)
    assert first == ("Load rate for WiredTiger is more than 2X better than RocksDB: the post 2.43x, this run 6.53x; "
                     "holds in direction only: outside 1.5x of the post's size.")
    assert second.endswith("the post 1.34x, this run 1.30x; holds.")
    assert bound.endswith("the post 10.00 ms, this run 24.46 ms; does not hold.")
    assert slope.endswith("the post no figure, this run 3.59; holds.")


def test_a_phase_measured_until_steady_shows_how_long_it_ran_beside_the_post(synthetic_run):
    synthetic_run.manifest["params"]["phases"]["measure"] = {"threads": 4, "until_steady": True, "min_duration_s": 60,
                                                             "duration_s": 300, "interval_s": 20}
    synthetic_run.manifest["systems"]["wt"]["phases"] = [{"phase": "run", "seconds": 80.0}]
    table = context.scale_mapping(synthetic_run)
    row = table.filter((pl.col("setting") == "measured part") & (pl.col("systems").str.contains("wt"))).row(0, named=True)
    assert row["this run"] == "1.33 min (until steady; at most 5 min)", row


def test_on_a_uri_target_the_engine_is_the_server_as_it_named_itself(synthetic_run):
    """TARGET=uri: every system is the one server; the engine column names it and its storage
    engine as serverStatus said (or that it said none), never the params' engine."""
    from enginebench.report.engine_table import engine_name
    synthetic_run.manifest["target"] = {"kind": "uri"}
    system = {"label": "wt", "engine": "wiredtiger", "engine_reported": "unknown",
              "engine_config": {"server_process": "mongo-java-server"}}
    assert engine_name(synthetic_run, system) == "mongo-java-server (storage engine: not reported)"
    system = {**system, "engine_reported": "wiredTiger", "engine_config": {"server_process": "mongod"}}
    assert engine_name(synthetic_run, system) == "mongod (storage engine: wiredTiger)"
    synthetic_run.manifest["target"] = {"kind": "embedded"}
    assert engine_name(synthetic_run, {**system, "engine_reported": None}) == "wiredtiger"
