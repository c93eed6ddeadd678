"""Memory and storage profiles: cgroups created, enforced, reported and removed; the fallbacks
and the required/best-effort contract."""
import os
import subprocess
import sys

import pytest

from enginebench.resources import cgroups, profiles
from enginebench.resources.cgroups import Cgroup, IOCaps
from enginebench.metrics.sampler import device_of

WRITABLE, WHY = profiles.cgroups_writable()
needs_cgroups = pytest.mark.skipif(not WRITABLE, reason=f"cgroups are not writable here: {WHY}")


def leftover_groups(run_id: str = "") -> list[str]:
    """enginebench groups still present (those of one run, when run_id is given)."""
    found = []
    for controller in ("memory", "blkio", None):
        try:
            base = cgroups.own_path(controller)
        except cgroups.CgroupError:
            continue
        found += [str(p) for p in base.glob(f"enginebench-*{run_id}*") if p.name != "enginebench-home"]
    return found


@needs_cgroups
def test_an_empty_group_a_live_driver_holds_is_not_taken_for_a_dead_runs(monkeypatch):
    # Between its runner's exit and the reading of its counters a group is empty; a concurrent
    # run (this checkout's or another's) must leave it alone. A dead driver's group is removed.
    held = Cgroup.create(f"enginebench-held-{os.getpid()}", memory=True, io=False)
    orphan = Cgroup.create(f"enginebench-orphan-{os.getpid()}", memory=True, io=False)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (cgroups._holders() / orphan.name).write_text(dead.stdout.strip())  # its driver has exited
    try:
        removed = cgroups.remove_stale(min_age_s=0)
        assert str(orphan.paths["memory"]) in removed
        assert held.paths["memory"].is_dir() and held.memory_report()["limit_bytes"] is not None
    finally:
        held.remove()
        if orphan.paths["memory"].exists():
            orphan.remove()
        cgroups._release(orphan.name)
    assert not (cgroups._holders() / held.name).exists()  # released with its group


@needs_cgroups
def test_group_limits_and_removal(tmp_path):
    device = device_of(tmp_path)
    group = Cgroup.create(f"enginebench-test-{os.getpid()}", memory=True, io=device is not None)
    try:
        group.limit_memory(64 << 20)
        if device is not None:
            group.limit_io(device.major, device.minor, IOCaps(read_iops=500, write_iops=400))
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"], preexec_fn=group.add_self)
        report = group.memory_report()
        assert report["limit_bytes"] == 64 << 20
        assert report["peak_bytes"] is not None and report["peak_bytes"] <= 64 << 20
        proc.wait()
    finally:
        group.remove()
    assert not leftover_groups(f"test-{os.getpid()}")


@needs_cgroups
def test_memory_limit_is_enforced():
    group = Cgroup.create(f"enginebench-oom-{os.getpid()}", memory=True, io=False)
    try:
        group.limit_memory(48 << 20)
        hungry = "x = bytearray(200 << 20); x[::4096] = b'y' * len(x[::4096]); print('survived')"
        out = subprocess.run([sys.executable, "-c", hungry], preexec_fn=group.add_self, capture_output=True, text=True)
        report = group.memory_report()
        assert out.returncode != 0 and "survived" not in out.stdout
        assert report["failcnt"] > 0 or report["oom_kills"]
        assert report["peak_bytes"] <= 48 << 20
    finally:
        group.remove()


def test_required_limit_that_cannot_be_enforced_starts_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(profiles, "cgroups_writable", lambda: (False, "no cgroups in this test"))
    monkeypatch.setattr(profiles, "_can_mlock", lambda: False)
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(tmp_path))
    from enginebench import driver
    from enginebench.params import load_params
    params = load_params("linkbench_uncached_disk", "paper")
    assert params["resources"]["memory"]["enforce"] == "required"
    with pytest.raises(profiles.ResourceError, match="cannot enforce: memory limit.*no cgroups in this test.*Nothing was started"):
        profiles.plan_resources(params)
    monkeypatch.setattr(driver, "load_params", lambda exp, scale, sets=None: params)
    with pytest.raises(profiles.ResourceError):
        driver.run("linkbench_uncached_disk", "paper")
    assert not any(tmp_path.iterdir())


def test_best_effort_runs_and_says_what_was_not_enforced(monkeypatch, isolated_run):
    monkeypatch.setattr(profiles, "cgroups_writable", lambda: (False, "no cgroups in this test"))
    monkeypatch.setattr(profiles, "_can_mlock", lambda: False)
    from enginebench import driver
    from enginebench.report.html import banner
    from enginebench.report.rundata import load_run
    run = load_run(driver.run("linkbench_uncached_disk", "smoke"))
    assert run.manifest["status"] == "complete"
    text = " ".join(run.manifest["banner"])
    assert "Not enforced: memory limit of 256 MB" in text and "storage profile 'disk'" in text
    assert "Not enforced" in banner(run)


