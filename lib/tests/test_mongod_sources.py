"""The mongod target held against the servers' and drivers' own sources (issue 18): each fixture
below names the file and tag (or release) it was taken from."""
import socket
import stat
import sys
from pathlib import Path

import pytest

from enginebench.mongod import legacy
from enginebench.mongod.binary import BinaryError, identify_texts, parse_mongos_version, parse_version
from enginebench.mongod.serverstats import flatten_server_status, missing_counters
from enginebench.mongod.systems import SystemSkipped, prepare_system, with_write_concern
from enginebench.mongod.topology import plan_deployment

DATA = Path(__file__).parent / "data" / "mongod"


def info(name, version=None):
    return identify_texts(f"/opt/{name}", version or (DATA / f"{name}.version.txt").read_text(),
                          (DATA / f"{name}.help.txt").read_text())


# -- 1. TokuMX's --version -------------------------------------------------------------------------
def test_tokumx_version_as_tokumx_prints_it():
    # Tokutek/mongo tokumx-2.0.1: src/mongo/util/version.cpp mongodVersion() and printGitVersion()
    # (through log(): util/log.cpp, a ctime timestamp with milliseconds from time_support.cpp).
    text = (DATA / "tokumx-2.0.1.version.txt").read_text()
    assert "db version" not in text
    fields = parse_version(text)
    assert (fields["version"], fields["tokumx_version"]) == ("2.4.10", "2.0.1")
    # TOKUMX_GIT_VERSION: `git rev-parse HEAD` of the source at the tag (CMakeLists.txt git_version).
    assert fields["git_version"] == "d4547074dcc9129f2e13ed6b76fd78edb0a2828e"
    # MongoDB 2.4 prints its version first, then the same timestamped git line (same log() code).
    assert parse_version("db version v2.4.10\nThu Aug 22 12:20:26.441 git version: abc123\n")["git_version"] == "abc123"


# -- 2. no client for wire version 0 ---------------------------------------------------------------
def test_tokumx_is_skipped_before_anything_starts(tmp_path, monkeypatch):
    # Tokutek/mongo tokumx-2.0.1 src/mongo/db/repl.cpp CmdIsMaster: no maxWireVersion (wire 0);
    # mongo-python-driver 3.6.0 pymongo/common.py: MIN_SUPPORTED_WIRE_VERSION = 2.
    binary = tmp_path / "mongod"
    binary.write_text("#!/bin/sh\ncase \"$1\" in --version) cat %s;; *) cat %s;; esac\n"
                      % (DATA / "tokumx-2.0.1.version.txt", DATA / "tokumx-2.0.1.help.txt"))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    system = {"label": "tk", "engine": "lmdb", "options": {}, "mongod": {"engine": "tokumx", "binary": str(binary)}}
    with pytest.raises(SystemSkipped, match=r"announces no wire version.*pymongo 3\.6\+ needs wire version 2"):
        prepare_system(system, "params/x.yaml")


def test_the_legacy_range_is_asked_of_the_legacy_environment(monkeypatch):
    # The range a pymongo states in its pymongo/common.py (3.13.0: 2-13), asked of the interpreter.
    monkeypatch.setattr(legacy, "legacy_python", lambda: Path(sys.executable))
    monkeypatch.setattr(legacy, "modern_min_wire", lambda: 9)
    monkeypatch.setattr(legacy, "wire_range", lambda python: (2, 13))
    assert legacy.client_for(8, "the stand-in")["client"] == "legacy"
    monkeypatch.setattr(legacy, "modern_min_wire", lambda: 30)
    with pytest.raises(legacy.NoClient, match=r"speaks wire version 25; the legacy environment's pymongo .* 2-13"):
        legacy.client_for(25, "a future server")


# -- 7, 16. config servers -----------------------------------------------------------------------
def test_config_servers_run_wiredtiger_with_a_small_cache(tmp_path):
    # MongoDB 3.2 manual, "Change Sharded Cluster to WiredTiger": CSRS config servers already use
    # WiredTiger; SERVER-34671 (an mmapv1 CSRS member shuts down on 4.0).
    spec = {"topology": "sharded", "shards": 1, "members": 1, "config_members": 1}
    for name, gb in (("mongodb-3.2.0-rc0", "1"), ("mongodb-master-2023-06-27", "0.25")):
        plan = plan_deployment("x", spec, info(name), [], tmp_path / "d", tmp_path / "l", mongos="/m")
        cfg = plan.processes[0].argv
        assert "--storageEngine=wiredTiger" in cfg and f"--wiredTigerCacheSizeGB={gb}" in cfg


def test_mirrored_config_servers_number_one_or_three(tmp_path):
    # MongoDB 3.0 manual (sharded cluster config servers): one (testing) or exactly three.
    spec = {"topology": "sharded", "shards": 1, "members": 1, "config_members": 2}
    with pytest.raises(ValueError, match=r"config_members: 2 .* allowed values: 1, 3"):
        plan_deployment("x", spec, info("mongodb-3.0.7"), [], tmp_path / "d", tmp_path / "l", mongos="/m")


