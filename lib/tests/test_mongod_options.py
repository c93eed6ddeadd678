"""The mongod command lines and config files of the five posts, rebuilt from params.

Each test quotes the post's own line(s) (../shared/seeds/) and compares them with what the
option builders produce for the same settings on a binary of the post's version (identified from
the --version/--help texts data/mongod/ rebuilt from each server's sources; SOURCES.md there names
them). No binary is needed.
"""
import shlex
from pathlib import Path

import pytest

from enginebench.mongod.binary import identify_texts
from enginebench.mongod.options import (OptionError, engine_settings, flatten_yaml, to_argv, to_ini,
                                        to_yaml_dict)
from enginebench.mongod.topology import plan_deployment

DATA = Path(__file__).parent / "data" / "mongod"
GB = 1 << 30


def binary(name: str, version_text: str | None = None):
    return identify_texts(f"/opt/{name}/bin/mongod", version_text or (DATA / f"{name}.version.txt").read_text(),
                          (DATA / f"{name}.help.txt").read_text())


MONGO_300 = binary("mongodb-3.0.7")
MONGO_320 = binary("mongodb-3.2.0-rc0")
ROCKS_300 = binary("mongorocks-3.0")
ROCKS_320 = binary("mongorocks-3.2.0")
PERCONA_30 = binary("percona-3.0")
TOKUMXSE = binary("tokumxse-1.0.0-rc.6")
MONGO_MASTER = binary("mongodb-master-2023-06-27")  # a 7.1 development build, no release
TOKUMX_201 = binary("tokumx-2.0.1")
MONGO_24 = identify_texts("/opt/mongodb-2.4/bin/mongod", "db version v2.4.6\ngit version: 0\n",
                          (DATA / "mongodb-3.0.7.help.txt").read_text())


def post_args(line: str, **values) -> list[str]:
    """A post's shell line as the argv the shell would pass (its $VARs and X filled in)."""
    for name, value in values.items():
        line = line.replace(name, str(value))
    return shlex.split(line.replace("\\\n", " "))[1:]


def engine_argv(spec: dict, info) -> list[str]:
    return to_argv(engine_settings("t", spec, info))


# -- 002: sysbench-mongo, MMAP vs WiredTiger vs RocksDB vs TokuMX vs TokuMXse --------------------
def test_sysbench_post_wiredtiger_line():
    post = """$MONGODIR/mongod --dbpath=$DATADIR --storageEngine=wiredTiger \\
--wiredTigerCacheSizeGB=X --wiredTigerJournalCompressor=none"""
    args = post_args(post, **{"$DATADIR": "/d", "X": 8})
    assert args[0] == "--dbpath=/d"
    assert engine_argv({"engine": "wiredTiger", "cache_size_mb": 8192, "journal_compressor": "none"},
                       MONGO_300) == args[1:]


def test_sysbench_post_wiredtiger_checkpoint_900_via_syncdelay():
    # "apparently the variable --syncdelay is responsible for that ... (900sec) checkpoint interval"
    argv = engine_argv({"engine": "wiredTiger", "cache_size_mb": 16384, "journal_compressor": "none",
                        "syncdelay_s": 900}, MONGO_300)
    assert argv == ["--storageEngine=wiredTiger", "--wiredTigerCacheSizeGB=16", "--wiredTigerJournalCompressor=none",
                    "--syncdelay=900"]


def test_sysbench_post_mmap_line():
    post = "$MONGODIR/mongod --dbpath=$DATADIR --logpath=$1/server.log"
    args = post_args(post, **{"$DATADIR": "/d", "$1": "/r"})
    # 3.0's default engine was mmapv1; we name it, so the run says what it ran.
    assert engine_argv({"engine": "mmapv1"}, MONGO_300) == ["--storageEngine=mmapv1"]
    plan = plan_deployment("mmap", {"engine": "mmapv1"}, MONGO_300, [], Path("/d"), Path("/r"), ports=[27017])
    argv = plan.processes[0].argv[1:]
    assert argv[:2] == ["--dbpath=/d/mongod", "--logpath=/r/mongod.log"]
    assert [a.split("=")[0] for a in args] == [a.split("=")[0] for a in argv[:2]]


def test_sysbench_post_rocksdb_line():
    post = "$MONGODIR/mongod --dbpath=$DATADIR --storageEngine=rocksdb \\"
    args = post_args(post.rstrip(" \\"), **{"$DATADIR": "/d"})
    assert engine_argv({"engine": "rocksdb"}, ROCKS_300) == args[1:]