@needs_cgroups
def test_uncached_smoke_enforces_and_reports(isolated_run):
    from enginebench import driver
    from enginebench.report import resources
    from enginebench.report.rundata import load_run
    run = load_run(driver.run("linkbench_uncached_disk", "smoke"))
    assert run.manifest["status"] == "complete"
    for s in run.systems:
        res = s["resources"]
        assert res["memory_method"] == "cgroup"
        assert res["memory"]["peak_bytes"] <= res["memory"]["limit_bytes"] == 256 << 20
        assert res["io_caps"]["read_iops"] == 1200
        assert s["cold_start"]["method"] == "fadvise" and s["cold_start"]["files"] > 0
    assert run.intervals["cg_reads"].drop_nulls().len() > 0
    table = resources.resources_table(run)
    assert table["read IOPS cap"].to_list() == [1200, 1200]
    assert not leftover_groups(run.manifest["run_id"])


def test_memory_hog_locks_and_dies_with_its_parent():
    if not profiles._can_mlock():
        pytest.skip("mlock is not permitted for this user (needs root or an unlimited RLIMIT_MEMLOCK)")
    hog = subprocess.Popen([sys.executable, "-m", "enginebench.resources.hog", str(16 << 20)],
                           stdout=subprocess.PIPE, text=True)
    try:
        assert hog.stdout.readline().startswith("locked")
        status = open(f"/proc/{hog.pid}/status").read()
        locked_kb = int(next(l for l in status.splitlines() if l.startswith("VmLck")).split()[1])
        assert locked_kb >= 16 << 10
    finally:
        hog.kill()
        hog.wait()


def test_storage_profiles_match_the_posts_devices():
    assert profiles.STORAGE_PROFILES["disk"].read_iops == 1200
    ssd = profiles.STORAGE_PROFILES["ssd"]
    assert (ssd.read_iops, ssd.write_iops) == (75_000, 36_000)
    assert profiles.STORAGE_PROFILES["none"] is None


