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
