"""The TokuMX experiments' (seed 004) report and params: dips, the stale-secondary claim, the
params' errors and files, and the post's settings. The workload itself (document shape, one
document per insert call, the client sweep's phases, the stop on a stale secondary) is checked on
the runner's (lib/native/tests/tokumx_generator.rs); test_tokumx_smoke.py runs every experiment."""
import json
from pathlib import Path

import pytest

from enginebench.families.tokumx.params import Params
from enginebench.params import ParamsError, load_params
from enginebench.params.phases import Phases
from enginebench.families.tokumx import report as tk
from enginebench.report.claims import FAILS, HOLDS, NOT_EVALUATED
from enginebench.report.rundata import RunData

import polars as pl


def test_dips_leave_out_a_short_last_interval():
    found = tk.dips([100, 100, 20, 100, 5], [10, 10, 10, 10, 1], 10)
    assert found["mean_rate"] == pytest.approx(3205 / 41)
    assert found["min_rate"] == 20 and found["min_interval"] == 2 and found["min_window_rate"] == 20
    assert found["below_half"] == [2] and found["intervals"] == 4
    assert tk.dips([50, 50], [10, 10], 10)["below_half"] == []
    assert tk.dips([], [], 10)["min_rate"] is None


def test_the_10s_rate_spans_consecutive_5s_intervals():
    found = tk.dips([100, 10, 90, 100, 100], [5, 5, 5, 5, 5], 5)
    assert found["min_rate"] == 10 and found["below_half"] == [1]
    assert found["min_window_rate"] == pytest.approx(50)  # (10 + 90) / 2, the worst 10 s
    assert tk.dips([100, 10], [5, 5], 5, window_s=30)["min_window_rate"] is None, "shorter than one window"


