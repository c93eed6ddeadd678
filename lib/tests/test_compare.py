"""make compare: differences sorted by size, the noise rule over repeats, figures corrected by the
host-speed probes, verdict differences and links to both runs' reports, on small run folders
written here (one system, one phase) whose figures are chosen to make each rule decide."""
import json
import math
import re
from pathlib import Path

import polars as pl
import pytest
from hdrh.histogram import HdrHistogram

from enginebench.report import compare, repeats
from enginebench.report.claims import FAILS, HOLDS, NOT_EVALUATED
from enginebench.report.differences import (NO_REPEATS, effect, headline_differences, noise_mark,
                                            provenance_differences, verdict_differences)
from enginebench.report.hostspeed import normalised, probe_ratio
from enginebench.report.rundata import load_run

SECONDS = 10.0


def _histogram(values_us: list[int]) -> str:
    hist = HdrHistogram(1, 60_000_000, 3)
    for value in values_us:
        hist.record_value(value)
    return hist.encode().decode()  # stored as text, as results/tables.py keeps the runner's


def make_run(base: Path, run_id: str, ops: float, reads: float, cpu_s: float, p99_us: int,
             probe: int | None = 100_000, group: str | None = None) -> Path:
    """A complete run folder of system `wt` with one load phase of SECONDS: `ops` operations,
    `reads` device reads, `cpu_s` server CPU seconds; its inserts take 100 us but 1% of them p99_us."""
    folder = base / "exp" / run_id
    folder.mkdir(parents=True)
    manifest = {"run_id": run_id, "experiment": "exp", "scale": "smoke", "status": "complete",
                "params": {"systems": [{"label": "wt", "role": "btree", "engine": "wiredtiger"}],
                           "workload": {"name": "iibench"}},
                "host": {"speed": {"start": {"docs_per_s": probe}, "end": {"docs_per_s": probe}} if probe else {}},
                "systems": {"wt": {"status": "complete", "version": "1"}}}
    if group:
        manifest["repeat"] = {"group": group, "index": 1, "of": 2}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    pl.DataFrame([{"system": "wt", "phase": "load", "interval": 0, "seconds": SECONDS, "ops": ops,
                   "requests": ops, "per_op_denominator": ops, "t_end": SECONDS, "cpu_user_s": cpu_s,
                   "cpu_sys_s": 0.0, "dev_reads": reads, "dev_read_bytes": reads * 4096, "dev_write_bytes": 0.0,
                   "client_cpu_s": 0.0, "size_du_bytes": 2**20}]).write_parquet(folder / "intervals.parquet")
    hist = _histogram([100] * 99 + [p99_us] * 2)
    pl.DataFrame([{"system": "wt", "phase": "load", "interval": 0, "op": "INSERT", "count": int(ops), "errors": 0,
                   "items": int(ops), "hist": hist}]).write_parquet(folder / "ops.parquet")
    return folder


def _row(table: pl.DataFrame, metric: str) -> dict:
    return table.filter(pl.col("metric") == metric).row(0, named=True)


def test_differences_are_sorted_by_the_size_of_the_effect(tmp_path):
    # ops/s doubles, r/o falls to a third, cpu/o halves, size stays: |ln 3| > |ln 2| = |ln 1/2| > 0
    a = load_run(make_run(tmp_path, "a", ops=1000, reads=3000, cpu_s=2.0, p99_us=1000))
    b = load_run(make_run(tmp_path, "b", ops=2000, reads=2000, cpu_s=2.0, p99_us=1000))
    table = headline_differences(a, b, ({}, {}), None)
    assert table["metric"][0] == "r/o" and _row(table, "r/o")["B / A"] == pytest.approx(1 / 3)
    assert _row(table, "ops/s")["B / A"] == pytest.approx(2.0) and _row(table, "cpu/o")["B / A"] == pytest.approx(0.5)
    effects = [effect(r) for r in table["B / A"]]
    assert effects == sorted(effects, reverse=True)
    assert table["metric"][-1] in ("size (du)", "p99") and _row(table, "size (du)")["B / A"] == 1.0
    assert "client cpu/o" not in table["metric"]  # 0 in both runs: nothing to compare
    assert dict(zip(table["metric"], table["unit"]))["size (du)"] == "MiB"


def test_the_noise_rule_uses_twice_the_larger_cv_of_the_repeats():
    assert noise_mark(1.5, []) == NO_REPEATS
    assert noise_mark(1.09, [5.0]).startswith("within")          # ln 1.09 = 0.086 <= 0.10
    assert noise_mark(1.12, [5.0]).startswith("beyond")          # ln 1.12 = 0.113 > 0.10
    assert noise_mark(1 / 1.12, [2.0, 6.0]).startswith("within")  # the larger CV: 0.113 <= 0.12


def test_repeats_of_a_run_give_its_noise(tmp_path):
    # A's group: 1000 and 1100 ops -> CV of ops/s 6.7%, so 2 CV = 13.4%
    a = load_run(make_run(tmp_path, "a1", ops=1000, reads=1000, cpu_s=1.0, p99_us=1000, group="g"))
    make_run(tmp_path, "a2", ops=1100, reads=1000, cpu_s=1.0, p99_us=1000, group="g")
    noise = repeats.noise_cv(a)
    cv = noise[("wt", "load", "ops/s")]
    assert cv == pytest.approx(100 * (100 / math.sqrt(2)) / 1050)
    near = load_run(make_run(tmp_path, "b1", ops=1100, reads=1000, cpu_s=1.0, p99_us=1000))
    far = load_run(make_run(tmp_path, "b2", ops=1500, reads=1000, cpu_s=1.0, p99_us=1000))
    assert _row(headline_differences(a, near, (noise, {}), None), "ops/s")["noise"].startswith("within")
    assert _row(headline_differences(a, far, (noise, {}), None), "ops/s")["noise"].startswith("beyond")
    assert _row(headline_differences(far, near, ({}, {}), None), "ops/s")["noise"] == NO_REPEATS


