"""Open loop: a LinkBench run at a rate above what the engine sustains (the intended-start
latency grows while the service time does not, and the findings say so), and the rate sweep's
latency-against-throughput curve."""
import yaml

from enginebench import driver
from enginebench.params import load_params, loader
from enginebench.report.rundata import load_run


def test_open_loop_above_capacity(tmp_path, monkeypatch, isolated_run):
    raw = yaml.safe_load((loader.params_path("linkbench_cached")).read_text())
    smoke = raw["scales"]["smoke"]["phases"]
    smoke["measure"].update(request_rate=200_000, duration_s=3 * smoke["measure"]["interval_s"])
    del smoke["rate_sweep"]
    raw["scales"]["smoke"]["systems"] = raw["scales"]["smoke"]["systems"][:1]
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "linkbench_cached.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.setattr(loader, "params_dir", lambda: tmp_path / "params")
    from enginebench.families.linkbench import report as lb
    from enginebench.families.linkbench.report import findings as linkbench_findings
    run = load_run(driver.run("linkbench_cached", "smoke"))
    latency = lb.response_times(run)
    assert (latency["intended_p99_ms"] > 10 * latency["p99_ms"]).all()
    finding = next(p for p in linkbench_findings(run, lb.claims_table(run)).split("\n\n") if "Open loop" in p)
    assert "could not keep up" in finding and "intended-start latency grew while the service time did not" in finding


def test_rate_sweep_gives_a_latency_throughput_curve(isolated_run):
    """The smoke scale of linkbench_cached sweeps 0.5x and 1.5x of its closed-loop throughput."""
    from enginebench.report.rate_sweep import curve_chart, curve_finding, curve_table
    params = load_params("linkbench_cached", "smoke")
    assert params["phases"]["rate_sweep"]["fractions"] == [0.5, 1.5]
    run = load_run(driver.run("linkbench_cached", "smoke", "embedded"))
    curve = curve_table(run)
    # Every system completes: the sweep continues the measured phase's request streams, so it
    # adds no node id twice (fresh requesters would, and fail on duplicate keys).
    assert {s["label"]: s["status"] for s in run.systems} == {s["label"]: "complete" for s in run.systems}
    # wt307.op1 only loads (the release claims compare loads): it has no phases to sweep.
    assert sorted(curve["system"].unique()) == sorted(s["label"] for s in run.systems if s["measure_requests"])
    for (label,), points in curve.group_by(["system"]):
        assert points["fraction"].sort().to_list() == [0.5, 1.5]
        closed = points["offered_per_s"] / points["fraction"]
        assert closed.max() - closed.min() < 1e-6 * closed.max()  # both scaled from the same closed-loop rate
        assert (points["achieved_per_s"] > 0).all()
        assert (points["intended_p99_ms"] >= points["service_p99_ms"] * 0.999).all()
    assert curve_chart(curve) is not None
    assert "Latency against throughput" in curve_finding(curve)