def test_cgroup_v2_files(tmp_path, monkeypatch):
    """The v2 path on a stand-in hierarchy: the process moves to a leaf so the controllers can be
    enabled below its group, limits go to memory.max / io.max, the report reads memory.events."""
    root = tmp_path / "cgroup"
    home = root / "user.slice" / "session"
    home.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory io pids")
    (home / "cgroup.procs").write_text("4242\n")
    (home / "cgroup.subtree_control").write_text("")
    monkeypatch.setattr(cgroups, "ROOT", root)
    monkeypatch.setattr(cgroups, "membership", lambda: "0::/user.slice/session\n")
    monkeypatch.setattr(cgroups, "whole_disk", lambda major, minor: (major, minor))
    assert cgroups.version() == 2
    group = Cgroup.create("enginebench-x", memory=True, io=True)
    assert (home / "enginebench-home" / "cgroup.procs").read_text() == "4242"
    assert set((home / "cgroup.subtree_control").read_text().split()) == {"+io", "+memory"}
    group.limit_memory(256 << 20)
    group.limit_io(8, 0, IOCaps(read_iops=1200, write_iops=1200, read_bps=900 << 20))
    path = home / "enginebench-x"
    assert (path / "memory.max").read_text() == str(256 << 20)
    assert (path / "io.max").read_text() == f"8:0 riops=1200 wiops=1200 rbps={900 << 20}"
    (path / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    (path / "memory.peak").write_text(str(250 << 20))
    (path / "io.stat").write_text("8:0 rbytes=4096 wbytes=0 rios=17 wios=2 dbytes=0 dios=0\n")
    assert group.memory_report() == {"limit_bytes": 256 << 20, "peak_bytes": 250 << 20, "failcnt": 3, "oom_kills": 1}
    assert group.io_report() == {"8:0": {"reads": 17, "writes": 2}}
    for f in path.iterdir():  # a real cgroupfs removes its files with the directory
        f.unlink()
    group.remove()
    assert not path.exists()


@needs_cgroups
def test_storage_caps_can_start_when_the_load_ends(tmp_path):
    """resources.storage.during_load: false: the group exists (I/O is counted) but uncapped until
    limit_storage(), which the driver calls on the load_verified event."""
    device = device_of(tmp_path)
    if device is None:
        pytest.skip("the temporary directory is on no block device")
    plan = profiles.ResourcePlan(None, "disk", None, "cgroup", 1.0, storage_during_load=False)
    assert any("from the end of each load" in line for line in plan.banner())
    with profiles.SystemResources(plan, f"enginebench-test-load-{os.getpid()}", device) as resources:
        def caps():
            if resources.cgroup.v == 1:
                return resources.cgroup._file("blkio", "blkio.throttle.read_iops_device").read_text().strip()
            return resources.cgroup._file("io", "io.max").read_text().strip()
        assert "1200" not in caps()
        resources.limit_storage()
        assert "1200" in caps()
    assert not leftover_groups(f"test-load-{os.getpid()}")


def test_observed_iops_come_from_the_measured_phases():
    """LinkBench and sysbench measure their "run" (not a rate sweep's open-loop phases), TokuMX
    its client counts, iibench its load: the observed IOPS against the cap come from those."""
    from types import SimpleNamespace

    import polars as pl

    from enginebench.report import resources

    def iops(phases):
        rows = [{"system": "s", "phase": p, "read_iops": v} for p, v in phases]
        return resources._observed(SimpleNamespace(intervals=pl.DataFrame(rows)), "s", "read_iops")
    assert iops([("load", 900.0), ("run", 100.0), ("run", 300.0), ("sweep 0.5x", 10.0)]) == (200.0, 300.0)
    assert iops([("load", 900.0), ("clients=1", 50.0), ("clients=2", 70.0)]) == (60.0, 70.0)
    assert iops([("load", 900.0), ("load", 700.0)]) == (800.0, 900.0)


def test_banner_names_per_system_memory_limits_not_the_unused_default():
    # sysbench's memory matrix: each system has its own limit; the experiment-wide 256 MB never applied.
    from types import SimpleNamespace

    from enginebench.report.html import banner
    manifest = {"run_id": "r", "experiment": "sysbench_cgroups", "scale": "default", "status": "complete",
                "resources": {"memory_limit_mb": 256, "method_memory": "cgroup", "storage_profile": "disk"}}
    systems = [{"label": f"wt.{mb}", "status": "complete", "resources": {"memory_limit_mb": mb}} for mb in (240, 180, 210)]
    text = banner(SimpleNamespace(manifest=manifest, systems=systems))
    assert "Memory limit: per system, 180, 210, 240 MB (cgroup" in text and "256" not in text
    same = [{"label": "wt", "status": "complete", "resources": {"memory_limit_mb": 256}}]
    assert "Memory limit: 256 MB (cgroup)" in banner(SimpleNamespace(manifest=manifest, systems=same))


def test_own_memory_is_added_to_a_systems_limit_and_said_once_per_engine_with_each_figure():
    from enginebench.params import load_params
    params = load_params("sysbench_cgroups", "default")
    plans = {s["label"]: profiles.plan_resources(params, s) for s in params["systems"]}
    # The post's 16 GiB tier is 32 MB for the cache and data at this scale, whatever the engine.
    assert {s["label"]: s["memory_limit_mb"] for s in params["systems"] if s["label"].endswith("8-16")} == \
        {"wt60.8-16": 32, "wt900.8-16": 32, "rx.8-16": 32, "tokumx.8-16": 32, "tokumxse.8-16": 32}
    own = {s["label"]: s["memory_own_mb"] for s in params["systems"]}
    assert all(plans[label].memory_limit_mb == 32 + own[label] for label in ("wt60.8-16", "rx.8-16"))
    assert own["wt60.8-16"] > own["rx.8-16"] > 0
    assert not any("memory_own_mb" in line for plan in plans.values() for line in plan.banner())
    # One line per engine: WiredTiger's own memory was measured per memory size, the others' once.
    said = "to their memory for the engine's cache and the data: the process's own memory, measured at this scale (memory_own_mb)."
    assert profiles.own_memory_lines(plans) == [
        "The memory limits of wiredtiger systems add 170 MB (wt60.8-16, wt900.8-16), 175 MB (wt60.16-32, "
        f"wt900.16-32), 185 MB (wt60.32-48, wt900.32-48) {said}",
        f"The memory limits of rocksdb systems add {own['rx.8-16']} MB {said}",
        f"The memory limits of lmdb systems add {own['lmdb.32']} MB {said}",
        f"The memory limits of fractal systems add {own['tokumx.8-16']} MB {said}"]


def test_own_memory_without_any_limit_is_refused():
    params = {"params_file": "params/x.yaml", "resources": {"memory": {"limit_mb": None, "enforce": "best_effort"},
                                                            "storage": {"profile": "none"}}}
    system = {"label": "rx", "engine": "rocksdb", "memory_own_mb": 50}
    with pytest.raises(profiles.ResourceError, match="params/x.yaml: system rx: memory_own_mb is set but no memory limit"):
        profiles.plan_resources(params, system)
