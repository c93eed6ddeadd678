"""A mongod deployment under its system's memory limit (mongod/memory.py), checked on the plans of
three experiments at their default scale against a 3.2 binary and a modern one (the 7.1 development
build of data/mongod/mongodb-master-2023-06-27), before anything starts.

The floors of the engines' caches come from the servers' option definitions: wiredTigerCacheSizeGB
is moe::Int with validRange(1, 10000) at mongodb r3.2.0-rc0 (wiredtiger_global_options.cpp), so
3.0/3.2 take whole GB and at least 1 GB; from 3.4 it is a Double of at least 0.25 (options._gb)."""
import stat
from pathlib import Path

import pytest

from enginebench.mongod import systems
from enginebench.mongod.memory import MONGOD_OWN_MB
from enginebench.mongod.options import OptionError
from enginebench.params.loader import load_params

DATA = Path(__file__).parent / "data" / "mongod"


@pytest.fixture
def mongod(tmp_path, monkeypatch):
    """MONGOD set to a script printing a fixture's texts; no client environment is asked for."""
    def use(name: str) -> str:
        binary = tmp_path / name / "mongod"
        binary.parent.mkdir()
        binary.write_text("#!/bin/sh\ncase \"$1\" in --version) cat %s;; *) cat %s;; esac\n"
                          % (DATA / f"{name}.version.txt", DATA / f"{name}.help.txt"))
        binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("MONGOD", str(binary))
        return str(binary)
    monkeypatch.delenv("ENGINEBENCH_MONGOD_TOPOLOGY", raising=False)
    monkeypatch.setattr(systems, "runner_python", lambda info, label: {"python": "python", "client": "current",
                                                                       "executor": "driver", "wire_version": 0})
    return use


def _prepare(exp: str):
    params = load_params(exp, "default")
    runner_own = {s["label"]: s.get("memory_own_mb") or 0 for s in params["systems"]}
    try:
        ready, banner = systems.prepare_systems(params)
    except OptionError as exc:
        return params, None, str(exc), runner_own
    return params, ready, " ".join(banner), runner_own


@pytest.mark.parametrize("name, floor, mmap", [("mongodb-master-2023-06-27", 256, None),
                                               ("mongodb-3.2.0-rc0", 1024, ["lmdb.32"])])
def test_sysbench_cgroups_caches_cannot_fit_their_limits(mongod, name, floor, mmap):
    """16-64 MB caches in 32-96 MB for cache and data: WiredTiger's floor does not fit any of
    them, so no WiredTiger or RocksDB system runs, and the error says why for each before
    anything starts. The mmap system has no cache of its own: on 3.2 it runs as MMAPv1, which
    the modern build no longer has."""
    mongod(name)
    _, ready, text, _ = _prepare("sysbench_cgroups")
    assert (None if ready is None else [s["label"] for s in ready]) == mmap
    assert mmap or "no system can run" in text
    assert f"system wt60.8-16 skipped: its 1 data-bearing mongod needs 1 x {floor} MB of wiredTiger cache, more " \
           "than the 32 MB its params give the engine's cache and the data" in text
    assert "takes no smaller cache than" in text and "(memory_limit_mb: 32)" in text
    assert "system rx.8-16 skipped: its engine maps to rocksdb" in text


def test_linkbench_uncached_disk_on_a_modern_build_runs_in_a_limit_that_holds_mongod(mongod):
    mongod("mongodb-master-2023-06-27")
    params, ready, text, runner_own = _prepare("linkbench_uncached_disk")
    assert [s["label"] for s in ready] == ["wt.op1"]
    launch = ready[0]["mongod_launch"]
    # 64 MB raised to the modern build's 256 MB floor (a note), inside the 300 MB for cache and data
    assert launch["spec"]["cache_size_mb"] == 64 and launch["engine_config"]["storage"]["wiredTiger"][
        "engineConfig"]["cacheSizeGB"] == 0.25
    memory = launch["memory"]
    assert (memory["budget_mb"], memory["members"], memory["cache_mb"], memory["processes"]) == (300, 1, 256, 1)
    assert memory["limit_mb"] == 300 + MONGOD_OWN_MB
    # the resource plan adds the system's memory_own_mb: now mongod's own, not the runner's 170 MB
    wt = next(s for s in params["systems"] if s["label"] == "wt.op1")
    assert runner_own["wt.op1"] == 170 and wt["memory_own_mb"] == MONGOD_OWN_MB
    assert f"runs in a {300 + MONGOD_OWN_MB} MB memory limit: 300 MB for the engine's cache (1 x 256 MB" in text
    assert "wiredtiger_init.cpp" in text and "the runner's own 170 MB (memory_own_mb) is not added" in text


