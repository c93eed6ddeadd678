"""mongod target units that need no binary: identification from recorded texts, option errors,
topology port choice and argv, replication-status parsing, target resolution and the mapping of
embedded systems to mongod systems."""
import socket
from pathlib import Path

import pytest
from bson.timestamp import Timestamp

from enginebench.mongod import legacy, replication
from enginebench.mongod.binary import BinaryError, find_mongod, identify_texts, parse_help, parse_version
from enginebench.mongod.options import OptionError, engine_settings
from enginebench.mongod.systems import implied_spec, resolve_spec
from enginebench.mongod.topology import free_ports, plan_deployment, process_count

DATA = Path(__file__).parent / "data" / "mongod"


def info(name, version=None):
    return identify_texts(f"/opt/{name}", version or (DATA / f"{name}.version.txt").read_text(),
                          (DATA / f"{name}.help.txt").read_text())


# -- identification --------------------------------------------------------------------------------
@pytest.mark.parametrize("name, version, flavour, engines, default", [
    ("mongodb-3.0.7", "3.0.7", "MongoDB", {"wiredTiger", "mmapv1"}, "mmapv1"),
    ("mongodb-3.2.0-rc0", "3.2.0-rc0", "MongoDB", {"wiredTiger", "mmapv1"}, "wiredTiger"),
    ("mongorocks-3.0", "3.0.7", "MongoDB", {"wiredTiger", "mmapv1", "rocksdb"}, "mmapv1"),
    # Percona's 3.0 packages build with --rocksdb and --PerconaFT (percona-server-mongodb-packaging
    # debian/rules); nothing in its --version says Percona: its PerconaFT options do.
    ("percona-3.0", "3.0.8", "Percona Server for MongoDB", {"wiredTiger", "mmapv1", "rocksdb", "tokuft"}, "mmapv1"),
    ("tokumxse-1.0.0-rc.6", "3.0.4-pre-", "Percona TokuMXse", {"wiredTiger", "mmapv1", "tokuft"}, "mmapv1"),
    ("mongodb-master-2023-06-27", "7.1.0-alpha", "MongoDB", {"wiredTiger"}, "wiredTiger"),
    ("tokumx-2.0.1", "2.4.10", "TokuMX", {"tokumx"}, "tokumx"),
])
def test_identify_each_flavour(name, version, flavour, engines, default):
    found = info(name)
    assert (found.version, found.flavour, set(found.engines), found.default_engine) == (version, flavour, engines,
                                                                                         default)
    assert found.git_version


def test_version_texts_in_detail():
    # the commit of the tree built (SOURCES.md: a dated copy of mongodb/mongo master, no release tag)
    modern = parse_version((DATA / "mongodb-master-2023-06-27.version.txt").read_text())
    assert modern["git_version"].startswith("d8883e2e") and modern["version"] == "7.1.0-alpha"
    assert parse_version((DATA / "tokumx-2.0.1.version.txt").read_text())["tokumx_version"] == "2.0.1"
    assert parse_version("db version v4.4.29-28\nBuild Info: {\"version\": \"4.4.29-28\", \"psmdbVersion\": "
                         "\"4.4.29-28\", \"gitVersion\": \"abc\"}\n")["percona"]
    with pytest.raises(BinaryError, match="no `db version` line"):
        parse_version("bash: mongod: command not found")


