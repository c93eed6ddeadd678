"""The host speed probe recorded at both ends of every run (results/calibration.py)."""
from enginebench.results.calibration import calibrate, drift


def test_probe_reports_a_rate_and_its_spread():
    probe = calibrate()
    assert probe["docs_per_s"] >= probe["slowest_docs_per_s"] > 0
    assert probe["probe"]


def test_drift_is_end_over_start_and_absent_without_both():
    assert drift({"docs_per_s": 400_000}, {"docs_per_s": 300_000}) == 0.75
    assert drift({"docs_per_s": 400_000}, None) is None
    assert drift(None, {"docs_per_s": 1}) is None


def test_the_report_warns_on_top_when_the_host_changed_speed_during_the_run():
    from types import SimpleNamespace

    from enginebench.report.html import banner

    def page(start, end):
        manifest = {"run_id": "r", "experiment": "tokumx_concurrency", "scale": "default", "status": "complete",
                    "host": {"speed": {"start": {"docs_per_s": start, "probe": "p"},
                                       "end": {"docs_per_s": end, "probe": "p"}}}}
        return banner(SimpleNamespace(manifest=manifest, systems=[]))
    assert "speed changed during this run</b>: its probe read 0.61x" in page(438_550, 265_442)
    assert "speed changed" not in page(430_000, 400_000)
    assert "1.50x" in page(280_000, 420_000)