def test_linkbench_uncached_disk_on_32_cannot_hold_a_1_gb_cache(mongod):
    mongod("mongodb-3.2.0-rc0")
    _, ready, text, _ = _prepare("linkbench_uncached_disk")
    assert ready is None
    assert "system wt.op1 skipped: its 1 data-bearing mongod needs 1 x 1024 MB of wiredTiger cache, more than the " \
           "300 MB" in text and "(resources.memory.limit_mb: 300)" in text


@pytest.mark.parametrize("name, runs", [("mongodb-master-2023-06-27", ["wt"]), ("mongodb-3.2.0-rc0", None)])
def test_iibench_500m(mongod, name, runs):
    mongod(name)
    params, ready, text, _ = _prepare("iibench_500m")
    if runs is None:
        assert ready is None and "1 x 1024 MB of wiredTiger cache, more than the 512 MB" in text
        return
    assert [s["label"] for s in ready] == runs
    # wt304 names MongoDB 3.0.4's WiredTiger: a modern mongod does not ship it, so it is skipped with the
    # reason rather than measured under that name
    assert "system wt304 skipped" in text and "3.0.4" in text
    assert all(s["mongod_launch"]["memory"]["limit_mb"] == 512 + MONGOD_OWN_MB for s in ready)


def test_shared_caches_are_divided_on_every_version_and_checked(mongod, tmp_path):
    """tokumx_concurrency's paper scale: 3 members share 1024 MB in 2048 MB. 7.1 gives each 341 MB;
    3.2 can only give whole GB (1 GB each), 3 GB in 2 GB: skipped, not rounded back silently."""
    system = {"label": "wt", "engine": "wiredtiger", "options": {"cache_size_mb": 1024, "oplog": True},
              "mongod": {"topology": "replset", "members": 3}}
    mongod("mongodb-master-2023-06-27")
    launch, notes = systems.prepare_system(system, "params/tokumx_concurrency.yaml", 2048)
    assert launch["memory"]["cache_mb"] == 341 and launch["memory"]["limit_mb"] == 2048 + 3 * MONGOD_OWN_MB
    mongod("mongodb-3.2.0-rc0")
    with pytest.raises(systems.SystemSkipped, match=r"its 3 data-bearing mongods need 3 x 1024 MB of wiredTiger cache, "
                                                    r"more than the 2048 MB"):
        systems.prepare_system(system, "params/tokumx_concurrency.yaml", 2048)


def test_a_sharded_deployment_counts_every_process_and_the_config_caches(mongod):
    mongod("mongodb-master-2023-06-27")
    system = {"label": "wt", "engine": "wiredtiger", "options": {"cache_size_mb": 1024},
              "mongod": {"topology": "sharded", "shards": 2, "members": 1, "mongos": "/bin/true"}}
    systems_identify = systems.identify_mongos
    try:
        systems.identify_mongos = lambda *a, **k: "7.1.0-alpha"
        launch, _ = systems.prepare_system(system, "params/x.yaml", 4096)
    finally:
        systems.identify_mongos = systems_identify
    memory = launch["memory"]
    # 2 shards x 512 MB; 1 config server (256 MB cache, topology.config_server_engine) and mongos
    assert (memory["members"], memory["cache_mb"], memory["processes"], memory["config_cache_mb"]) == (2, 512, 4, 256)
    assert memory["own_mb"] == 4 * MONGOD_OWN_MB + 256


def test_no_cache_size_under_a_limit_is_skipped(mongod):
    mongod("mongodb-master-2023-06-27")
    system = {"label": "wt", "engine": "wiredtiger", "options": {}}
    with pytest.raises(systems.SystemSkipped, match="sets no wiredTiger cache size"):
        systems.prepare_system(system, "params/x.yaml", 512)