def test_sysbench_post_tokumx_line():
    post = """$MONGODIR/mongod --dbpath=$DATADIR --setParameter="defaultCompression=quicklz" \\
--setParameter="defaultFanout=128" --setParameter="defaultReadPageSize=16384" \\
--setParameter="fastUpdates=true" --cacheSize=X --checkpointPeriod=900"""
    args = post_args(post, **{"$DATADIR": "/d", "X": 8 * GB})
    spec = {"engine": "tokumx", "block_compressor": "quicklz", "fanout": 128, "read_page_size": 16384,
            "fast_updates": True, "cache_size_mb": 8192, "checkpoint_period_s": 900}
    assert engine_argv(spec, TOKUMX_201) == args[1:]


def test_sysbench_post_tokumxse_line():
    post = """$MONGODIR/mongod --dbpath=$DATADIR --storageEngine=tokuft \\
--tokuftCollectionReadPageSize=16384 --tokuftCollectionCompression=quicklz \\
--tokuftCollectionFanout=128 --tokuftIndexReadPageSize=16384 \\
--tokuftIndexCompression=quicklz --tokuftIndexFanout=128 \\
--tokuftEngineCacheSize=X --syncdelay=900"""
    args = post_args(post, **{"$DATADIR": "/d", "X": 16 * GB})
    spec = {"engine": "tokuft", "read_page_size": 16384, "block_compressor": "quicklz", "fanout": 128,
            "cache_size_mb": 16384, "syncdelay_s": 900}
    assert engine_argv(spec, TOKUMXSE) == args[1:]
    # Percona Server 3.0 GA renamed the engine and its options PerconaFT (psmdb-3.0.8-1.2:
    # registerStorageEngine("PerconaFT"), tokuft_engine_options.cpp, tokuft_dictionary_options.cpp).
    assert engine_argv(spec, PERCONA_30) == [a.replace("tokuft", "PerconaFT") for a in args[1:]]


@pytest.mark.parametrize("info", [TOKUMXSE, PERCONA_30], ids=["tokumxse", "psmdb-3.0"])
def test_fractal_tree_compressors_are_the_servers(info):
    # TokuFTDictionaryOptions::store(): "zlib", "quicklz", "lzma" or "none"; no snappy.
    with pytest.raises(OptionError, match=r"block_compressor: 'snappy' is not allowed by .*allowed values: none, "
                                          r"zlib, quicklz, lzma"):
        engine_argv({"engine": "tokuft", "block_compressor": "snappy"}, info)


# -- 000: LinkBench, MongoDB 3.0.7 / 3.2.0rc0, WiredTiger and RocksDB, op0/op1 ---------------------
POST_000_ALL = {  # "For all tests this was in the mongod configuration file" (fork: mongod is supervised
    "systemLog.logAppend": True,  # by the driver here, in the foreground, so it is not daemonised)
    "storage.syncPeriodSecs": 600,
    "storage.journal.enabled": True,
    "storage.wiredTiger.collectionConfig.blockCompressor": "snappy",
    "storage.wiredTiger.engineConfig.journalCompressor": "none",
}
POST_000_CACHED = {"replication.oplogSizeMB": 8000, "storage.wiredTiger.engineConfig.cacheSizeGB": 32,
                   "storage.rocksdb.cacheSizeGB": 32}
POST_000_UNCACHED = {"replication.oplogSizeMB": 4000, "storage.wiredTiger.engineConfig.cacheSizeGB": 8,
                     "storage.rocksdb.cacheSizeGB": 8}


def _linkbench_config(engine: str, info, cache_gb: int, oplog_mb: int | None) -> dict:
    spec = {"engine": engine, "cache_size_mb": cache_gb * 1024, "syncdelay_s": 600, "journal": True,
            "topology": "replset" if oplog_mb else "standalone", "oplog_size_mb": oplog_mb}
    if engine == "wiredTiger":
        spec.update(block_compressor="snappy", journal_compressor="none")
    plan = plan_deployment("lb", spec, info, engine_settings("lb", spec, info), Path("/d"), Path("/r"), ports=[1])
    return flatten_yaml(to_yaml_dict(plan.processes[0].settings))


@pytest.mark.parametrize("info", [MONGO_300, MONGO_320], ids=["wt.307", "wt.320"])
@pytest.mark.parametrize("cached, expected", [(True, POST_000_CACHED), (False, POST_000_UNCACHED)],
                         ids=["cached", "uncached"])
def test_linkbench_post_config_file_wiredtiger(info, cached, expected):
    config = _linkbench_config("wiredTiger", info, expected["storage.wiredTiger.engineConfig.cacheSizeGB"],
                               expected["replication.oplogSizeMB"])
    assert config["systemLog.path"] == "/r/rs0-0.log"   # "destination: file"
    for key, value in {**POST_000_ALL, **expected}.items():
        if not key.startswith("storage.rocksdb"):
            assert config[key] == value, key