def test_help_lists_options():
    # Percona Server 3.0 GA spells its engine's options PerconaFT* (psmdb-3.0.8-1.2
    # tokuft_engine_options.cpp); the TokuMXse release candidates tokuft*.
    parsed = parse_help((DATA / "percona-3.0.help.txt").read_text())
    assert {"PerconaFTEngineCacheSize", "wiredTigerCacheSizeGB", "rocksdbCacheSizeGB", "replSet", "config"} <= \
        parsed["options"]
    assert not any(o.startswith("tokuft") for o in parsed["options"])
    assert "tokuftEngineCacheSize" in parse_help((DATA / "tokumxse-1.0.0-rc.6.help.txt").read_text())["options"]
    # Options marked .hidden() are not in --help: 3.0.7's WiredTiger config strings
    # (wiredtiger_global_options.cpp) and TokuMX 2.0.1 has no --directoryperdb at all.
    assert "wiredTigerCollectionConfigString" not in parse_help((DATA / "mongodb-3.0.7.help.txt").read_text())["options"]
    assert "directoryperdb" not in parse_help((DATA / "tokumx-2.0.1.help.txt").read_text())["options"]


def test_modern_help_is_the_idl_s():
    # data/mongod/mongodb-master-2023-06-27 (SOURCES.md): mongod_options_storage.idl's section is
    # 'Storage options'; no --journal/--nojournal (gone in 6.1) and no mmapv1 options; the WiredTiger
    # IDL has zstdDefaultCompressionLevel (default 6) but, in this tree, no cacheSizePct and no
    # live-restore options; syncdelay and journalCommitInterval carry no IDL default (their
    # defaults sit in StorageGlobalParams, as the storage IDL's comment says).
    text = (DATA / "mongodb-master-2023-06-27.help.txt").read_text()
    options = parse_help(text)["options"]
    assert {"wiredTigerCacheSizeGB", "zstdDefaultCompressionLevel", "wiredTigerCollectionBlockCompressor",
            "storageEngine", "syncdelay", "journalCommitInterval", "setParameter", "replSet"} <= options
    assert not options & {"journal", "nojournal", "smallfiles", "nssize", "noprealloc", "wiredTigerCacheSizePct",
                          "wiredTigerLiveRestoreSource", "wiredTigerEngineConfigString"}
    storage = text.split("\nStorage options:\n")[1].split("\n\n")[0]
    assert "  --syncdelay arg " in storage and "  --journalCommitInterval arg " in storage
    assert "--dbpath" in storage and "--dbpath" not in text.split("\nGeneral options:\n")[1].split("\n\n")[0]
    assert "  --zstdDefaultCompressionLevel arg (=6)\n" in text


def test_configured_binary_must_exist(tmp_path):
    with pytest.raises(BinaryError, match=r"mongod\.binary: '/nope/mongod' is not an executable file"):
        find_mongod("/nope/mongod", where="params/x.yaml: system a: ")


# -- option errors: system, key, allowed values, before launch -------------------------------------
def test_engine_the_binary_lacks():
    with pytest.raises(OptionError, match=r"system wt\.op1: mongod\.engine: 'rocksdb' is not supported by MongoDB "
                                          r"7\.1\.0-alpha .*allowed values: wiredTiger"):
        engine_settings("wt.op1", {"engine": "rocksdb"}, info("mongodb-master-2023-06-27"))


def test_whole_gb_cache_on_30_is_an_error_when_explicit_and_adjusted_when_derived():
    old = info("mongodb-3.0.7")
    spec = {"engine": "wiredTiger", "cache_size_mb": 640, "_explicit": ["cache_size_mb"]}
    with pytest.raises(OptionError, match=r"mongod\.cache_size_mb: 640 MB is not a whole number of GB.*allowed "
                                          r"values: multiples of 1024"):
        engine_settings("wt", spec, old)
    notes = []
    argv = engine_settings("wt", {**spec, "_explicit": []}, old, notes)
    assert any(s.cli == "wiredTigerCacheSizeGB" and s.value == 1 for s in argv) and "adjusted" in notes[0]


def test_zstd_before_42():
    with pytest.raises(OptionError, match=r"block_compressor: 'zstd' is not allowed by MongoDB 3\.2\.0-rc0.*"
                                          r"allowed values: none, snappy, zlib"):
        engine_settings("wt", {"engine": "wiredTiger", "block_compressor": "zstd"}, info("mongodb-3.2.0-rc0"))


