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


def test_an_end_probe_outside_the_steady_band_is_taken_again_and_every_reading_kept(monkeypatch):
    from enginebench.results import calibration
    readings = iter([231_567, 389_903, 999_999])  # a teardown holding a core, then the host as it was
    monkeypatch.setattr(calibration, "calibrate", lambda rounds=5: {"probe": "p", "docs_per_s": next(readings)})
    end = calibration.calibrate_end({"docs_per_s": 398_973}, pause_s=0)
    assert end["docs_per_s"] == 389_903 and end["readings"] == [231_567, 389_903]


def test_an_end_probe_that_stays_slow_is_recorded_as_slow(monkeypatch):
    from enginebench.results import calibration
    monkeypatch.setattr(calibration, "calibrate", lambda rounds=5: {"probe": "p", "docs_per_s": 230_000})
    end = calibration.calibrate_end({"docs_per_s": 400_000}, pause_s=0)
    assert end["readings"] == [230_000] * (1 + calibration.END_RETRIES)
    assert not calibration.steady(calibration.drift({"docs_per_s": 400_000}, end))


def test_a_smoke_runs_probes_take_one_round_and_its_end_is_read_once(monkeypatch):
    """A smoke run carries no verdict: its probes run and are recorded, one round each, and a
    drifted end is not read again after pauses; every other scale keeps the full probe."""
    from enginebench.results import calibration
    asked = []
    monkeypatch.setattr(calibration, "_round", lambda: asked.append(1) or 0.1)
    quick = calibration.probe_settings("smoke")
    assert calibration.calibrate(quick["rounds"])["rounds"] == 1 and len(asked) == 1
    slow = iter([200_000, 400_000])
    monkeypatch.setattr(calibration, "calibrate", lambda rounds=5: {"probe": "p", "docs_per_s": next(slow)})
    end = calibration.calibrate_end({"docs_per_s": 400_000}, pause_s=0, rounds=quick["rounds"],
                                    retries=quick["end_retries"])
    assert end["readings"] == [200_000]
    for scale in ("default", "paper"):
        assert calibration.probe_settings(scale) == {"rounds": calibration.ROUNDS,
                                                     "end_retries": calibration.END_RETRIES}


def test_the_provenance_names_every_end_reading_when_there_were_several():
    from enginebench.report.html import speed_line
    start, end = {"docs_per_s": 398_973, "probe": "p"}, {"docs_per_s": 389_903, "readings": [231_567, 389_903]}
    assert "best of 2 end probes 5 s apart" in speed_line({"start": start, "end": end})
    assert "231,567, 389,903" in speed_line({"start": start, "end": end})