@pytest.mark.parametrize("info", [ROCKS_300, ROCKS_320], ids=["rx.307", "rx.320"])
def test_linkbench_post_config_file_rocksdb(info):
    config = _linkbench_config("rocksdb", info, 32, 8000)
    assert config["storage.rocksdb.cacheSizeGB"] == 32
    assert config["replication.oplogSizeMB"] == 8000
    assert config["storage.engine"] == "rocksdb"


def test_linkbench_post_op0_is_standalone_op1_a_one_member_replica_set():
    op0 = plan_deployment("wt.320.op0", {"topology": "standalone"}, MONGO_320, [], Path("/d"), Path("/r"), ports=[5])
    op1 = plan_deployment("wt.320.op1", {"topology": "replset", "members": 1, "oplog_size_mb": 8000}, MONGO_320, [],
                          Path("/d"), Path("/r"), ports=[6])
    assert not any(a.startswith("--replSet") for a in op0.processes[0].argv)
    assert "--replSet=rs0" in op1.processes[0].argv and "--oplogSize=8000" in op1.processes[0].argv
    assert op1.uri == "mongodb://127.0.0.1:6/?replicaSet=rs0"


# -- 004: TokuMX vs MongoDB 2.4 replica-set members' configuration files --------------------------
def _ini(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        if "=" in line:
            key, value = (part.strip() for part in line.split("=", 1))
            out[key] = {"off": "false", "on": "true"}.get(value, value)
    return out


POST_004_MONGODB = """
nssize=16
directoryperdb=false
journal=true
journalCommitInterval=100
syncdelay=60
"""
POST_004_TOKUMX = """
cacheSize = 1073741824
logFlushPeriod = 100
directio = off
cleanerPeriod = 2
cleanerIterations = 5
fsRedzone = 5
lockTimeout = 4000
expireOplogDays = 5
nssize=16
syncdelay=60
"""


def test_tokumx_post_mongodb_member_config():
    spec = {"engine": "mmapv1", "nssize_mb": 16, "directory_per_db": False, "journal": True,
            "journal_commit_interval_ms": 100, "syncdelay_s": 60}
    ours = _ini(to_ini(engine_settings("mongo", spec, MONGO_24)))
    assert ours == _ini(POST_004_MONGODB)


def test_tokumx_post_tokumx_member_config():
    spec = {"engine": "tokumx", "cache_size_mb": 1024, "log_flush_period_ms": 100, "directio": False,
            "cleaner_period_s": 2, "cleaner_iterations": 5, "fs_redzone_pct": 5, "lock_timeout_ms": 4000,
            "expire_oplog_days": 5, "nssize_mb": 16, "syncdelay_s": 60}
    ours = _ini(to_ini(engine_settings("toku", spec, TOKUMX_201)))
    assert ours == _ini(POST_004_TOKUMX)


def test_tokumx_post_cluster_shape():
    # "3 mongos servers, 3 config servers, 1 shard (replica set) with 3 shard servers": one mongos
    # suffices on one host; config servers and the shard replica set as in the post.
    spec = {"topology": "sharded", "shards": 1, "members": 3, "config_members": 3}
    plan = plan_deployment("toku", spec, TOKUMX_201, [], Path("/d"), Path("/r"), mongos="/opt/mongos",
                           ports=list(range(100, 107)))
    roles = [p.role for p in plan.processes]
    assert roles == ["config"] * 3 + ["mongod"] * 3 + ["mongos"]
    assert plan.legacy_config  # TokuMX (2.4) config servers are mirrored, not a replica set
    mongos = plan.processes[-1].argv
    assert "--configdb=127.0.0.1:100,127.0.0.1:101,127.0.0.1:102" in mongos
    assert plan.replsets == {"sh0": ["127.0.0.1:103", "127.0.0.1:104", "127.0.0.1:105"]}
    assert plan.uri == "mongodb://127.0.0.1:106/"


# -- 001 and 003: the engines they ran (no command lines in the posts) ------------------------------
@pytest.mark.parametrize("info, engine, first", [
    (MONGO_300, "wiredTiger", "--storageEngine=wiredTiger"),   # 001: WiredTiger 3.0.x
    (ROCKS_300, "rocksdb", "--storageEngine=rocksdb"),         # 001, 003: RocksDB 3.0.x
    (MONGO_300, "mmapv1", "--storageEngine=mmapv1"),           # 003: 3.0 MMAPv1
    (MONGO_24, "mmapv1", None),                                # 003: 2.6 MMAPv1 (no engine choice yet)
])
def test_iibench_and_flashback_post_engines(info, engine, first):
    argv = engine_argv({"engine": engine}, info)
    assert (argv[0] if argv else None) == first


def test_flashback_post_replica_set_of_three():
    spec = {"topology": "replset", "members": 3, "oplog_size_mb": 1024}
    plan = plan_deployment("rx", spec, ROCKS_300, engine_settings("rx", {"engine": "rocksdb"}, ROCKS_300),
                           Path("/d"), Path("/r"), ports=[1, 2, 3])
    assert [p.name for p in plan.processes] == ["rs0-0", "rs0-1", "rs0-2"]
    assert all("--bind_ip=127.0.0.1" in p.argv for p in plan.processes)
    assert len({p.dbpath for p in plan.processes}) == 3


# -- wiredTiger LSM and today's versions -----------------------------------------------------------
def test_wiredtiger_lsm_tables_through_config_strings():
    argv = engine_argv({"engine": "wiredTiger", "table_type": "lsm"}, MONGO_320)
    assert argv == ["--storageEngine=wiredTiger", "--wiredTigerCollectionConfigString=type=lsm",
                    "--wiredTigerIndexConfigString=type=lsm"]


def test_fractional_cache_from_34_and_zstd_from_42():
    argv = engine_argv({"engine": "wiredTiger", "cache_size_mb": 640, "block_compressor": "zstd"}, MONGO_MASTER)
    assert argv == ["--storageEngine=wiredTiger", "--wiredTigerCacheSizeGB=0.625",
                    "--wiredTigerCollectionBlockCompressor=zstd"]


def test_set_parameters_and_extra_options():
    spec = {"engine": "wiredTiger", "set_parameters": {"diagnosticDataCollectionEnabled": False},
            "extra_options": {"maxConns": 200}}
    assert engine_argv(spec, MONGO_MASTER)[1:] == ["--setParameter=diagnosticDataCollectionEnabled=false",
                                                   "--maxConns=200"]


# -- what the 2015 servers' option definitions accept ------------------------------------------------
@pytest.mark.parametrize("info", [ROCKS_300, ROCKS_320], ids=["mongorocks-3.0", "mongo-rocks-r3.2.0"])
@pytest.mark.parametrize("codec", ["lz4", "lz4hc"])
def test_rocksdb_lz4_is_refused_before_r328(info, codec):
    # rocks_global_options.cpp: format("(:?none)|(:?snappy)|(:?zlib)") in mongodb-partners/mongo
    # v3.0.7-mongorocks and mongo-rocks r3.2.0; lz4|lz4hc arrive at r3.2.8 (PSMDB-72).
    with pytest.raises(OptionError, match=rf"mongod\.block_compressor: '{codec}' is not allowed by MongoDB 3\.[02]"
                                          r".*allowed values: none, snappy, zlib$"):
        engine_argv({"engine": "rocksdb", "block_compressor": codec, "_explicit": ["block_compressor"]}, info)
    later = binary("mongorocks-3.2.0", "db version v3.2.8\ngit version: x\n")
    assert engine_argv({"engine": "rocksdb", "block_compressor": codec}, later)[-1] == f"--rocksdbCompression={codec}"


def test_a_derived_lz4_names_the_embedded_option(tmp_path):
    """The params' rocksdb `options.compression: lz4` maps to mongod.block_compressor: the error
    names the key the params file has, and the allowed values, before anything starts."""
    from enginebench.mongod.systems import prepare_system
    from test_mongod_sources import _fake_binary
    path = _fake_binary(tmp_path, (DATA / "mongorocks-3.2.0.version.txt").read_text(), "mongorocks-3.2.0")
    system = {"label": "rx", "engine": "rocksdb", "options": {"compression": "lz4", "cache_size_mb": 1024},
              "mongod": {"binary": path}}
    with pytest.raises(OptionError, match=r"^params/x\.yaml: system rx: options\.compression \(mongod\.block_compressor "
                                          r"under TARGET=mongod\): 'lz4' is not allowed by MongoDB 3\.2\.0 .*allowed "
                                          r"values: none, snappy, zlib$"):
        prepare_system(system, "params/x.yaml")


def test_tokumx_has_no_directoryperdb():
    # Tokutek/mongo tokumx-2.0.1 src/mongo/db/db.cpp defines no --directoryperdb (tools/tool.cpp does).
    assert "directoryperdb" not in TOKUMX_201.options
    with pytest.raises(OptionError, match=r"mongod\.directory_per_db: TokuMX 2\.4\.10 .* has no --directoryperdb.*"
                                          r"allowed values: none"):
        engine_argv({"engine": "tokumx", "directory_per_db": False}, TOKUMX_201)