def test_key_of_another_engine():
    with pytest.raises(OptionError, match=r"mongod\.fanout: does not apply to engine wiredTiger; allowed keys"):
        engine_settings("wt", {"engine": "wiredTiger", "fanout": 16}, info("mongodb-master-2023-06-27"))


def test_nojournal_on_a_replica_set_member_from_40_and_anywhere_from_61():
    with pytest.raises(OptionError, match=r"journal: false is not supported by MongoDB 7\.1\.0-alpha"):
        engine_settings("wt", {"engine": "wiredTiger", "journal": False}, info("mongodb-master-2023-06-27"))
    four = info("mongodb-3.2.0-rc0", "db version v4.0.28\ngit version: x\n")
    with pytest.raises(OptionError, match="not allowed on a replica-set member"):
        engine_settings("wt", {"engine": "wiredTiger", "journal": False, "topology": "replset"}, four)
    assert [s.cli for s in engine_settings("wt", {"engine": "wiredTiger", "journal": False}, four)][-1] == "nojournal"


def test_unknown_extra_option():
    with pytest.raises(OptionError, match=r"extra_options\.noSuchKnob: .* has no option --noSuchKnob"):
        engine_settings("wt", {"engine": "wiredTiger", "extra_options": {"noSuchKnob": 1}},
                        info("mongodb-master-2023-06-27"))


def test_params_block_validated_strictly():
    from enginebench.mongod.spec import MongodSpec
    from pydantic import ValidationError
    with pytest.raises(ValidationError, match="topology"):
        MongodSpec(topology="cluster")
    with pytest.raises(ValidationError, match="extra"):
        MongodSpec(cache_size=1)


# -- topology ------------------------------------------------------------------------------------
def test_free_ports_are_distinct_and_bindable():
    ports = free_ports(5)
    assert len(set(ports)) == 5
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_sharded_plan_on_32_uses_a_config_replica_set(tmp_path):
    modern = info("mongodb-3.2.0-rc0")
    spec = {"topology": "sharded", "shards": 2, "members": 2, "config_members": 1, "oplog_size_mb": 64}
    assert process_count(spec) == 6
    plan = plan_deployment("wt", spec, modern, [], tmp_path / "d", tmp_path / "r", mongos="/opt/mongos")
    assert [p.name for p in plan.processes] == ["cfg-0", "sh0-0", "sh0-1", "sh1-0", "sh1-1", "mongos"]
    assert len({p.port for p in plan.processes}) == 6
    cfg = plan.processes[0].argv
    assert "--configsvr" in cfg and "--replSet=cfg" in cfg
    assert plan.processes[-1].argv[0] == "/opt/mongos"
    assert any(a.startswith("--configdb=cfg/127.0.0.1:") for a in plan.processes[-1].argv)
    assert all(p.dbpath is None or str(p.dbpath).startswith(str(tmp_path / "d")) for p in plan.processes)
    assert all(str(p.logpath).startswith(str(tmp_path / "r")) for p in plan.processes)
    assert plan.shards == ["sh0", "sh1"]


# -- replication ------------------------------------------------------------------------------------
def _status(secondary_state=2, message=""):
    return {"members": [
        {"name": "a:1", "stateStr": "PRIMARY", "state": 1, "optime": {"ts": Timestamp(1000, 1), "t": 1}},
        {"name": "a:2", "stateStr": "SECONDARY" if secondary_state == 2 else "RECOVERING", "state": secondary_state,
         "optime": {"ts": Timestamp(990, 1), "t": 1}, "infoMessage": message}]}


def test_lag_per_secondary():
    assert replication.lag_from_status(_status()) == {"a:2": 10.0}


def test_too_stale_secondary_is_found():
    assert replication.stale_members(_status()) == []
    stale = replication.stale_members(_status(3, "could not find member to sync from; RS102 too stale to catch up"))
    assert stale[0]["member"] == "a:2"


