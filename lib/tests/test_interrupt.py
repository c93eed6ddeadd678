"""Interrupting a run during its load leaves no process behind and keeps what was measured."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest


def _runners(parent: psutil.Process) -> list:
    """The native runners under the driver (its other children come and go: git, probes)."""
    found = []
    for child in parent.children(recursive=True):
        try:
            if "enginebench-runner" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found


def _load_interval_reported(events: Path) -> bool:
    for line in events.read_text().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line still being written
        if event.get("event") == "interval" and event.get("phase") == "load":
            return True
    return False


def _first_load_interval(tmp_path: Path, exp: str, proc: subprocess.Popen, limit_s: float = 300) -> Path:
    """The events file of the run's first system once its load has reported an interval: the
    run's own progress, not a wall-clock guess (under a full test suite a run can take minutes to
    get there). Fails saying so when the driver exits first or the load never reports."""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        found = list((tmp_path / "results").glob(f"{exp}/*/*/events.jsonl"))
        if found and _load_interval_reported(found[0]):
            return found[0]
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the run ended before its load reported an interval (exit {proc.returncode}): {err[-2000:]}")
        time.sleep(0.2)
    pytest.fail(f"the load never reported an interval within {limit_s:.0f} s")


def _interruptible() -> None:
    """In the child: Ctrl-C's default action. A shell starts background jobs (a CI script run
    with `&`, nohup) with SIGINT ignored, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("exp,signum", [("linkbench_cached", signal.SIGINT), ("linkbench_cached", signal.SIGTERM),
                                        ("linkbench_uncached_disk", signal.SIGINT)])
def test_interrupt_during_load(tmp_path, exp, signum):
    env = {**os.environ, "ENGINEBENCH_RESULTS": str(tmp_path / "results"), "ENGINEBENCH_DATA": str(tmp_path / "data")}
    proc = subprocess.Popen([sys.executable, "-m", "enginebench", "run", exp, "--scale", "default"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_interruptible)
    parent = psutil.Process(proc.pid)
    events = _first_load_interval(tmp_path, exp, proc)
    children = parent.children(recursive=True)
    assert children, "the runner process should be running"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "aborted" in err
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, f"left behind: {alive}"
    run_dir = events.parent.parent
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "aborted"
    system = next(iter(manifest["systems"].values()))
    assert system["status"] == "aborted"
    kept = [json.loads(line) for line in events.read_text().splitlines()]
    assert any(e["event"] == "interval" and e["phase"] == "load" for e in kept)
    assert (run_dir / "intervals.parquet").exists(), "measured intervals are kept as a table"
    assert not any(p.is_file() for p in (tmp_path / "data").rglob("*")), "engine files are removed"
    from test_resources import leftover_groups
    assert not leftover_groups(run_dir.name), "the run's cgroups are removed"


def test_second_signal_while_stopping_does_not_abandon_the_runner(tmp_path):
    env = {**os.environ, "ENGINEBENCH_RESULTS": str(tmp_path / "results"), "ENGINEBENCH_DATA": str(tmp_path / "data")}
    proc = subprocess.Popen([sys.executable, "-m", "enginebench", "run", "linkbench_cached", "--scale", "default"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_interruptible)
    parent = psutil.Process(proc.pid)
    _first_load_interval(tmp_path, "linkbench_cached", proc)  # the run folder exists and its load is under way
    children = parent.children(recursive=True)
    assert _runners(parent), "a runner is running"
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, f"left behind: {alive}"
    manifest = json.loads(next((tmp_path / "results").glob("linkbench_cached/*/manifest.json")).read_text())
    assert manifest["status"] == "aborted"


def test_a_run_aborted_under_any_command_is_one_line_and_the_shells_code(monkeypatch, capsys):
    """bench and explain run experiments too: their interrupt ends like `run`'s, with one line
    and 130, not a traceback; an interrupt that is not a run's stays Python's."""
    from enginebench import __main__ as cli
    from enginebench.driver import RunAborted

    def stopped(_args):
        raise RunAborted("run data/results/linkbench_cached/x interrupted during phase load")
    monkeypatch.setitem(cli.COMMANDS, "bench", stopped)
    assert cli.main(["bench"]) == cli.ABORTED == 130
    err = capsys.readouterr().err
    assert err == "enginebench: aborted: run data/results/linkbench_cached/x interrupted during phase load\n"

    def ctrl_c(_args):
        raise KeyboardInterrupt
    monkeypatch.setitem(cli.COMMANDS, "bench", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        cli.main(["bench"])