def test_ratios_are_corrected_by_the_host_probes(tmp_path):
    # B's host runs the probe twice as fast; B's ops/s double and cpu/o halve: the host, not the engine.
    a = load_run(make_run(tmp_path, "a", ops=1000, reads=1000, cpu_s=2.0, p99_us=4000, probe=100_000))
    b = load_run(make_run(tmp_path, "b", ops=2000, reads=2000, cpu_s=2.0, p99_us=2000, probe=200_000))
    probes = probe_ratio(a, b)
    assert probes == pytest.approx(2.0)
    table = headline_differences(a, b, ({}, {}), probes)
    assert _row(table, "ops/s")["B / A at A's host speed"] == pytest.approx(1.0)
    assert _row(table, "cpu/o")["B / A at A's host speed"] == pytest.approx(1.0)
    assert _row(table, "p99")["B / A at A's host speed"] == pytest.approx(1.0, rel=0.01)
    assert _row(table, "r/o")["B / A at A's host speed"] is None  # reads do not move with the CPU
    no_probe = load_run(make_run(tmp_path, "c", ops=2000, reads=2000, cpu_s=2.0, p99_us=2000, probe=None))
    assert probe_ratio(a, no_probe) is None and normalised(2.0, +1, None) is None


def _claims(rows):
    base = {"claim": "c", "metric": "m", "published_ratio": 1.5, "expect": "greater than 1", "from": "", "reason": ""}
    return pl.DataFrame([{**base, **row} for row in rows])


def test_verdict_differences_put_changed_claims_first():
    a = _claims([{"id": "same", "measured_ratio": 1.2, "verdict": HOLDS},
                 {"id": "flip", "measured_ratio": 1.1, "verdict": HOLDS},
                 {"id": "gone", "measured_ratio": None, "verdict": NOT_EVALUATED}])
    b = _claims([{"id": "same", "measured_ratio": 1.3, "verdict": HOLDS},
                 {"id": "flip", "measured_ratio": 0.9, "verdict": FAILS}])
    table = verdict_differences(a, b)
    assert table["id"].to_list()[:2] == ["flip", "gone"]
    flip = table.row(0, named=True)
    assert (flip["verdict A"], flip["verdict B"], flip["changed"]) == (HOLDS, FAILS, "changed")
    assert table.filter(pl.col("id") == "gone")["verdict B"][0] == "not in B"
    assert table.filter(pl.col("id") == "same")["changed"][0] == "same"


def test_provenance_names_each_engine_setting_and_build_that_differs(tmp_path):
    runs = []
    for run_id, build in (("a", None), ("b", "release build (-O2 -DNDEBUG)")):
        folder = make_run(tmp_path, run_id, ops=1000, reads=1000, cpu_s=2.0, p99_us=4000)
        manifest = json.loads((folder / "manifest.json").read_text())
        config = {"cache_size_mb": 640, "block_size_kb": 16} | ({"build": build} if build else {})
        manifest["systems"]["wt"]["engine_config"] = config
        (folder / "manifest.json").write_text(json.dumps(manifest))
        runs.append(load_run(folder))
    rows = {row["what"]: (row["A"], row["B"]) for row in provenance_differences(*runs).iter_rows(named=True)}
    assert rows["wt engine_config.build"] == ("None", "release build (-O2 -DNDEBUG)")
    assert not any("cache_size_mb" in what or "block_size_kb" in what for what in rows)


def test_the_page_links_both_reports_and_shows_every_section(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(tmp_path / "reports"))
    path_a = make_run(tmp_path, "a", ops=1000, reads=1000, cpu_s=2.0, p99_us=4000)
    path_b = make_run(tmp_path, "b", ops=2000, reads=1000, cpu_s=2.0, p99_us=2000, probe=200_000)
    (path_a / "report.html").write_text("<p>A's report</p>")
    verdicts = {"a": [{"id": "x", "measured_ratio": 1.1, "verdict": HOLDS}],
                "b": [{"id": "x", "measured_ratio": 0.9, "verdict": FAILS}]}
    out = compare.write_comparison(path_a, path_b, claims_of=lambda run: _claims(verdicts[run.manifest["run_id"]]))
    page = out.read_text()
    (href,) = [h for h in re.findall(r"href='([^']+)'", page) if not h.startswith("data:")]  # tables' CSV links aside
    assert (out.parent / href).resolve() == (path_a / "report.html").resolve()
    assert f"no report yet (make experiment EXP=exp RUN={path_b} renders one)" in page
    assert "Verdicts changed: x." in page and "wt load ops/s x2 (no repeats: noise unknown)" in page
    for heading in ("Headline numbers", "Host speed", "Latency per op type", "Claim verdicts", "Provenance"):
        assert f">{heading}</h2>" in page
    assert page.count(NO_REPEATS) >= 5 and "docs/s" in page and "us/op" in page and "(ms)" in page