def test_too_stale_line_in_a_log(tmp_path):
    log = tmp_path / "m.log"
    log.write_text("Thu Aug 22 12:20:26.441 [rsBackgroundSync] replSet error RS102 too stale to catch up\n")
    line, offset = replication.stale_in_log(log)
    assert "RS102" in line and offset == log.stat().st_size


# -- clients across versions ---------------------------------------------------------------------
def test_legacy_client_for_old_servers(monkeypatch, tmp_path):
    assert legacy.wire_version(info("mongodb-3.0.7")) == 3
    assert legacy.wire_version(info("tokumx-2.0.1")) == 0
    assert legacy.runner_python(info("mongodb-master-2023-06-27"), "x")["client"] == "current"
    monkeypatch.setenv("ENGINEBENCH_LEGACY_PYTHON", str(tmp_path / "missing"))
    with pytest.raises(legacy.LegacyError, match="make setup-legacy"):
        legacy.runner_python(info("mongodb-3.2.0-rc0"), "wt.320")


# -- mapping embedded systems and resolving the target ------------------------------------------
def test_embedded_systems_map_to_mongod_engines():
    wt = {"label": "wt.op1", "engine": "wiredtiger",
          "options": {"table_type": "lsm", "cache_size_mb": 64, "oplog": True, "oplog_size_mb": 64,
                      "block_compressor": "snappy", "checkpoint_s": 60, "log": True, "journal_compressor": "none"}}
    assert implied_spec(wt) == {"engine": "wiredTiger", "table_type": "lsm", "block_compressor": "snappy",
                                "syncdelay_s": 60, "journal": None, "journal_compressor": "none", "cache_size_mb": 64,
                                "topology": "replset", "oplog_size_mb": 64}
    assert implied_spec({"engine": "lmdb", "options": {}})["engine"] == "mmapv1"
    overridden = resolve_spec({**wt, "mongod": {"engine": "inMemory", "cache_size_mb": None, "members": 1}})
    assert overridden["engine"] == "inMemory" and overridden["_explicit"] == ["engine"]


def test_topology_override_from_the_environment(monkeypatch):
    monkeypatch.setenv("ENGINEBENCH_MONGOD_TOPOLOGY", "sharded")
    assert resolve_spec({"label": "a", "engine": "rocksdb", "options": {}})["topology"] == "sharded"
    monkeypatch.setenv("ENGINEBENCH_MONGOD_TOPOLOGY", "cluster")
    with pytest.raises(OptionError, match="allowed values: standalone, replset, sharded"):
        resolve_spec({"label": "a", "engine": "rocksdb", "options": {}})


def test_targets_without_a_binary(monkeypatch):
    from enginebench.targets import resolve_target
    monkeypatch.delenv("MONGOD", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RuntimeError, match="no mongod binary found"):
        resolve_target("mongod")
    auto = resolve_target("auto")
    assert auto["kind"] == "embedded" and "embedded engines ran" in auto["banner"][0]
    monkeypatch.delenv("ENGINEBENCH_URI", raising=False)
    with pytest.raises(RuntimeError, match="ENGINEBENCH_URI"):
        resolve_target("uri")
    monkeypatch.setenv("ENGINEBENCH_URI", "mongodb://u:secret@127.0.0.1:1/")
    with pytest.raises(RuntimeError, match=r"cannot reach 127\.0\.0\.1:1") as unreachable:
        resolve_target("uri")   # reached once before anything starts (targets.reach)
    assert "secret" not in str(unreachable.value)


def test_params_mongod_block_errors_name_file_and_key(tmp_path, monkeypatch):
    from enginebench.params.schema import System
    from pydantic import ValidationError
    with pytest.raises(ValidationError) as err:
        System(label="a", role="btree", engine="wiredtiger", mongod={"engine": "wiredtiger"})
    assert "wiredTiger" in str(err.value)
