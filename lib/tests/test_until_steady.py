"""Measure until steady: the driver applies the steady-state rule interval by interval and ends
the phase on the runner's control channel once it holds; the phase ends with the interval it
judged, and the report says when each system got there."""
import pytest

from enginebench.params.phases import MeasurePhase
from enginebench.report.rundata import system_events
from enginebench.report.steady import steadiness
from enginebench.until_steady import SteadyWatch

PLAN = [{"step": "measure", "name": "warmup", "threads": 2, "interval_s": 5, "duration_s": 5},
        {"step": "measure", "name": "run", "threads": 2, "interval_s": 10, "duration_s": 100,
         "until_steady": {"min_s": 40}}]


def interval(k: int, ops: int, phase: str = "run") -> dict:
    return {"event": "interval", "phase": phase, "interval": k, "t_start": 10.0 * k, "t_end": 10.0 * (k + 1),
            "ops": {"GET_NODE": {"count": ops, "items": ops}}}


def test_the_watch_ends_a_phase_once_the_rule_holds_and_its_least_time_passed():
    watch = SteadyWatch(PLAN)
    assert watch.on_event({"event": "phase_start", "phase": "run", "t": 0.0}) is None
    # 3 intervals within +-10% after 30 s: steady, but min_s is 40.
    answers = [watch.on_event(interval(k, ops)) for k, ops in enumerate([500, 1000, 1020, 990])]
    assert answers == [None, None, None, "run"]
    # Asked once: later intervals (the runner's last before it acts) ask nothing more.
    assert watch.on_event(interval(4, 1000)) is None


def test_the_watch_leaves_other_phases_and_unsettled_rates_alone():
    watch = SteadyWatch(PLAN)
    watch.on_event({"event": "phase_start", "phase": "warmup", "t": 0.0})
    assert [watch.on_event(interval(k, 1000, "warmup")) for k in range(5)] == [None] * 5
    watch.on_event({"event": "phase_start", "phase": "run", "t": 0.0})
    assert [watch.on_event(interval(k, ops)) for k, ops in enumerate([1000, 1500, 1000, 1500, 1000])] == [None] * 5


@pytest.mark.parametrize("fields, message", [
    ({"until_steady": True, "interval_s": 20, "duration_s": 40}, r"at least 3 intervals \(60 s\)"),
    ({"until_steady": True, "interval_s": 20}, "needs duration_s"),
    ({"min_duration_s": 30, "interval_s": 20, "duration_s": 120}, "only with until_steady"),
    ({"until_steady": True, "min_duration_s": 300, "interval_s": 20, "duration_s": 120}, "must not exceed"),
])
def test_bad_steady_params_are_refused_with_the_reason(fields, message):
    with pytest.raises(ValueError, match=message):
        MeasurePhase(**fields)


def test_a_linkbench_run_ends_when_steady_and_says_so(isolated_run):
    import enginebench.driver as driver
    from enginebench.report.rundata import load_run
    path = driver.run("linkbench_cached", "smoke", systems=["wt.op1"],
                      sets=["phases.measure.interval_s=1", "phases.measure.duration_s=40",
                            "phases.measure.until_steady=true", "phases.rate_sweep=null"])
    run = load_run(path)
    end = next(e for e in system_events(run, "wt.op1", "phase_end") if e["phase"] == "run")
    k = end["steady_at_interval"]
    assert k is not None and k >= 2 and end["seconds"] == pytest.approx(k + 1)
    state = steadiness(run, "wt.op1")
    # The phase ended with the interval the driver judged, and the report's rule agrees with it.
    assert state.intervals == list(range(k + 1)) and state.steady and state.passed[-1] == k
    assert state.ended.startswith(f"steady after {k + 1} s (interval {k + 1})")
