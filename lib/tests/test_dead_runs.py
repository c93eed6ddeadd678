"""Runs whose driver ended without a word: recognised from the process they name, marked died with
what they measured, and their scratch folders, processes and cgroups removed (results/owner.py,
rundir.py, scratch.py)."""
import json
import os
import subprocess
import sys
import time

import psutil
import pytest

from enginebench.results import owner, scratch
from enginebench.results.rundir import settle, settle_all


def _gone_process() -> dict:
    """The identity of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    who = owner.identity(child.pid)
    child.wait()
    return who


def test_this_process_is_alive_and_an_exited_one_is_not():
    assert owner.alive(owner.identity()) is True
    assert owner.alive(_gone_process()) is False


def test_a_reused_pid_a_reboot_and_a_zombie_count_as_gone():
    me = owner.identity()
    assert owner.alive({**me, "started": me["started"] - 100}) is False  # the pid is another process's now
    assert owner.alive({**me, "boot_id": "another-boot"}) is False
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    who = owner.identity(child.pid)
    deadline = time.time() + 10
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE and time.time() < deadline:
        time.sleep(0.05)  # exited, not yet reaped: a killed driver whose parent has not waited
    assert owner.alive(who) is False
    child.wait()


def test_another_hosts_or_an_unrecorded_driver_cannot_be_judged():
    assert owner.alive({**owner.identity(), "host": "elsewhere"}) is None
    assert owner.alive(None) is None


def _run_folder(base, driver, systems=("a.op1", "b.op1"), status="running"):
    folder = base / "exp" / "20260101-000000-host"
    folder.mkdir(parents=True)
    manifest = {"run_id": folder.name, "experiment": "exp", "scale": "smoke", "status": status,
                "started_at": "2026-01-01T00:00:00+00:00", "finished_at": None, "driver": driver,
                "params": {"systems": [{"label": s, "role": "btree", "engine": "wiredtiger"} for s in systems]},
                "host": {"hostname": owner.hostname()}, "systems": {}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_a_running_run_whose_driver_is_gone_is_marked_died_with_what_it_kept(tmp_path):
    folder = _run_folder(tmp_path, _gone_process())
    (folder / "a.op1").mkdir()
    events = [{"event": "runner", "runner": "native", "t": 1.0},
              {"event": "phase_start", "phase": "load", "t": 2.0, "interval_s": 1.0}]
    # The last line was cut short by the kill.
    (folder / "a.op1" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events) + '{"event": "inter')
    assert settle(folder, "make reports") is True
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "died"
    assert manifest["died"]["found_by"] == "make reports" and manifest["died"]["last_heard"].startswith("1970")
    system = manifest["systems"]["a.op1"]
    assert system["status"] == "died" and "ended without a word" in system["error"]
    assert system["runner"]["runner"] == "native"
    assert "b.op1" not in manifest["systems"]  # it never started
    assert settle(folder, "make reports") is False  # once


def test_a_live_or_finished_run_is_left_as_it_is(tmp_path):
    live = _run_folder(tmp_path / "live", owner.identity())
    done = _run_folder(tmp_path / "done", _gone_process(), status="complete")
    assert settle_all("the next run", tmp_path / "live") == []
    assert settle_all("the next run", tmp_path / "done") == []
    assert json.loads((live / "manifest.json").read_text())["status"] == "running"
    assert json.loads((done / "manifest.json").read_text())["status"] == "complete"


def test_the_report_says_on_top_that_the_run_died(tmp_path):
    from enginebench.report.html import banner
    from enginebench.report.rundata import load_run
    folder = _run_folder(tmp_path, _gone_process())
    (folder / "a.op1").mkdir()
    (folder / "a.op1" / "events.jsonl").write_text(json.dumps({"event": "runner", "runner": "native", "t": 1.0}) + "\n")
    settle(folder, "make compare")
    text = banner(load_run(folder))
    body = text[text.index("<div"):]
    assert body.index("<b>The run died</b>") < body.index("a.op1 died") < body.index("status <b>died</b>")
    assert "make compare found it gone" in text and "Not run: b.op1" in text


def test_the_index_marks_a_dead_run_died(tmp_path, monkeypatch):
    from enginebench.report.index import write_index
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(tmp_path / "reports"))
    folder = _run_folder(tmp_path / "results", _gone_process())
    page = write_index().read_text()
    assert json.loads((folder / "manifest.json").read_text())["status"] == "died"
    assert ">died<" in page


def test_reclaim_removes_a_dead_runs_folder_and_ends_what_it_left_running(tmp_path):
    root = tmp_path / "data"
    dead = scratch.Scratch("exp", "run-dead", root).create()
    (dead.system_dir("a.op1") / "journal").mkdir(parents=True)
    (dead.system_dir("a.op1") / "journal" / "log").write_bytes(b"x" * 4096)
    leftover = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # stands in for its runner
    dead.started([leftover.pid])
    record = json.loads((dead.path / scratch.OWNER).read_text())
    record["driver"] = _gone_process()
    (dead.path / scratch.OWNER).write_text(json.dumps(record))
    live = scratch.Scratch("exp", "run-live", root).create()  # this process drives it
    kept = scratch.Scratch("other", "run-kept", root).create()
    kept.remove(keep=True)
    record = json.loads((kept.path / scratch.OWNER).read_text())
    record["driver"] = _gone_process()  # keep_data: its driver is gone, its data stays
    (kept.path / scratch.OWNER).write_text(json.dumps(record))

    done = scratch.reclaim(root)
    assert len(done) == 1 and "run-dead" in done[0] and str(leftover.pid) in done[0]
    assert not psutil.pid_exists(leftover.pid), "what the dead run left running is ended"
    leftover.wait(timeout=10)
    assert not dead.path.exists() and live.path.is_dir() and kept.path.is_dir()
    live.remove()
    assert not (root / "exp").exists(), "an experiment's folder goes with its last run"


def test_reclaim_of_a_folder_from_before_owner_files_asks_the_runs_manifest(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(tmp_path / "results"))
    root = tmp_path / "data"
    finished, unknown, empty = root / "exp" / "run-finished", root / "exp" / "run-unknown", root / "exp" / "run-empty"
    for folder in (finished, unknown, empty):
        folder.mkdir(parents=True)
    (finished / "data.wt").write_bytes(b"x")
    (unknown / "data.wt").write_bytes(b"x")
    (tmp_path / "results" / "exp" / "run-finished").mkdir(parents=True)
    (tmp_path / "results" / "exp" / "run-finished" / "manifest.json").write_text(json.dumps({"status": "failed"}))
    old = time.time() - 2 * scratch.YOUNG_S
    for folder in (finished, unknown, empty):
        os.utime(folder, (old, old))
    scratch.reclaim(root)
    assert not finished.exists() and not empty.exists()
    assert unknown.is_dir(), "a folder no manifest explains is not deleted on a guess"


@pytest.mark.parametrize("keep", [False, True])
def test_a_run_leaves_no_empty_folder_unless_it_keeps_its_data(tmp_path, keep):
    root = tmp_path / "data"
    run = scratch.Scratch("exp", "run", root).create()
    run.system_dir("a.op1").mkdir()
    run.remove(keep=keep)
    assert run.path.is_dir() is keep
    assert list(root.iterdir()) == ([root / "exp"] if keep else [])


def test_a_run_id_is_unique_on_the_machine_not_only_in_its_results_folder():
    """Two drivers with their own results folders (two checkouts, two test workers) that start in
    the same second get different run ids: the id names the run's machine-wide cgroups."""
    from enginebench.results import rundir
    name = f"20991231-235959-test-{os.getpid()}"
    try:
        assert rundir.reserve_run_id(name) is True
        assert rundir.reserve_run_id(name) is False
    finally:
        (rundir.RUN_IDS / name).unlink(missing_ok=True)
