"""The mongod target against a real server: every experiment at smoke scale on a standalone, a
replica set and a sharded cluster; a secondary made too stale on a tiny oplog; SIGINT mid-run.

Nothing here is mocked. Without a binary every test skips with the reason; with one
(MONGOD=/path/to/mongod, and MONGOS for the sharded runs unless mongos sits beside mongod) they
run unmodified. Servers older than 4.4 also need `make setup-legacy`.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import NO_MONGOD, mongod_binary

pytestmark = pytest.mark.skipif(mongod_binary() is None, reason=NO_MONGOD)

EXPERIMENTS = ["linkbench_cached", "iibench_500m", "sysbench_cgroups"]
TOPOLOGIES = ["standalone", "replset", "sharded"]


def _servers_under(path: Path) -> list[psutil.Process]:
    """mongod/mongos processes whose command line points into `path` (this test's files)."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            cmd = " ".join(proc.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if ("mongod" in (proc.info["name"] or "") or "mongos" in (proc.info["name"] or "")) and str(path) in cmd:
            found.append(proc)
    return found


def _env(tmp_path: Path, topology: str | None = None) -> dict:
    env = {**os.environ, "ENGINEBENCH_RESULTS": str(tmp_path / "results"), "ENGINEBENCH_DATA": str(tmp_path / "data")}
    if topology:
        env["ENGINEBENCH_MONGOD_TOPOLOGY"] = topology
    return env


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_experiment_on_mongod(tmp_path, exp, topology):
    if topology == "sharded":
        from enginebench.mongod.binary import BinaryError, find_mongos
        try:
            find_mongos(mongod_binary())
        except BinaryError as why:
            pytest.skip(str(why))
    done = subprocess.run([sys.executable, "-m", "enginebench", "run", exp, "--scale", "smoke", "--target", "mongod"],
                          env=_env(tmp_path, topology), capture_output=True, text=True, timeout=1800)
    manifests = list((tmp_path / "results").glob(f"{exp}/*/manifest.json"))
    if not manifests and "no system can run" in done.stderr:
        # Every system's engine cache is above what its smoke limit gives cache and data (mongod's
        # floor: 0.25 GB, 1 GB on 3.x; mongod/memory.py): refused before anything started.
        assert "its params give the engine's cache and the data" in done.stderr, done.stderr[-3000:]
        assert not _servers_under(tmp_path)
        return
    assert manifests, done.stderr
    manifest = json.loads(manifests[0].read_text())
    assert manifest["target"]["kind"] == "mongod"
    assert manifest["status"] == "complete", (manifest.get("error"), manifest["systems"], done.stderr[-3000:])
    ran = manifest["systems"]
    assert ran, "at least one system ran on mongod"
    for label, result in ran.items():
        if result.get("status") != "complete" and "LSM" in (result.get("error") or ""):
            continue   # a server that refuses (or does not make) LSM tables stops that system, saying so
        sys_dir = manifests[0].parent / label
        record = json.loads((sys_dir / "mongod.json").read_text())
        assert record["topology"] == topology
        assert all(e["how"] == "shutdown" for e in record["events"] if e["event"] == "stopped"), record["events"]
        events = [json.loads(l) for l in (sys_dir / "events.jsonl").read_text().splitlines()]
        assert any(e["event"] == "db_stats" for e in events), "dbStats/collStats after each phase"
        if topology == "sharded" and exp == "linkbench_cached":  # pre-split: link on every shard after the load
            loaded = next(e for e in events if e["event"] == "db_stats" and e.get("phase") == "load")
            assert loaded["collections"]["link"]["spread_ok"], loaded["collections"]["link"].get("shards")
        intervals = [e for e in events if e["event"] == "interval"]
        assert intervals and any(k.startswith("opcounters.") for k in intervals[-1]["engine"]), "serverStatus"
        samples = [json.loads(l) for l in (sys_dir / "samples.jsonl").read_text().splitlines()]
        assert samples and samples[-1]["cpu_user_s"] > 0, "the server processes were sampled"
        assert any(k.endswith(".rss_bytes") for k in samples[-1]), "per-process counters"
        for log in record["processes"]:
            assert Path(log["log"]).exists(), "server logs are kept in the results folder"
    assert not _servers_under(tmp_path), "no mongod/mongos is left running"
    assert not any(p.is_file() for p in (tmp_path / "data").rglob("*")), "no dbpath is left"


def test_linkbench_count_drift_reported_on_a_replica_set(tmp_path):
    done = subprocess.run([sys.executable, "-m", "enginebench", "run", "linkbench_cached", "--scale", "smoke",
                           "--target", "mongod"], env=_env(tmp_path, "replset"), capture_output=True, text=True,
                          timeout=1800)
    run_dir = next((tmp_path / "results").glob("linkbench_cached/*"))
    for label in json.loads((run_dir / "manifest.json").read_text())["systems"]:
        events = [json.loads(l) for l in (run_dir / label / "events.jsonl").read_text().splitlines()]
        check = next((e for e in events if e["event"] == "consistency"), None)
        assert check is not None, done.stderr[-2000:]
        # The smoke scale runs LinkbenchX's pattern (no transactions): its drift is a finding.
        assert check["counts"] == "linkbenchx" and check["mismatches"] > 0, check


def test_stale_secondary_is_detected_not_crashed(tmp_path):
    """A 3-member replica set on a tiny oplog, without chaining; one secondary is paused while the
    primary writes several oplogs' worth with w:1, then resumed: it must be reported too stale, as
    a finding. Three members and w:1 because from 5.0 the default write concern is majority (with
    two members and one paused, every insert would wait for ever) and on 4.0-4.4 the oplog grows
    past its size to keep the majority commit point; the other secondary keeps the majority.
    Every wait here is bounded."""
    import pymongo
    from pymongo.write_concern import WriteConcern

    from enginebench.mongod.binary import identify
    from enginebench.mongod.launch import Deployment
    from enginebench.mongod.legacy import modern_min_wire, wire_version
    from enginebench.mongod.options import engine_settings
    from enginebench.mongod.replication import StaleWatch
    from enginebench.mongod.topology import plan_deployment

    info = identify(mongod_binary())
    if wire_version(info) < modern_min_wire():
        pytest.skip(f"{info.version}: this test drives the primary with this environment's pymongo")
    spec = {"engine": info.default_engine, "topology": "replset", "members": 3, "oplog_size_mb": 1}
    plan = plan_deployment("stale", spec, info, engine_settings("stale", spec, info), tmp_path / "data",
                           tmp_path / "logs")
    deployment = Deployment(plan).start()
    client = pymongo.MongoClient(plan.uri, serverSelectionTimeoutMS=30_000, socketTimeoutMS=60_000)
    try:
        admin = client.admin
        config = admin.command("replSetGetConfig")["config"]
        config.setdefault("settings", {})["chainingAllowed"] = False
        config["version"] += 1
        admin.command("replSetReconfig", config)
        primary = client.primary
        victim = next(p for p in plan.processes if p.address != f"{primary[0]}:{primary[1]}")
        secondary = psutil.Process(deployment.procs[victim.name].pid)
        secondary.suspend()
        try:
            payload = "x" * 100_000
            stale = client.eb.get_collection("stale", write_concern=WriteConcern(w=1, wtimeout=30_000))
            deadline = time.time() + 300
            for i in range(400):  # ~40 MB through a 1 MB (or minimum-size) oplog
                assert time.time() < deadline, f"only {i} inserts within 300 s"
                stale.insert_one({"_id": i, "p": payload})
        finally:
            secondary.resume()
        found = []
        watch = StaleWatch(client, 0.5, found.append)
        deadline = time.time() + 120
        while not found and time.time() < deadline:
            watch.check()
            time.sleep(0.5)
        assert found and found[0]["event"] == "stale_secondary", watch.lag
        assert found[0]["members"][0]["member"].endswith(str(victim.port))
    finally:
        client.close()
        deployment.stop()
    assert not deployment.leftovers()


def test_no_leftover_after_sigint(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "enginebench", "run", "linkbench_cached", "--scale", "smoke",
                             "--target", "mongod"], env=_env(tmp_path, "replset"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    parent = psutil.Process(proc.pid)
    deadline = time.time() + 300
    while time.time() < deadline:
        events = list((tmp_path / "results").glob("linkbench_cached/*/*/events.jsonl"))
        if events and '"event": "interval"' in events[0].read_text():
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    servers = _servers_under(tmp_path)
    assert servers, "mongod should be running"
    children = parent.children(recursive=True)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    gone, alive = psutil.wait_procs(children + servers, timeout=30)
    assert not alive, f"left behind: {alive}"
    assert not _servers_under(tmp_path)
    assert not any(p.is_file() for p in (tmp_path / "data").rglob("*")), "dbpaths are removed"
    manifest = json.loads(next((tmp_path / "results").glob("linkbench_cached/*/manifest.json")).read_text())
    assert manifest["status"] == "aborted"
