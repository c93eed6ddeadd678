"""flashback_replay at smoke scale on the four embedded engines: the first records, the others
replay its capture in real style, and the report pieces come out of what really ran."""
import polars as pl

from conftest import smoke_run_fixture

from enginebench.flashback import format as F
from enginebench.report import charts
from enginebench.families.flashback import report as fb
from enginebench.report.claims import NOT_EVALUATED


run = smoke_run_fixture("flashback_replay", "embedded")


def test_first_system_records_and_the_others_replay_every_op(run):
    assert run.manifest["status"] == "complete"
    roles = {s["label"]: fb.role_of(run, s["label"]) for s in run.systems}
    assert roles == {"wt": "recorder", "rx": "replayer", "lmdb": "replayer", "wtlsm": "replayer"}
    capture = F.read_capture(run.path / "wt" / "capture.ops.jsonl")
    assert capture.header["dataset"]["generator"] == "appmix"
    recorded = fb.summary(run, "wt")
    assert recorded["captured_ops"] == sum(recorded["ops_run"].values()) > 100
    for label in ("rx", "lmdb", "wtlsm"):
        info = fb.summary(run, label)
        assert info["ops_run"] == info["capture_ops_per_type"] == recorded["ops_run"]
        assert info["skipped"] == {} and info["lag_ms"]["ops"] == recorded["captured_ops"]
    assert all(line.endswith("all replayed") for line in fb.check_lines(run)[1:])
    for s in run.systems:
        assert s["load_verified"]["ok"], s["load_verified"]


def test_report_pieces(run):
    latency = fb.latency_table(run)
    assert {"count", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms", "intended_p99_ms", "set by emulation"} <= set(latency.columns)
    assert set(latency["op"]) >= {"query", "count", "insert", "insert.capped", "update", "findandmodify", "remove"}
    assert (latency["errors"] == 0).all()
    replayed = latency.filter(pl.col("setup") != "wt")
    assert (replayed["intended_p99_ms"] >= replayed["p50_ms"]).all()
    points = fb.scans(run)
    assert set(points["system"]) == {"wt", "rx", "lmdb", "wtlsm"} and points["docs_scanned"].max() > 50
    fitted = fb.fits(points)
    assert fitted.height == 4 and (fitted["n"] > 10).all()
    assert charts.to_png(fb.scan_chart(points, fitted))[:4] == b"\x89PNG"
    assert fb.capped_table(run).height == 4
    claims = fb.claims_table(run)
    assert claims["id"].to_list() == ["fb.writes_fast", "fb.query_avg", "fb.capped", "fb.scan_linear", "fb.nearsphere"]
    judged = claims.filter(pl.col("id") != "fb.nearsphere")
    assert (judged["verdict"] != NOT_EVALUATED).all() and judged["measured_ratio"].is_not_null().all()
    # RocksDB replays (wt records): the claims name the systems they read, for the host's drift.
    assert judged["systems"].to_list() == ["rx", "rx,lmdb", "rx,lmdb", "rx"]
    # A regression between two server releases: no engine run here can judge it, and it says why.
    nearsphere = claims.filter(pl.col("id") == "fb.nearsphere").row(0, named=True)
    assert nearsphere["verdict"] == NOT_EVALUATED and "3.0" in nearsphere["reason"]
    text = fb.findings(run, claims)
    assert "**Capture.**" in text and "**Claims.**" in text and "rx (lsm) against lmdb (mmap)" in text
