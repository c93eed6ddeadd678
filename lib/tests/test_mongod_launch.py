"""The launch/stop machinery against a stand-in server process (data/mongod/standin_server.py):
processes start from argv lists on 127.0.0.1, replica sets are initiated over the wire client,
and stop() always leaves nothing running (shutdown command, else SIGTERM, else SIGKILL). What
MongoDB itself does is covered by test_mongod_integration.py, with a real binary."""
import stat
import sys
from pathlib import Path

import psutil
import pytest

from enginebench.mongod import launch
from enginebench.mongod.binary import identify
from enginebench.mongod.topology import plan_deployment

STANDIN = Path(__file__).parent / "data" / "mongod" / "standin_server.py"


@pytest.fixture
def standin(tmp_path):
    # An executable named mongod that runs the stand-in with this interpreter.
    path = tmp_path / "bin" / "mongod"
    path.parent.mkdir()
    path.write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_replica_set_starts_and_shuts_down_cleanly(tmp_path, standin):
    info = identify(standin)
    assert info.version == "7.1.0-alpha"
    plan = plan_deployment("t", {"topology": "replset", "members": 2}, info, [], tmp_path / "data", tmp_path / "logs")
    deployment = launch.Deployment(plan).start()
    assert len(deployment.pids) == 2 and all(psutil.pid_exists(p) for p in deployment.pids)
    assert any(k.endswith(".rss_bytes") for k in deployment.process_counters())
    deployment.stop()
    assert not deployment.leftovers()
    assert [e["how"] for e in deployment.events if e["event"] == "stopped"] == ["shutdown", "shutdown"]
    deployment.write_record(tmp_path / "mongod.json")
    assert "--bind_ip=127.0.0.1" in (tmp_path / "mongod.json").read_text()


def test_a_server_that_ignores_shutdown_and_sigterm_is_killed(tmp_path, standin, monkeypatch):
    monkeypatch.setattr(launch, "SHUTDOWN_GRACE_S", 1)
    monkeypatch.setattr(launch, "TERM_GRACE_S", 1)
    monkeypatch.setenv("STANDIN_IGNORE_SHUTDOWN", "1")
    plan = plan_deployment("t", {}, identify(standin), [], tmp_path / "data", tmp_path / "logs")
    deployment = launch.Deployment(plan).start()
    deployment.stop()
    assert not deployment.leftovers()
    assert deployment.events[-1]["how"] == "SIGKILL"


def test_a_server_that_exits_at_start_is_reported_with_its_log(tmp_path, standin, monkeypatch):
    plan = plan_deployment("t", {}, identify(standin), [], tmp_path / "data", tmp_path / "logs")
    plan.processes[0].settings.pop(0)  # no --dbpath is fine; no --port is not:
    plan.processes[0].settings[:] = [s for s in plan.processes[0].settings if s.cli != "port"]
    with pytest.raises(launch.LaunchError, match="exited with code"):
        launch.Deployment(plan).start()