def test_mongos_is_identified():
    # mongod's src/mongo/util/version.cpp: mongosVersion() "mongos version v" beside "db version v".
    assert parse_mongos_version("mongos version v3.2.0\ngit version: abc\n") == "3.2.0"
    with pytest.raises(BinaryError, match="not a mongos"):
        parse_mongos_version("db version v3.2.0\n")


def test_a_port_taken_before_the_server_binds_is_retried(tmp_path):
    # mongod logs "listen(): bind() failed errno:98 Address already in use for socket: ..." and
    # exits with EXIT_NET_ERROR 48 (src/mongo/util/net/listen.cpp); the stand-in script does too.
    from enginebench.mongod import launch
    from enginebench.mongod.binary import identify
    from test_mongod_launch import STANDIN
    path = tmp_path / "bin" / "mongod"
    path.parent.mkdir()
    path.write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        plan = plan_deployment("t", {"topology": "replset", "members": 1}, identify(str(path)), [], tmp_path / "d",
                               tmp_path / "l", ports=[port])
        deployment = launch.Deployment(plan).start()
        try:
            assert plan.processes[0].port != port and plan.replsets["rs0"] == [plan.processes[0].address]
            assert any(e["event"] == "port_in_use" for e in deployment.events)
        finally:
            deployment.stop()
    assert not deployment.leftovers()


# -- 9. WiredTiger statistics per version ----------------------------------------------------------
def _status(sections: dict) -> dict:
    return {"process": "mongod", "opcounters": {"insert": 1}, "mem": {"resident": 1},
            "storageEngine": {"name": "wiredTiger"}, "wiredTiger": sections}


CACHE = {"bytes read into cache": 1, "bytes written from cache": 2, "bytes currently in the cache": 3,
         "maximum bytes configured": 4, "unmodified pages evicted": 5, "modified pages evicted": 6,
         "pages read into cache": 7, "pages written from cache": 8}


@pytest.mark.parametrize("tag, sections, missing", [
    # wiredtiger dist/stat_data.py at mongodb-3.2.0: TxnStat 'transaction checkpoints' (section transaction)
    ("mongodb-3.2.0", {"cache": {**CACHE, "pages evicted by application threads": 9},
                       "transaction": {"transaction checkpoints": 11, "transaction checkpoint total time (msecs)": 12,
                                       "transaction checkpoint most recent time (msecs)": 13,
                                       "transaction checkpoint max time (msecs)": 14}}, []),
    # at mongodb-7.1.0 (WT-11171): CheckpointStat 'number of checkpoints started', '... time (msecs)'
    ("mongodb-7.1.0", {"cache": {**CACHE, "pages evicted by application threads": 9},
                       "checkpoint": {"number of checkpoints started": 11, "total time (msecs)": 12,
                                      "most recent time (msecs)": 13, "max time (msecs)": 14}}, []),
    # at mongodb-8.0.0: 'number of checkpoints started by api'; no 'transaction checkpoints'
    ("mongodb-8.0.0", {"cache": {**CACHE, "pages evicted by application threads": 9},
                       "checkpoint": {"number of checkpoints started by api": 11, "total time (msecs)": 12,
                                      "most recent time (msecs)": 13, "max time (msecs)": 14}}, []),
    # at mongodb-8.1.0: no CacheStat 'pages evicted by application threads'
    ("mongodb-8.1.0", {"cache": dict(CACHE),
                       "checkpoint": {"number of checkpoints started by api": 11, "total time (msecs)": 12,
                                      "most recent time (msecs)": 13, "max time (msecs)": 14}},
     ["serverStatus.wiredTiger counter 'pages evicted by application threads'"]),
])
def test_every_spelling_is_read_and_what_is_missing_is_named(tag, sections, missing):
    flat = flatten_server_status(_status(sections))
    assert flat["wt.txn: transaction checkpoints"] == 11 and flat["wt.txn: transaction checkpoint max time (msecs)"] == 14
    assert missing_counters(_status(sections)) == missing


# -- 10. write concern ------------------------------------------------------------------------------
def test_write_concern_is_explicit_and_conflicts_are_errors():
    # MongoDB 5.0 release notes: the implicit default write concern became w:"majority".
    assert with_write_concern("mongodb://h:1/", 1) == "mongodb://h:1/?w=1"
    assert with_write_concern("mongodb://h:1,h:2/?replicaSet=rs0", "majority").endswith("replicaSet=rs0&w=majority")
    from enginebench.mongod.options import OptionError
    with pytest.raises(OptionError, match="URI sets w=2"):
        with_write_concern("mongodb://h:1/?w=2", 1)
    from enginebench.mongod.spec import MongodSpec
    assert MongodSpec().write_concern == 1
    assert MongodSpec(write_concern=0).write_concern == 0  # the 2013 shell loops' unacknowledged writes
    with pytest.raises(ValueError, match="write_concern: -1 is not allowed"):
        MongodSpec(write_concern=-1)