def fake_run(tmp_path: Path, target: str, status: str, events: list[dict]) -> RunData:
    """A run folder as the driver leaves it, for the claim logic (no measured numbers in it)."""
    (tmp_path / "mm").mkdir()
    (tmp_path / "mm" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    system = {"label": "mm", "role": "mmap", "engine": "lmdb", "options": {},
              "mongod": {"topology": "replset", "members": 3}}
    manifest = {"experiment": "tokumx_insert_20m", "target": {"kind": target},
                "params": {"systems": [system], "workload": {"experiment": "insert"},
                           "phases": {"load": {"threads": 1, "interval_s": 10}}},
                "systems": {"mm": {"status": status}}}
    return RunData(tmp_path, manifest, pl.DataFrame(), pl.DataFrame(), pl.DataFrame())


@pytest.mark.parametrize("target, events, verdict, words", [
    ("mongod", [{"event": "stale_secondary", "members": [{"member": "127.0.0.1:1"}]}], HOLDS, "stale_secondary"),
    ("mongod", [], FAILS, "no stale secondary"),
    ("embedded", [], NOT_EVALUATED, "no replica set"),
])
def test_stale_claim_comes_from_the_events(tmp_path, target, events, verdict, words):
    run = fake_run(tmp_path, target, "complete", events)
    row = tk.claims_table(run).filter(pl.col("id") == tk.STALE_CLAIM).row(0, named=True)
    assert row["verdict"] == verdict and words in (row["from"] + row["reason"])
    note = tk.replication_note(run)
    assert ("stale secondary" in note) == (verdict == HOLDS)
    if target == "embedded":
        assert "did not run" in note and "embedded" in note


def test_params_errors_name_the_key(tmp_path):
    with pytest.raises(ValueError, match="load_batch: only for experiment read_update or read"):
        Params(experiment="insert", documents=10, load_batch=5)
    with pytest.raises(ValueError, match="increasing list"):
        Phases(measure={"threads": [2, 1], "duration_s": 60})


def test_params_files_resolve_at_every_scale():
    for exp in ("tokumx_insert_10m", "tokumx_insert_20m", "tokumx_concurrency", "tokumx_read"):
        smoke, default, paper = (load_params(exp, s) for s in ("smoke", "default", "paper"))
        assert {s["engine"] for s in smoke["systems"]} == {"wiredtiger", "rocksdb", "lmdb", "fractal"} and len(smoke["systems"]) == 4
        if paper["workload"]["experiment"] != "insert":
            assert paper["phases"]["measure"]["threads"] == [1, 2, 3, 4, 5, 6]
            assert paper["workload"]["documents"] == 1_000_000
    assert load_params("tokumx_insert_20m", "paper")["workload"]["documents"] == 2 * load_params(
        "tokumx_insert_10m", "paper")["workload"]["documents"]


def test_bad_experiment_literal_lists_the_allowed_values(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "params").mkdir(parents=True)
    (root / ".enginebench-root").touch()
    params = Path(__file__).resolve().parents[2] / "params"
    # tokumx_read extends tokumx_concurrency: the base comes along, the misspelling is tokumx_read's own.
    (root / "params" / "tokumx_concurrency.yaml").write_text((params / "tokumx_concurrency.yaml").read_text())
    text = (params / "tokumx_read.yaml").read_text()
    assert "{experiment: read}" in text
    (root / "params" / "tokumx_read.yaml").write_text(text.replace("{experiment: read}", "{experiment: reads}"))
    monkeypatch.setenv("ENGINEBENCH_ROOT", str(root))
    with pytest.raises(ParamsError, match=r"tokumx_read.yaml \[scale smoke\]: line \d+: workload.experiment: 'reads' is not "
                                          r"allowed; did you mean 'read'\? allowed values: 'insert', 'read_update' or 'read'"):
        load_params("tokumx_read", "smoke")


@pytest.mark.parametrize("exp", ["tokumx_insert_10m", "tokumx_insert_20m", "tokumx_concurrency", "tokumx_read"])
def test_the_posts_settings_are_the_defaults(exp):
    """Seed 004: TokuMX 1.0.4 with the appendix's configuration (cacheSize 1 GB, logFlushPeriod 100,
    cleaner 2 s x 5, fsRedzone 5, lockTimeout 4000, directio off) and zlib for all the tests,
    unacknowledged shell-loop writes, a slow VM disk under the insert tests."""
    p = load_params(exp, "paper")
    tokumx = next(s["options"] for s in p["systems"] if s["role"] == "fractal")
    assert {k: tokumx[k] for k in ("version", "cache_size_mb", "compression", "log_flush_ms", "cleaner_period_s",
                                    "cleaner_iterations", "fs_redzone_percent", "lock_timeout_ms", "direct_io")} == {
        "version": "tokumx-1.0.4", "cache_size_mb": 1024, "compression": "zlib", "log_flush_ms": 100,
        "cleaner_period_s": 2, "cleaner_iterations": 5, "fs_redzone_percent": 5, "lock_timeout_ms": 4000,
        "direct_io": False}
    assert {s["mongod"]["write_concern"] for s in p["systems"]} == {0}
    if p["workload"]["experiment"] == "insert":
        assert p["resources"]["storage"]["profile"] == "disk"


def test_the_banner_names_each_departure_from_the_post():
    from enginebench.fidelity import departures
    p = load_params("tokumx_insert_10m", "paper")
    assert departures(p, "mongod") == []  # the post's settings: nothing departs
    p["resources"]["storage"]["profile"] = "none"
    p["systems"][3]["options"]["compression"] = "quicklz"
    p["systems"][1]["mongod"]["write_concern"] = 1
    lines = departures(p, "uri")
    assert "tokumx compresses with quicklz, not the zlib TokuMX ran for the post's tests." in lines
    assert any(line.startswith("wt: acknowledged writes (w:1)") for line in lines)
    assert any(line.startswith("No storage profile") for line in lines)
    assert not any("acknowledged" in line for line in departures(p, "embedded"))  # no client write concern
