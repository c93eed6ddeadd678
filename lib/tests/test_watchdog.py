"""The rule that calls a runner hung (watchdog.py), on a clock the test moves."""
from enginebench.watchdog import Watchdog, completed

RULES = {"hung_intervals": 3, "hung_floor_s": 60, "step_s": 3600}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def interval(phase, done, errors=0):
    return {"event": "interval", "phase": phase, "ops": {"OP": {"count": done + errors, "items": done, "errors": errors}}}


def test_a_phase_that_reports_its_intervals_is_not_hung():
    clock = Clock()
    dog = Watchdog(RULES, clock=clock)
    dog.event({"event": "phase_start", "phase": "run", "interval_s": 20})
    for _ in range(10):
        clock.now += 20
        dog.event(interval("run", 100))
        assert dog.check() is None


def test_no_event_in_a_phase_for_the_bound_is_hung_and_the_bound_is_named():
    clock = Clock()
    dog = Watchdog(RULES, clock=clock)
    dog.event({"event": "phase_start", "phase": "run", "interval_s": 30})
    clock.now += 89  # 3 x 30 s: not yet
    assert dog.check() is None
    clock.now += 1
    why = dog.check()
    assert why.startswith("hung: no event for 90 s in phase run (last: phase_start of run)")
    assert "max(supervision.hung_intervals 3 x the 30-s interval, supervision.hung_floor_s 60) = 90 s" in why


def test_short_intervals_are_bounded_by_the_floor():
    clock = Clock()
    dog = Watchdog(RULES, clock=clock)
    dog.event({"event": "phase_start", "phase": "load", "interval_s": 1})
    clock.now += 59
    assert dog.check() is None  # 3 x 1 s would have called it hung long ago
    clock.now += 1
    assert "= 60 s" in dog.check()


def test_long_intervals_are_bounded_by_their_multiple():
    clock = Clock()
    dog = Watchdog(RULES, clock=clock)
    dog.event({"event": "phase_start", "phase": "run", "interval_s": 3600})
    clock.now += 3 * 3600 - 1
    assert dog.check() is None
    clock.now += 1
    assert "no event for 10800 s" in dog.check()


def test_intervals_with_no_completed_operation_are_a_livelock():
    clock = Clock()
    dog = Watchdog(RULES, clock=clock)
    dog.event({"event": "phase_start", "phase": "load", "interval_s": 10})
    clock.now += 10
    dog.event(interval("load", 500))
    for _ in range(5):  # 50 s of empty intervals, then failed calls only: nothing done
        clock.now += 10
        dog.event(interval("load", 0, errors=3 if clock.now > 1040 else 0))
        assert dog.check() is None
    clock.now += 10
    dog.event(interval("load", 0, errors=3))
    why = dog.check()
    assert why.startswith("hung: no operation completed for 60 s in phase load although it reported intervals")


def test_completed_counts_calls_that_did_not_fail():
    assert completed(interval("run", 7, errors=2)) == 7
    assert completed({"event": "interval", "ops": {}}) == 0


def test_between_phases_a_busy_silence_is_allowed_until_step_s():
    # Verifying a large load reports nothing until it ends, and works all along.
    clock = Clock()
    dog = Watchdog(RULES, clock=clock)
    dog.event({"event": "phase_end", "phase": "load"})
    cpu = 0.0
    while clock.now - 1000 < 3599:
        clock.now += 0.5
        cpu += 0.5
        assert dog.check(cpu, 0) is None
    clock.now += 1
    assert dog.check(cpu + 1, 0).startswith("hung: no event for 3600 s between phases (last: phase_end of load)")


def test_between_phases_an_idle_silence_is_hung_after_the_floor_plus_the_quiesce():
    clock = Clock()
    dog = Watchdog(RULES, pause_s=20, clock=clock)
    dog.event({"event": "load_verified"})
    assert dog.check(1.0, 4096) is None  # the driver reads the runner's activity all along
    while clock.now - 1000 < 79.5:
        clock.now += 0.5
        assert dog.check(1.0, 4096) is None  # idle, but within 60 s + the 20-s quiesce
    clock.now += 0.5
    why = dog.check(1.0, 4096)
    assert why.startswith("hung: no event for 80 s between phases (last: load_verified), and no CPU or IO used")
    assert "supervision.hung_floor_s 60 s plus the plan's 20-s quiesce" in why


def test_between_phases_io_counts_as_work():
    clock = Clock()
    dog = Watchdog(RULES, clock=clock)
    dog.event({"event": "quiesce"})
    moved = 0
    for _ in range(400):  # 200 s of a cold start's reads, little CPU
        clock.now += 0.5
        moved += 1 << 20
        assert dog.check(0.0, moved) is None


def test_a_runner_that_ended_without_a_word_is_named_by_signal_phase_and_log(tmp_path):
    from enginebench.supervision import exit_cause
    log = tmp_path / "runner.log"
    log.write_text("")
    events = [{"event": "phase_start", "phase": "load"}, {"event": "phase_end", "phase": "load"},
              {"event": "phase_start", "phase": "run"}]
    assert exit_cause(-9, events, log) == ("the runner was killed by SIGKILL (kill -9, or the kernel's OOM killer) "
                                           "during phase run; its log is empty")
    log.write_text("starting\nthread 'main' panicked at src/run.rs:10\nnote: run with RUST_BACKTRACE=1\n")
    assert exit_cause(101, events[:2], log) == (
        f"the runner exited with code 101 after phase load ended; its log ({log}) ends: starting | "
        "thread 'main' panicked at src/run.rs:10 | note: run with RUST_BACKTRACE=1")
    assert exit_cause(-15, [], tmp_path / "absent.log").endswith("SIGTERM before its first phase; its log is empty")
