"""Faults met as a user meets them: a full disk, a hung runner, a driver killed outright. Each ends
within a minute with its cause named in the terminal, the manifest and on top of the report; what
was measured is kept, and no process, cgroup or data folder is left (docs/faults.md: "When a run goes
wrong")."""
import html
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from enginebench import driver, supervision
from enginebench.params import load_params
from enginebench.report.html import banner
from enginebench.report.rundata import load_run
from enginebench.resources import space
from test_resources import leftover_groups

NO_SPACE = re.compile(r"no space left on device: (?P<path>\S+) \((?P<free>[\d.]+ \w+) free, this system's data "
                      r"reached (?P<size>[\d.]+ \w+)\)")


def _top_of_report(run_dir: Path) -> str:
    """The report banner's first line (the cause goes there), as the reader sees its text."""
    text = banner(load_run(run_dir))
    return html.unescape(text[text.index("<div"):].split("<br>")[0])


# Children of pytest alive before a test started: the session's stand-in servers (conftest's
# standin_uri and ferretdb_uri live as long as the session), not the test's to clean up.
_STANDING: set[int] = set()


@pytest.fixture(autouse=True)
def _children_before_the_test():
    _STANDING.clear()
    _STANDING.update(p.pid for p in psutil.Process().children(recursive=True))
    yield


def _runners_left() -> list:
    """Runners still alive below this test process that the test started. multiprocessing's
    resource tracker, which lives as long as pytest does once a test starts it, is not one."""
    def ours(p) -> bool:
        try:
            cmdline = " ".join(p.cmdline())
            return (p.is_running() and p.status() != psutil.STATUS_ZOMBIE and p.pid not in _STANDING
                    and "resource_tracker" not in cmdline)
        except psutil.NoSuchProcess:
            return False
    return [p for p in psutil.Process().children(recursive=True) if ours(p)]


def _nothing_left(data: Path) -> None:
    left = [str(p) for p in data.rglob("*")] if data.exists() else []
    assert not left, f"left in the data folder: {left}"


@pytest.fixture
def tmpfs(tmp_path):
    """Mounts a tmpfs of the given size; skips, saying why, where mounting is not allowed."""
    mounted = []

    def mount(size: str) -> Path:
        point = tmp_path / f"tmpfs{len(mounted)}"
        point.mkdir()
        out = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (mount -t tmpfs: {out.stderr.strip() or out.returncode})")
        mounted.append(point)
        return point
    yield mount
    for point in mounted:
        subprocess.run(["umount", str(point)], check=True)


