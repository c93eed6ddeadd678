"""Cold start on a replica set (issue 47, "The mongod path"): the restart keeps every member on its
own port, because the replica-set configuration on disk names the member by address (a member
moved elsewhere finds itself in no configuration and never becomes primary); a port still taken is
waited for within a bound, then the restart stops naming the port and who holds it; a shutdown that
ended in SIGKILL is said in the cold start's record; the stderr files of the stopped processes are
closed.

The members are a stand-in (data/mongod_path/replset_member.py) whose replies and log lines come
from mongodb/mongo's source, each named there: the isMaster of a member without a valid
configuration (src/mongo/db/repl/is_master_response.cpp at 6dcdd23dd37ef12c87e71cf59ef01cd82432efe0)
and, for a port it cannot bind, mongod's structured line and exit code (src/mongo/db/mongod_main.cpp
at 0045dc81dfadc33d60130dbb575a7a0a74305924, `LOGV2_ERROR(20568, "Error setting up listener", ...)`,
`return EXIT_NET_ERROR;`, 48 in src/mongo/util/exit_code.h):

    {"t":{"$date":...},"s":"E","c":"CONTROL","id":20568,"ctx":"initandlisten","msg":"Error setting up
     listener","attr":{"error":{"code":9001,"codeName":"SocketException","errmsg":"Address already in use"}}}

It is started from an executable Python file (no shell between the launcher and its argv).
"""
import json
import os
import socket
import sys
import threading
from pathlib import Path

import psutil
import pytest

from enginebench.mongod import coldstart, launch
from enginebench.mongod.binary import BinaryInfo
from enginebench.mongod.topology import plan_deployment

MEMBER = Path(__file__).parent / "data" / "mongod_path" / "replset_member.py"


@pytest.fixture
def member_binary(tmp_path):
    """An executable `mongod` that runs the stand-in member with this interpreter, and what the
    launcher is told of it (the stand-in answers no --version: it is no release)."""
    path = tmp_path / "bin" / "mongod"
    path.parent.mkdir()
    path.write_text(f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = {str(MEMBER)!r}\n"
                    f"runpy.run_path({str(MEMBER)!r}, run_name='__main__')\n")
    path.chmod(0o755)
    return BinaryInfo(path=str(path), version="0.0.0-stand-in", git_version=None, flavour="MongoDB",
                      engines=("wiredTiger",))


@pytest.fixture
def make_replset(tmp_path, member_binary, monkeypatch):
    """Starts a one-member replica set of the stand-in, initiated; stopped whatever the test did
    (before monkeypatch undoes what the test set)."""
    made = []

    def make() -> launch.Deployment:
        plan = plan_deployment("t", {"topology": "replset", "members": 1}, member_binary, [], tmp_path / "data",
                               tmp_path / "logs")
        made.append(launch.Deployment(plan).start())
        return made[-1]
    yield make
    for deployment in made:
        deployment.stop()
        assert not deployment.leftovers()


@pytest.fixture
def replset(make_replset):
    return make_replset()


def _hold(port: int) -> socket.socket:
    """Takes 127.0.0.1:port as another server would: a listening socket (of this test's process),
    SO_REUSEADDR set as servers set it (the stopped member's closed connections leave TIME_WAIT)."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", port))
    holder.listen(1)
    return holder


def _evict_taking(monkeypatch, port: int, release_after_s: float | None) -> list:
    """Between the shutdown and the start again, the member's port is taken (released after
    release_after_s, or never); the eviction itself is not this test's subject."""
    held = []

    def evict(data_dir, method):
        holder = _hold(port)
        held.append(holder)
        if release_after_s is not None:
            threading.Timer(release_after_s, holder.close).start()
        return {"method": method, "files": 0, "bytes": 0, "seconds": 0.0}
    monkeypatch.setattr(coldstart, "evict", evict)
    return held


def test_a_taken_port_is_waited_for_and_the_member_keeps_it(replset, monkeypatch):
    member = replset.plan.processes[0]
    port, address = member.port, member.address
    stderr_before = list(replset._stderr.values())
    _evict_taking(monkeypatch, port, release_after_s=1.0)

    done = replset.restart(Path(member.dbpath).parent, "fadvise")

    assert member.port == port and replset.plan.replsets["rs0"] == [address]
    assert launch.wait_for_primary("rs0", [address], timeout_s=10) == address   # its configuration found it
    waited = done["ports_waited"][0]
    assert waited["process"] == "rs0-0" and waited["port"] == port and waited["waited_s"] >= 0.5
    assert f"pid {os.getpid()}" in waited["held_by"]
    event = next(e for e in replset.events if e["event"] == "port_in_use")
    assert event["kept"] is True and event["freed"] is True and "new" not in event
    # the stderr file of the process the restart replaced is closed; the new one's is open
    assert all(handle.closed for handle in stderr_before)
    assert len(replset._stderr) == 1 and not next(iter(replset._stderr.values())).closed