# -- 11, 13. cache per member, LSM from 8.1 -------------------------------------------------------
def _fake_binary(tmp_path, version_text: str, help_name: str) -> str:
    (tmp_path / "version.txt").write_text(version_text)
    binary = tmp_path / "mongod"
    binary.write_text("#!/bin/sh\ncase \"$1\" in --version) cat %s;; *) cat %s;; esac\n"
                      % (tmp_path / "version.txt", DATA / f"{help_name}.help.txt"))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    return str(binary)


def test_members_share_one_memory_limit(tmp_path):
    binary = _fake_binary(tmp_path, (DATA / "mongodb-master-2023-06-27.version.txt").read_text(),
                          "mongodb-master-2023-06-27")
    system = {"label": "wt", "engine": "wiredtiger", "options": {"cache_size_mb": 1024, "oplog": True},
              "mongod": {"binary": binary, "topology": "replset", "members": 3}}
    launch, notes = prepare_system(system, "params/tokumx_concurrency.yaml", memory_limit_mb=2048)
    assert launch["spec"]["cache_size_mb"] == 341 and "each gets 341 MB" in notes[0]
    launch, notes = prepare_system(system, "params/tokumx_concurrency.yaml", memory_limit_mb=None)
    assert launch["spec"]["cache_size_mb"] == 1024 and not notes


def test_lsm_tables_are_skipped_from_81(tmp_path):
    # wiredtiger at mongodb-8.1.0 has no src/lsm (WT-12751); mongodb-8.0.0 still has it.
    version = (DATA / "mongodb-master-2023-06-27.version.txt").read_text().replace("7.1.0-alpha", "8.1.0")
    binary = _fake_binary(tmp_path, version, "mongodb-master-2023-06-27")
    system = {"label": "wtlsm", "engine": "wiredtiger", "options": {"table_type": "lsm"}, "mongod": {"binary": binary}}
    with pytest.raises(SystemSkipped, match=r"LSM tables.*8\.1\.0.*WT-12751"):
        prepare_system(system, "params/x.yaml")


def test_a_named_wiredtiger_tree_runs_only_on_the_release_that_shipped_it(tmp_path):
    # A server runs the WiredTiger it was built with: a system naming mongodb-3.0.7's tree by hand
    # is skipped on a newer server (its version from the master fixture's buildInfo), and runs on
    # the 3.0.7 binary (mongodb-3.0.7.version.txt: "db version v3.0.7").
    from enginebench.mongod.systems import _release_present
    newer = _fake_binary(tmp_path, (DATA / "mongodb-master-2023-06-27.version.txt").read_text(),
                         "mongodb-master-2023-06-27")
    system = {"label": "wt307", "engine": "wiredtiger", "options": {"version": "mongodb-3.0.7"},
              "explicit_options": ["version"], "mongod": {"binary": newer}}
    with pytest.raises(SystemSkipped, match=r"wt307 skipped: it names WiredTiger mongodb-3\.0\.7 \(options\.version\), "
                                            r"the tree MongoDB 3\.0\.7 shipped; .* runs its own WiredTiger"):
        prepare_system(system, "params/x.yaml")
    _release_present(system, info("mongodb-3.0.7"), "wt307", "/opt/mongod")
    # The release `settings: 2015` derives from the post is not asked for by hand: it runs anywhere.
    derived = {**system, "explicit_options": []}
    _release_present(derived, identify_texts("/opt/mongod", (DATA / "mongodb-master-2023-06-27.version.txt").read_text(),
                                             (DATA / "mongodb-master-2023-06-27.help.txt").read_text()), "wt", "/opt/mongod")


# -- 12. sharding ---------------------------------------------------------------------------------
def test_shard_replica_sets_and_summed_counters():
    # The shard keys against the runner's unique indexes: test_mongod_sharding.py.
    from enginebench.mongod.sharding import shard_key, shard_uris, sum_shard_counters
    assert shard_key("purchases_index") == {"_id": "hashed"}
    # listShards: {shards: [{_id, host: "<set>/<host:port>,..."}]} (MongoDB manual, listShards)
    uris = shard_uris({"shards": [{"_id": "sh0", "host": "sh0/127.0.0.1:1,127.0.0.1:2", "state": 1}], "ok": 1})
    assert uris == {"sh0": "mongodb://127.0.0.1:1,127.0.0.1:2/?replicaSet=sh0"}
    summed = sum_shard_counters({"opcounters.insert": 5}, [{"opcounters.insert": 3, "wt.cache: bytes read into cache": 1},
                                                           {"opcounters.insert": 2, "wt.cache: bytes read into cache": 2}])
    assert summed == {"opcounters.insert": 5, "shards.opcounters.insert": 5, "wt.cache: bytes read into cache": 3}
