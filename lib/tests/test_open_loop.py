"""An open-loop LinkBench run at a rate above what the engine sustains: the intended-start
latency grows while the service time does not, and the findings say so."""
import yaml

from enginebench.params import loader


def test_open_loop_above_capacity(tmp_path, monkeypatch, isolated_run):
    raw = yaml.safe_load((loader.params_path("linkbench_cached")).read_text())
    raw["scales"]["smoke"]["phases"].update(request_rate=200_000, intervals=3)
    raw["scales"]["smoke"]["systems"] = raw["scales"]["smoke"]["systems"][:1]
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "linkbench_cached.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.setattr(loader, "params_dir", lambda: tmp_path / "params")
    from enginebench import driver
    from enginebench.report import linkbench as lb
    from enginebench.report.prose import linkbench_findings
    from enginebench.report.rundata import load_run
    run = load_run(driver.run("linkbench_cached", "smoke"))
    latency = lb.response_times(run)
    assert (latency["intended_p99_ms"] > 10 * latency["p99_ms"]).all()
    finding = next(p for p in linkbench_findings(run, lb.claims_table(run)).split("\n\n") if "Open loop" in p)
    assert "could not keep up" in finding and "intended-start latency grew while the service time did not" in finding