def test_a_system_that_cannot_fit_is_refused_before_it_starts(tmp_path, tmpfs):
    # The issue's own case: linkbench_cached at the smoke scale on a 6 MB device.
    data = tmpfs("6m")
    env = {**os.environ, "ENGINEBENCH_RESULTS": str(tmp_path / "results"), "ENGINEBENCH_DATA": str(data)}
    started = time.time()
    out = subprocess.run([sys.executable, "-m", "enginebench", "run", "linkbench_cached", "--scale", "smoke"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and time.time() - started < 60
    run_dir = next((tmp_path / "results").glob("linkbench_cached/*"))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    wt = manifest["systems"]["wt.op1"]
    refusal = (f"not enough space for this system's data: {data}/linkbench_cached/{run_dir.name}/wt.op1 has 6.0 MiB "
               f"free, and its data is expected to reach {space.human(wt['expected_size']['bytes'])}")
    assert wt["status"] == "failed" and wt["error"].startswith(refusal)
    assert wt["expected_size"]["bytes"] > 6 << 20
    assert f"enginebench: wt.op1 failed: {refusal}" in out.stderr
    assert refusal in _top_of_report(run_dir)
    assert not (run_dir / "wt.op1" / "events.jsonl").exists(), "nothing was started"
    _nothing_left(data)


def _fill_the_disk(data: Path, results: Path, events_glob: str, marker: str) -> tuple[threading.Thread, dict]:
    """A thread that fills the device under `data`, 1 MiB at a time, once the events file matching
    `events_glob` holds `marker`; `filled["at"]` is when the device refused more (set "stop" to give up)."""
    filled: dict = {}

    def fill():
        while not filled.get("stop"):
            events = list(results.glob(events_glob))
            if events and marker in events[0].read_text():
                break
            time.sleep(0.02)
        with open(data / "filler", "wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * (1 << 20))
                    fh.flush()
            except OSError:
                filled["at"] = time.time()
    filler = threading.Thread(target=fill, daemon=True)
    filler.start()
    return filler, filled


@pytest.mark.parametrize("label", ["wt.op1", "lmdb.op1"])  # WiredTiger panics; LMDB returns the error
def test_a_disk_that_fills_during_a_run_names_its_cause(label, tmp_path, tmpfs, monkeypatch, capfd):
    params = load_params("linkbench_cached", "smoke")
    params["systems"] = [s for s in params["systems"] if s["label"] == label]
    if params["systems"][0]["engine"] == "wiredtiger":
        # WiredTiger writes into its preallocated log and reuses its files' freed blocks: only a
        # checkpoint is sure to need new room, so one runs every second while the disk is full.
        params["systems"][0]["options"]["checkpoint_s"] = 1
    room = space.expected_size(space.data_estimate(driver.describe(params)), params["systems"][0])["bytes"]
    data = tmpfs(f"{(room >> 20) + 24}m")  # the system fits when it starts
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("ENGINEBENCH_DATA", str(data))
    monkeypatch.setattr(driver, "load_params", lambda exp, scale, sets=None: params)
    # Another process takes the rest of the device once the system starts loading.
    filler, filled = _fill_the_disk(data, tmp_path / "results", f"linkbench_cached/*/{label}/events.jsonl", '"phase_start"')
    try:
        run_dir = driver.run("linkbench_cached", "smoke", "embedded")
    finally:
        filled["stop"] = True
        filler.join(timeout=30)
    ended = time.time()
    assert "at" in filled, "the filler never ran"
    assert ended - filled["at"] < 60, "the fault must end the system within a minute"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    system = manifest["systems"][label]
    assert manifest["status"] == "failed" and system["status"] == "failed", \
        (manifest["status"], system["status"], system.get("error"), system.get("engine_error"), filled)
    found = NO_SPACE.fullmatch(system["error"])
    assert found, system["error"]
    # What is free when the failure is read: none, or what the engine released on its way down
    # (WiredTiger removes its preallocated log files as it fails): never the room it started with.
    assert found["path"] == f"{data}/linkbench_cached/{run_dir.name}/{label}"
    number, unit = found["free"].split()
    free = float(number) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
    assert free < (room >> 20) * (1 << 20), found["free"]  # less than the system's own estimate of its room
    assert float(found["size"].split()[0]) > 0
    # The engine's own words are kept beside the named cause, and they vary: WiredTiger passes ENOSPC
    # through, or fails its next checkpoint with EINVAL after the failed write (the ENOSPC is then in
    # its log only), while LMDB's commit has also reported the same full disk as EIO.
    disk_words = ("No space left on device", "Input/output error")
    assert system["engine_error"] and system["engine_error"] != system["error"]
    said = system["engine_error"] + (run_dir / label / "runner.log").read_text(errors="replace")
    assert any(words in said for words in disk_words), system["engine_error"]
    assert system["error"] in capfd.readouterr().err
    assert system["error"] in _top_of_report(run_dir)
    events = [json.loads(line) for line in (run_dir / label / "events.jsonl").read_text().splitlines()]
    # In a phase the runner ends with `done`; between phases (the load's verification, a
    # checkpoint at a step's end) with `failed`: either way it says the error was fatal.
    assert any(e["event"] in ("done", "failed") and e.get("fatal") for e in events), "the runner reported the fatal error"
    assert (run_dir / "intervals.parquet").exists(), "what was measured before the disk filled is kept"
    (data / "filler").unlink()
    _nothing_left(data)
    assert not _runners_left()
    assert not leftover_groups(run_dir.name)


def _hung_run(tmp_path, monkeypatch, on_failure):
    params = load_params("linkbench_cached", "smoke")
    params["systems"] = [s for s in params["systems"] if s["label"] in ("wt.op1", "rx.op1")]
    params["supervision"].update(hung_floor_s=5, on_failure=on_failure)
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("ENGINEBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(driver, "load_params", lambda exp, scale, sets=None: params)
    monkeypatch.setattr(driver, "SPEC_EXTRA", {"hang_at_phase": "run"})  # the runner never reports after it starts
    # What is checked is the SIGTERM, then the SIGKILL: the grace between them need not be the full one.
    monkeypatch.setattr(supervision, "HUNG_GRACE_S", 3)
    started = time.time()
    run_dir = driver.run("linkbench_cached", "smoke", "embedded")
    return run_dir, time.time() - started, json.loads((run_dir / "manifest.json").read_text())


def test_a_hung_runner_is_killed_its_system_failed_and_the_run_goes_on(tmp_path, monkeypatch, capfd):
    run_dir, seconds, manifest = _hung_run(tmp_path, monkeypatch, "next_system")
    # Each: its load, 5 s of silence in the measured phase, 3 s for a SIGTERM it ignores.
    assert seconds < 2 * 30
    assert manifest["status"] == "failed"
    for label in ("wt.op1", "rx.op1"):
        system = manifest["systems"][label]
        assert system["status"] == "failed"
        assert re.match(r"hung: no event for [56] s in phase run \(last: phase_start of run\); bound: "
                        r"max\(supervision.hung_intervals 3 x the 1-s interval, supervision.hung_floor_s 5\) = 5 s",
                        system["error"]), system["error"]
        assert system["error"].endswith("the runner was stopped (SIGTERM, then SIGKILL)")
        kinds = [e["event"] for e in system["last_events"]]
        assert kinds[-2:] == ["phase_start", "signal"], kinds  # it got the SIGTERM and did nothing
        assert system["load_verified"]["ok"]
    assert "[wt.op1] failed: hung: no event for " in capfd.readouterr().err
    assert "wt.op1 failed: hung: no event" in _top_of_report(run_dir)
    load = load_run(run_dir).intervals
    assert set(load["system"]) == {"wt.op1", "rx.op1"} and set(load["phase"]) == {"load"}, "the loads are kept"
    assert not _runners_left()
    _nothing_left(tmp_path / "data")


def test_a_failed_system_stops_the_run_when_the_params_say_so(tmp_path, monkeypatch):
    run_dir, seconds, manifest = _hung_run(tmp_path, monkeypatch, "stop")
    assert seconds < 30
    assert list(manifest["systems"]) == ["wt.op1"]
    assert manifest["stopped"].startswith("The run stopped after wt.op1 failed (supervision.on_failure: stop)")
    page = banner(load_run(run_dir))
    assert manifest["stopped"] in page and "Not run: rx.op1" in page
    assert not _runners_left()
    _nothing_left(tmp_path / "data")


def _events(path: Path) -> list[dict]:
    """The events written so far; a line still being written is skipped."""
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def _kill_the_runner_in_the_query_phase(tmp_path, monkeypatch, label: str) -> Path:
    """linkbench_cached at smoke scale, wt.op1 then rx.op1; `label`'s runner is killed with SIGKILL
    once it has reported its first query interval. Returns the run folder."""
    params = load_params("linkbench_cached", "smoke")
    params["systems"] = [s for s in params["systems"] if s["label"] in ("wt.op1", "rx.op1")]
    # A query phase of 8 one-second intervals: the kill lands in it even when the killer, polling
    # beside the rest of the suite, sees the first interval late (with 2 s it once landed in the
    # rate sweep after it).
    params["phases"]["measure"]["duration_s"] = 8
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("ENGINEBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(driver, "load_params", lambda exp, scale, sets=None: params)
    return _run_killing_the_runner_at("linkbench_cached", label, "run", tmp_path)


def _run_killing_the_runner_at(exp: str, label: str, phase: str, tmp_path) -> Path:
    """Run `exp` at smoke scale (its params already patched in) and kill `label`'s runner with
    SIGKILL once it has reported its first interval of `phase`. Returns the run folder."""
    killed, stop = [], threading.Event()

    def kill_after_the_first_interval():
        while not stop.is_set():
            events = list((tmp_path / "results").glob(f"{exp}/*/{label}/events.jsonl"))
            if events and any(e.get("event") == "interval" and e.get("phase") == phase for e in _events(events[0])):
                runners = [p for p in psutil.Process().children(recursive=True) if p.name() == "enginebench-runner"]
                for runner in runners:
                    runner.send_signal(signal.SIGKILL)
                killed.extend(runners)
                return
            time.sleep(0.02)
    killer = threading.Thread(target=kill_after_the_first_interval, daemon=True)
    killer.start()
    try:
        run_dir = driver.run(exp, "smoke", "embedded")
    finally:
        stop.set()
        killer.join(timeout=30)
    assert killed, f"the {phase} phase never reported an interval"
    return run_dir


def test_a_runner_killed_in_the_query_phase_keeps_its_verified_load_in_the_findings(tmp_path, monkeypatch):
    from enginebench.families.linkbench import report as lb
    from enginebench.report.html import number
    from enginebench.report.rundata import phase_summary
    run_dir = _kill_the_runner_in_the_query_phase(tmp_path, monkeypatch, "rx.op1")
    run = load_run(run_dir)
    rx = next(s for s in run.systems if s["label"] == "rx.op1")
    assert rx["status"] == "failed" and "killed by SIGKILL" in rx["error"] and "during phase run" in rx["error"]
    assert rx["load_verified"]["ok"]
    load = phase_summary(run.intervals, "rx.op1", "load")
    text = lb.findings(run, lb.claims_table(run))
    assert (f"rx.op1 failed in the run phase (SIGKILL); its load completed and verified: "
            f"{number(load['ops_per_s'])} docs/s over {number(load['seconds'])} s") in text
    assert 'Its run-phase figures are partial: tagged "(failed: partial)" in the tables and used by no claim' in text
    assert "wt.op1 failed" not in text, "the system that completed is not named among the unfinished"
    assert not _runners_left()
    _nothing_left(tmp_path / "data")


def _drivers_killed_during_their_loads(tmp_path, count: int) -> list[tuple[Path, list]]:
    """`count` runs of linkbench_uncached_disk at the default scale (each runner in a cgroup),
    started side by side, each driver killed with SIGKILL once its load reported an interval;
    returns each run's folder and its runner processes, in the order they started."""
    env = {**os.environ, "ENGINEBENCH_RESULTS": str(tmp_path / "results"), "ENGINEBENCH_DATA": str(tmp_path / "data")}
    folders = tmp_path / "results" / "linkbench_uncached_disk"
    started = []
    for _ in range(count):
        proc = subprocess.Popen([sys.executable, "-m", "enginebench", "run", "linkbench_uncached_disk", "--scale",
                                 "default"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        known = {folder for _, folder in started}
        deadline = time.time() + 120
        while not (new := [f for f in (folders.iterdir() if folders.is_dir() else ()) if f.is_dir() and f not in known]):
            assert proc.poll() is None and time.time() < deadline, "the run never made its folder"
            time.sleep(0.1)
        started.append((proc, new[0]))
    killed = []
    for proc, run_dir in started:
        events = run_dir / "wt.op1" / "events.jsonl"
        deadline = time.time() + 180
        while not (events.exists() and '"interval"' in events.read_text()):
            assert proc.poll() is None, "the run ended before its load reported an interval"
            if time.time() > deadline:
                pytest.fail("the load never reported an interval")
            time.sleep(0.2)
        runners = [p for p in psutil.Process(proc.pid).children(recursive=True) if p.name() == "enginebench-runner"]
        assert runners
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed.append((run_dir, runners))
    return killed


def _next_run(tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ENGINEBENCH_RESULTS": str(tmp_path / "results"), "ENGINEBENCH_DATA": str(tmp_path / "data")}
    return subprocess.run([sys.executable, "-m", "enginebench", "run", "tokumx_read", "--scale", "smoke"],
                          env=env, capture_output=True, text=True, timeout=300)


def _died_with_what_it_measured(run_dir: Path, found_by: str) -> None:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "died" and manifest["died"]["found_by"] == found_by
    system = manifest["systems"]["wt.op1"]
    assert system["status"] == "died" and "ended without a word" in system["error"]
    run = load_run(run_dir)
    assert (run.intervals["phase"] == "load").any(), "the load's intervals are kept as a table"
    assert not run.samples.is_empty(), "and the samples taken until the kill"
    assert _top_of_report(run_dir).startswith("<div class='eb-banner'><b>The run died</b>")


def test_kill_9_of_the_driver_is_found_by_make_compare_and_the_next_run_which_cleans_up(tmp_path):
    """Two drivers killed with -9 (side by side, one start-up's time): make compare marks the run it
    reads died; the next run marks the other, removes both runs' scratch folders and cgroups, and
    leaves no runner; make reports shows them died."""
    (read_by_compare, _), (found_by_next_run, runners) = _drivers_killed_during_their_loads(tmp_path, 2)
    data = tmp_path / "data" / "linkbench_uncached_disk"
    env = {**os.environ, "ENGINEBENCH_RESULTS": str(tmp_path / "results"), "ENGINEBENCH_REPORTS": str(tmp_path / "reports")}
    out = subprocess.run([sys.executable, "-m", "enginebench", "compare", str(read_by_compare), str(read_by_compare)],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    _died_with_what_it_measured(read_by_compare, "make compare")
    assert "status died" in next((tmp_path / "reports").glob("compare-*.html")).read_text()
    # Only a run cleans up scratch folders (it is the one that needs the room).
    assert (data / read_by_compare.name).is_dir() and (data / found_by_next_run.name).is_dir()
    next_started = time.time()
    out = _next_run(tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"enginebench: {found_by_next_run}: its driver is gone; marked died" in out.stderr
    for run_dir in (read_by_compare, found_by_next_run):
        assert f"removed {data / run_dir.name}" in out.stderr
        assert not leftover_groups(run_dir.name), "the dead runs' cgroups are removed"
    _died_with_what_it_measured(found_by_next_run, "the next run")
    gone, alive = psutil.wait_procs(runners, timeout=10)
    assert not alive, f"left behind: {alive}"
    _nothing_left(tmp_path / "data")
    # The next run recognises the dead run within a minute of its start.
    marked = json.loads((found_by_next_run / "manifest.json").read_text())["died"]["found_at"]
    from datetime import datetime
    assert datetime.fromisoformat(marked).timestamp() - next_started < 60
    out = subprocess.run([sys.executable, "-m", "enginebench", "reports"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert ">died<" in (tmp_path / "reports" / "index.html").read_text()


def test_a_full_disk_the_engine_reported_in_its_log_is_named_when_it_failed_on_something_else(tmp_path):
    """WiredTiger's checkpoint after a write that hit a full disk fails with EINVAL, and the
    engine frees its preallocated log files as it goes down, so neither the error nor the free
    space says "full": its own message in the runner's log does."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "collection.wt").write_bytes(b"x" * 4096)
    error = ("FatalEngineError: WiredTiger checkpoint: WT_PANIC: WiredTiger library panic; WiredTiger: "
             "__wt_block_checkpoint_resolve, 1008: collection-node.wt: the checkpoint failed, the system must restart: "
             "Invalid argument")
    log = tmp_path / "runner.log"
    log.write_text("wiredtiger: [1][2:3], file:collection-node.wt, WT_SESSION.checkpoint: __posix_file_write, 505: "
                   "collection-node.wt: handle-write: pwrite: failed to write 4096 bytes at offset 65536: "
                   "No space left on device\n")
    cause = space.no_space_cause(error, data, log)
    assert cause is not None and cause.startswith(f"no space left on device: {data} (") and "4.0 KiB" in cause, cause
    log.write_text("wiredtiger: a checkpoint message of no consequence\n")
    assert space.no_space_cause(error, data, log) is None, "free space and no full-disk words: not a full disk"


def test_a_full_disk_under_the_fractal_tree_ends_its_system_with_the_cause_named(tmp_path, tmpfs, monkeypatch):
    """PerconaFT does not fail a write the disk has no room for: it refuses puts below its red zone,
    and retries a blocked write forever. Either way the system ends within a minute, named as a
    full disk, with what it measured kept and nothing left behind."""
    if "tokumx-1.0.4" not in driver.native.builds().get("fractal", []):
        pytest.skip("PerconaFT is not built into this runner (make setup builds it)")
    params = load_params("tokumx_insert_10m", "smoke")
    params["systems"] = [s for s in params["systems"] if s["label"] == "tokumx"]
    params["workload"]["documents"] = 3_000_000  # a load that lasts long enough to fill the disk under
    room = space.expected_size(space.data_estimate(driver.describe(params)), params["systems"][0])["bytes"]
    data = tmpfs(f"{(room >> 20) + 24}m")
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("ENGINEBENCH_DATA", str(data))
    monkeypatch.setattr(driver, "load_params", lambda exp, scale, sets=None: params)
    filler, filled = _fill_the_disk(data, tmp_path / "results", "tokumx_insert_10m/*/tokumx/events.jsonl", '"interval"')
    try:
        run_dir = driver.run("tokumx_insert_10m", "smoke", "embedded")
    finally:
        filled["stop"] = True
        filler.join(timeout=30)
    assert "at" in filled, "the filler never ran"
    assert time.time() - filled["at"] < 60, "the fault must end the system within a minute"
    system = json.loads((run_dir / "manifest.json").read_text())["systems"]["tokumx"]
    assert system["status"] == "failed", (system["status"], system.get("error"))
    assert NO_SPACE.fullmatch(system["error"]), system["error"]
    assert "No space left on device" in system["engine_error"], system["engine_error"]
    assert (run_dir / "intervals.parquet").exists(), "what was measured before the disk filled is kept"
    (data / "filler").unlink()
    _nothing_left(data)
    assert not _runners_left()
    assert not leftover_groups(run_dir.name)


def test_transparent_huge_pages_always_stop_a_fractal_system_before_anything_starts(tmp_path, monkeypatch):
    """PerconaFT refuses to start under THP=always: the run says so, and how to proceed, first."""
    from enginebench import native
    monkeypatch.delenv("TOKU_HUGE_PAGES_OK", raising=False)
    thp = tmp_path / "enabled"
    thp.write_text("[always] madvise never\n")
    params = load_params("tokumx_read", "smoke")
    with pytest.raises(ValueError, match=r"tokumx_read.yaml: systems\[tokumx\].engine: fractal: PerconaFT \(the "
                                         r"fractal tree\) refuses to start while transparent huge pages are always on "
                                         r".*echo madvise > .*TOKU_HUGE_PAGES_OK=1"):
        native.check_host(params, str(thp))
    thp.write_text("always [madvise] never\n")
    native.check_host(params, str(thp))
    monkeypatch.setenv("TOKU_HUGE_PAGES_OK", "1")
    thp.write_text("[always] madvise never\n")
    native.check_host(params, str(thp))


def test_a_corrupt_source_archive_is_refused_naming_it(tmp_path):
    """A vendored source whose checksum differs is never unpacked: the error names the archive and
    both checksums (tools/vendor_source.sh, as setup's builds take their sources)."""
    from enginebench.paths import repo_root
    archive = tmp_path / "PerconaFT-tokumx-2.0.1.tar.gz"
    archive.write_bytes(b"not the release's archive")
    out = subprocess.run(["bash", str(repo_root() / "tools" / "vendor_source.sh"), str(repo_root() / "tools" / "perconaft.sources"),
                          "tokumx-2.0.1", str(tmp_path / "src")], env={**os.environ, "EB_VENDOR_DIR": str(tmp_path)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert f"{archive}: sha256 " in out.stderr and "fed38860f1061455ac34d16711d0f738afc4245b79fa20e32e7e0f20f70b0ea7" in out.stderr
    assert not (tmp_path / "src").exists()
    unknown = subprocess.run(["bash", str(repo_root() / "tools" / "vendor_source.sh"), str(repo_root() / "tools" / "perconaft.sources"),
                              "tokumx-9.9", str(tmp_path / "src")], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "lists no release tokumx-9.9; listed: tokumx-1.0.4" in unknown.stderr


def test_a_fractal_runner_killed_mid_phase_keeps_what_it_measured_and_leaves_nothing(tmp_path, monkeypatch):
    """The fractal tree's runner killed with SIGKILL in its first client phase: its system failed with
    the signal named, its verified load kept, no process or data left (PerconaFT's files and log
    included)."""
    if "tokumx-1.0.4" not in driver.native.builds().get("fractal", []):
        pytest.skip("PerconaFT is not built into this runner (make setup builds it)")
    params = load_params("tokumx_read", "smoke")
    params["systems"] = [s for s in params["systems"] if s["label"] == "tokumx"]
    params["phases"]["measure"]["duration_s"] = 5
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("ENGINEBENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(driver, "load_params", lambda exp, scale, sets=None: params)
    run_dir = _run_killing_the_runner_at("tokumx_read", "tokumx", "clients=1", tmp_path)
    system = json.loads((run_dir / "manifest.json").read_text())["systems"]["tokumx"]
    assert system["status"] == "failed" and "killed by SIGKILL" in system["error"], system.get("error")
    assert system["load_verified"]["ok"]
    assert (load_run(run_dir).intervals["phase"] == "load").any(), "the load's intervals are kept"
    assert not _runners_left()
    _nothing_left(tmp_path / "data")