def test_a_port_that_stays_taken_stops_the_restart_naming_it(replset, monkeypatch):
    member = replset.plan.processes[0]
    monkeypatch.setattr(launch, "PORT_FREE_TIMEOUT_S", 1)
    held = _evict_taking(monkeypatch, member.port, release_after_s=None)
    try:
        with pytest.raises(launch.LaunchError) as stopped:
            replset.restart(Path(member.dbpath).parent, "fadvise")
    finally:
        for holder in held:
            holder.close()
    message = str(stopped.value)
    assert message.startswith(f"rs0-0's port {member.port} is held by pid {os.getpid()} (")
    assert message.endswith(f"1 s after the shutdown; the cold start's restart keeps every process on its own port "
                            f"(the replica set rs0's configuration on disk names {member.address}), so it stopped here")
    assert replset.stopped and not replset.leftovers()
    assert next(e for e in replset.events if e["event"] == "port_in_use")["freed"] is False


def test_a_member_that_lost_the_race_for_its_port_is_started_again_on_it(replset, monkeypatch):
    """The port is free when looked at and taken when the member binds: the member logs mongod's
    line and exits 48; the restart waits for the port and starts it there again, not elsewhere."""
    member = replset.plan.processes[0]
    port = member.port
    held = _evict_taking(monkeypatch, port, release_after_s=1.5)
    looks = []
    real_port_free = launch.port_free

    def port_free(p):
        looks.append(p)
        return True if len(looks) == 1 else real_port_free(p)   # the first look misses the holder
    monkeypatch.setattr(launch, "port_free", port_free)

    replset.restart(Path(member.dbpath).parent, "fadvise")

    assert held and member.port == port
    lines = [json.loads(line) for line in member.logpath.read_text().splitlines() if line.startswith("{")]
    assert [(line["id"], line["msg"], line["attr"]["error"]["errmsg"]) for line in lines] == [
        (20568, "Error setting up listener", "Address already in use")]
    lost = [e for e in replset.events if e["event"] == "port_in_use"]
    assert [(e["port"], e["kept"], e["exited"], e["freed"]) for e in lost] == [(port, True, 48, True)]
    assert launch.wait_for_primary("rs0", [member.address], timeout_s=10) == member.address


def test_the_old_behaviour_would_have_lost_the_member(replset):
    """What keeping the port prevents: the same member on another port answers as one without a
    valid configuration (is_master_response.cpp), so no primary would ever be found."""
    from enginebench.mongod import wire
    member = replset.plan.processes[0]
    replset.stop()
    other = launch.free_ports(1)[0]
    argv = [a.replace(f"--port={member.port}", f"--port={other}") for a in member.argv]
    proc = psutil.Popen(argv, stdin=launch.subprocess.DEVNULL, stdout=launch.subprocess.DEVNULL)
    try:
        reply = None
        for _ in range(100):
            try:
                reply = wire.command("127.0.0.1", other, {"isMaster": 1}, timeout_s=2)
                break
            except OSError:
                threading.Event().wait(0.1)
        assert reply is not None
        assert reply["ismaster"] is False and reply["isreplicaset"] is True
        assert reply["info"] == "Does not have a valid replica set config"
    finally:
        proc.kill()
        proc.wait()


def test_a_shutdown_ended_by_sigkill_is_said_in_the_cold_start_record(make_replset, monkeypatch):
    monkeypatch.setattr(launch, "SHUTDOWN_GRACE_S", 1)
    monkeypatch.setattr(launch, "TERM_GRACE_S", 1)
    monkeypatch.setenv("STANDIN_IGNORE_SHUTDOWN", "1")   # only SIGKILL ends this member
    replset = make_replset()
    member = replset.plan.processes[0]

    done = replset.restart(Path(member.dbpath).parent, "fadvise")

    assert done["stopped"] == {"rs0-0": "SIGKILL"} and done["unclean_shutdown"] == ["rs0-0"]
    assert "not closed cleanly" in done["note"] and "the measured phase after this cold start pays" in done["note"]
    unclean = [e for e in replset.events if e["event"] == "unclean_shutdown"]
    assert [(e["process"], e["how"]) for e in unclean] == [("rs0-0", "SIGKILL")]
    restarted = [e for e in replset.events if e["event"] == "restarted_for_cold_start"]
    assert restarted[-1]["unclean_shutdown"] == ["rs0-0"]


def test_a_clean_shutdown_says_nothing_of_recovery(replset, monkeypatch):
    member = replset.plan.processes[0]
    monkeypatch.setattr(coldstart, "evict", lambda data_dir, method: {"method": method, "files": 0, "bytes": 0,
                                                                      "seconds": 0.0})
    done = replset.restart(Path(member.dbpath).parent, "fadvise")
    assert done["stopped"] == {"rs0-0": "shutdown"}
    assert "unclean_shutdown" not in done and "note" not in done and "ports_waited" not in done
