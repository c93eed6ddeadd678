"""One option builder per storage engine and version line: a system's mongod spec -> settings.

A Setting is one server option with its three spellings: the command-line name (what we launch
with: argv lists, never a shell), the YAML path (2.6+ config files, as the LinkBench post used)
and the INI key (2.x and TokuMX config files, as the TokuMX post used). The same settings render
to all three, so the tests can hold them against the posts' own command lines and config files.

Version lines, as the options changed (mongod's documentation per release):
  wiredTiger  3.0-3.2: cacheSizeGB in whole GB | 3.4+: fractional GB (>= 0.25) | 4.2+: zstd |
              4.0+: no --nojournal on replica-set members | 6.1+: no --nojournal at all
  inMemory    3.2+ (Enterprise and Percona builds): inMemorySizeGB
  mmapv1      2.x: no --storageEngine (the only storage) | 3.0-4.0: --storageEngine=mmapv1 | 4.2+: gone
  rocksdb     MongoRocks / Percona 3.x: rocksdbCacheSizeGB (whole GB), rocksdbCompression none|snappy|zlib
              (lz4 and lz4hc from mongo-rocks r3.2.8)
  tokuft      TokuMXse release candidates: tokuft* options | Percona Server 3.0: PerconaFT*; cache in
              bytes, compression none|zlib|quicklz|lzma
  tokumx      TokuMX 2.x: --cacheSize (bytes), --checkpointPeriod, --setParameter default*; no --directoryperdb
Whether the binary has the engine at all is read from the binary (binary.py), never assumed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .binary import BinaryInfo

MB = 1 << 20


class OptionError(ValueError):
    """A system's mongod options cannot run on its binary; raised before anything starts."""


@dataclass(frozen=True)
class Setting:
    cli: str                    # command-line option name without dashes
    value: Any                  # True/False for switches
    yaml: str | None = None     # dotted path in a YAML config file (None: no YAML spelling)
    ini: str | None = None      # key in a 2.x INI config file (default: the cli name)
    yaml_value: Any = None      # when the YAML value differs from the command-line one

    @property
    def switch(self) -> bool:
        return isinstance(self.value, bool)


# -- rendering -----------------------------------------------------------------------------------
def to_argv(settings: list[Setting]) -> list[str]:
    out = []
    for s in settings:
        if s.switch:
            if s.value:
                out.append(f"--{s.cli}")
        else:
            out.append(f"--{s.cli}={s.value}")
    return out


def to_yaml_dict(settings: list[Setting]) -> dict:
    root: dict = {}
    for s in settings:
        if s.yaml is None:
            continue
        node = root
        *parents, leaf = s.yaml.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = s.value if s.yaml_value is None else s.yaml_value
    return root


def flatten_yaml(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten_yaml(value, path + "."))
        else:
            out[path] = value
    return out


def to_ini(settings: list[Setting]) -> str:
    lines = []
    for s in settings:
        value = ("true" if s.value else "false") if s.switch else s.value
        lines.append(f"{s.ini or s.cli} = {value}")
    return "\n".join(lines) + "\n"


# -- the builders ----------------------------------------------------------------------------------
class _Ctx:
    """What a builder needs besides the spec: who is asking (for errors), the binary, and whether
    to adjust a derived value the binary cannot take (with a note) instead of refusing it."""

    def __init__(self, label: str, spec: dict, info: BinaryInfo, notes: list[str] | None):
        self.label, self.spec, self.info, self.notes = label, spec, info, notes

    def where(self, key: str) -> str:
        """The params key a value came from: `mongod.<key>`, or for a value derived from the
        system's embedded options the option it came from (systems.implied_spec's `_origin`)."""
        origin = (self.spec.get("_origin") or {}).get(key)
        if origin and key not in self.spec.get("_explicit", ()):
            return f"system {self.label}: {origin} (mongod.{key} under TARGET=mongod)"
        return f"system {self.label}: mongod.{key}"

    def binary(self) -> str:
        return f"{self.info.flavour} {self.info.version} ({self.info.path})"

    def fail(self, key: str, message: str) -> None:
        raise OptionError(f"{self.where(key)}: {message}")

    def allowed(self, key: str, allowed: tuple, why: str = "") -> Any:
        value = self.spec.get(key)
        if value is not None and value not in allowed:
            self.fail(key, f"{value!r} is not allowed{why}; allowed values: {', '.join(map(str, allowed))}")
        return value

    def adjust(self, key: str, message: str) -> None:
        """A value derived from the embedded options is adjusted with a note; one the params set
        under `mongod:` explicitly is an error."""
        if self.notes is None or key in self.spec.get("_explicit", ()):
            self.fail(key, message)
        self.notes.append(f"system {self.label}: {message}; adjusted")


def _gb(ctx: _Ctx, key: str, mb: int, *, whole: bool, minimum_gb: float) -> int | float:
    if whole:
        if mb % 1024:
            # Rounded down, so that a cache shared under a memory limit never grows past its share
            # (memory.py then checks the 1 GB minimum against the limit).
            gb = max(1, mb // 1024)
            ctx.adjust(key, f"{mb} MB is not a whole number of GB, which {ctx.binary()} requires; allowed "
                            f"values: multiples of 1024 (using {gb * 1024})")
            return gb
        return mb // 1024
    gb = mb / 1024
    if gb < minimum_gb:
        ctx.adjust(key, f"{mb} MB is below the minimum of {minimum_gb} GB of {ctx.binary()} "
                        f"(using {minimum_gb} GB)")
        gb = minimum_gb
    return int(gb) if gb == int(gb) else round(gb, 3)


def _journal(ctx: _Ctx, out: list[Setting], replset: bool) -> None:
    journal = ctx.spec.get("journal")
    if journal is None:
        return
    if journal is False and ctx.info.at_least(6, 1):
        ctx.fail("journal", f"false is not supported by {ctx.binary()} (journaling cannot be turned off "
                            "from 6.1); allowed values: true")
    if journal is False and replset and ctx.info.at_least(4, 0) and ctx.spec["engine"] == "wiredTiger":
        ctx.fail("journal", f"false is not allowed on a replica-set member by {ctx.binary()}; allowed values: "
                            "true (or topology standalone)")
    if journal:
        if not ctx.info.at_least(6, 1):  # from 6.1 --journal is gone too: journaling is simply on
            out.append(Setting("journal", True, "storage.journal.enabled"))
    else:
        out.append(Setting("nojournal", True, "storage.journal.enabled", ini="nojournal", yaml_value=False))


def _syncdelay(ctx: _Ctx, out: list[Setting]) -> None:
    if ctx.spec.get("syncdelay_s") is not None:
        out.append(Setting("syncdelay", ctx.spec["syncdelay_s"], "storage.syncPeriodSecs"))


def _wiredtiger(ctx: _Ctx, replset: bool) -> list[Setting]:
    spec, info = ctx.spec, ctx.info
    out = [Setting("storageEngine", "wiredTiger", "storage.engine")]
    if spec.get("cache_size_mb") is not None:
        whole = not info.at_least(3, 4)   # 3.0 and 3.2 take an integer number of GB
        out.append(Setting("wiredTigerCacheSizeGB", _gb(ctx, "cache_size_mb", spec["cache_size_mb"], whole=whole,
                                                         minimum_gb=0.25),
                           "storage.wiredTiger.engineConfig.cacheSizeGB"))
    compressors = ("none", "snappy", "zlib") + (("zstd",) if info.at_least(4, 2) else ())
    why = f" by {ctx.binary()}" if not info.at_least(4, 2) else ""
    if ctx.allowed("journal_compressor", compressors, why):
        out.append(Setting("wiredTigerJournalCompressor", spec["journal_compressor"],
                           "storage.wiredTiger.engineConfig.journalCompressor"))
    if ctx.allowed("block_compressor", compressors, why):
        out.append(Setting("wiredTigerCollectionBlockCompressor", spec["block_compressor"],
                           "storage.wiredTiger.collectionConfig.blockCompressor"))
    if spec.get("index_prefix_compression") is not None:
        out.append(Setting("wiredTigerIndexPrefixCompression", str(spec["index_prefix_compression"]).lower(),
                           "storage.wiredTiger.indexConfig.prefixCompression",
                           yaml_value=spec["index_prefix_compression"]))
    if spec.get("table_type") == "lsm":
        # MongoDB has no LSM switch: tables are created with the WiredTiger config string
        # `type=lsm`, for collections and indexes alike (the LinkBench post's WiredTiger-LSM runs).
        out.append(Setting("wiredTigerCollectionConfigString", "type=lsm",
                           "storage.wiredTiger.collectionConfig.configString"))
        out.append(Setting("wiredTigerIndexConfigString", "type=lsm", "storage.wiredTiger.indexConfig.configString"))
    _journal(ctx, out, replset)
    _syncdelay(ctx, out)  # WiredTiger checkpoints every syncdelay seconds (sysbench post: 60 vs 900)
    return out


def _inmemory(ctx: _Ctx, replset: bool) -> list[Setting]:
    out = [Setting("storageEngine", "inMemory", "storage.engine")]
    if ctx.spec.get("journal") is not None:
        ctx.fail("journal", "inMemory keeps nothing on disk, so it has no journal; remove the key")
    if ctx.spec.get("cache_size_mb") is not None:
        out.append(Setting("inMemorySizeGB", _gb(ctx, "cache_size_mb", ctx.spec["cache_size_mb"],
                                                 whole=not ctx.info.at_least(3, 4), minimum_gb=0.25),
                           "storage.inMemory.engineConfig.inMemorySizeGB"))
    return out


def _mmapv1(ctx: _Ctx, replset: bool) -> list[Setting]:
    spec, info = ctx.spec, ctx.info
    out = []
    if info.at_least(3, 0):  # before 3.0 there was no storage engine to choose
        out.append(Setting("storageEngine", "mmapv1", "storage.engine"))
    if spec.get("nssize_mb") is not None:
        out.append(Setting("nssize", spec["nssize_mb"], "storage.mmapv1.nsSize"))
    if spec.get("directory_per_db") is not None:
        out.append(Setting("directoryperdb", spec["directory_per_db"], "storage.directoryPerDB"))
    _journal(ctx, out, replset)
    if spec.get("journal_commit_interval_ms") is not None:
        path = "storage.journal.commitIntervalMs" if info.at_least(3, 2) else "storage.mmapv1.journal.commitIntervalMs"
        out.append(Setting("journalCommitInterval", spec["journal_commit_interval_ms"], path))
    _syncdelay(ctx, out)
    return out


# rocksdbCompression's format() in rocks_global_options.cpp: "(:?none)|(:?snappy)|(:?zlib)" in
# MongoRocks 3.0 (mongodb-partners/mongo v3.0.7-mongorocks, src/mongo/db/storage/rocks; the same in
# mongodb r3.0.7) and in mongo-rocks r3.2.0; mongo-rocks adds lz4|lz4hc at r3.2.8 and r3.3.9 (PSMDB-72).
ROCKSDB_COMPRESSORS = ("none", "snappy", "zlib")
ROCKSDB_LZ4 = ("lz4", "lz4hc")


def _rocks_lz4(info: BinaryInfo) -> bool:
    version = info.version_tuple
    return version >= (3, 3, 9) or (3, 2, 8) <= version < (3, 3, 0)


def _rocksdb(ctx: _Ctx, replset: bool) -> list[Setting]:
    spec = ctx.spec
    out = [Setting("storageEngine", "rocksdb", "storage.engine")]
    if spec.get("cache_size_mb") is not None:
        out.append(Setting("rocksdbCacheSizeGB", _gb(ctx, "cache_size_mb", spec["cache_size_mb"], whole=True,
                                                     minimum_gb=1), "storage.rocksdb.cacheSizeGB"))
    if ctx.allowed("block_compressor", ROCKSDB_COMPRESSORS + (ROCKSDB_LZ4 if _rocks_lz4(ctx.info) else ()),
                   f" by {ctx.binary()}"):
        out.append(Setting("rocksdbCompression", spec["block_compressor"], "storage.rocksdb.compression"))
    _journal(ctx, out, replset)
    _syncdelay(ctx, out)
    return out


def _tokuft(ctx: _Ctx, replset: bool) -> list[Setting]:
    spec, info = ctx.spec, ctx.info
    # TokuMXse release candidates spell it tokuft; Percona Server's GA builds PerconaFT.
    prefix = "PerconaFT" if any(o.startswith("PerconaFT") for o in info.options) else "tokuft"
    y = f"storage.{prefix}"
    out = [Setting("storageEngine", prefix, "storage.engine")]
    # TokuFTDictionaryOptions::store() takes zlib, quicklz, lzma or none (percona-server-mongodb
    # psmdb-3.0.8-1.2 and tokumxse-1.0.0-rc.6, src/mongo/db/storage/tokuft/tokuft_dictionary_options.cpp).
    compression = ctx.allowed("block_compressor", ("none", "zlib", "quicklz", "lzma"), f" by {ctx.binary()}")
    # The sysbench post's order: collection page size, compression, fanout; then the index's.
    for kind in ("Collection", "Index"):
        section = f"{y}.{kind.lower()}Options"
        if spec.get("read_page_size") is not None:
            out.append(Setting(f"{prefix}{kind}ReadPageSize", spec["read_page_size"], f"{section}.readPageSize"))
        if compression:
            out.append(Setting(f"{prefix}{kind}Compression", compression, f"{section}.compression"))
        if spec.get("fanout") is not None:
            out.append(Setting(f"{prefix}{kind}Fanout", spec["fanout"], f"{section}.fanout"))
    engine = f"{y}.engineOptions"
    if spec.get("cache_size_mb") is not None:
        out.append(Setting(f"{prefix}EngineCacheSize", spec["cache_size_mb"] * MB, f"{engine}.cacheSize"))
    for key, name in (("cleaner_period_s", "CleanerPeriod"), ("cleaner_iterations", "CleanerIterations"),
                      ("fs_redzone_pct", "FsRedzone"), ("lock_timeout_ms", "LockTimeout")):
        if spec.get(key) is not None:
            out.append(Setting(f"{prefix}Engine{name}", spec[key], f"{engine}.{name[0].lower()}{name[1:]}"))
    if spec.get("directio") is not None:
        out.append(Setting(f"{prefix}EngineDirectio", str(spec["directio"]).lower(), f"{engine}.directio",
                           yaml_value=spec["directio"]))
    _journal(ctx, out, replset)
    _syncdelay(ctx, out)
    return out


def _tokumx(ctx: _Ctx, replset: bool) -> list[Setting]:
    spec = ctx.spec
    out = []
    # The sysbench post's TokuMX line: defaults for new collections as server parameters, then
    # cacheSize and checkpointPeriod.
    compression = ctx.allowed("block_compressor", ("none", "zlib", "quicklz", "lzma"))
    for key, name, value in (("block_compressor", "defaultCompression", compression),
                             ("fanout", "defaultFanout", spec.get("fanout")),
                             ("read_page_size", "defaultReadPageSize", spec.get("read_page_size")),
                             ("fast_updates", "fastUpdates",
                              None if spec.get("fast_updates") is None else str(spec["fast_updates"]).lower())):
        if value is not None:
            out.append(Setting("setParameter", f"{name}={value}", f"setParameter.{name}", ini="setParameter"))
    if spec.get("cache_size_mb") is not None:
        out.append(Setting("cacheSize", spec["cache_size_mb"] * MB))
    for key, name in (("checkpoint_period_s", "checkpointPeriod"), ("log_flush_period_ms", "logFlushPeriod"),
                      ("cleaner_period_s", "cleanerPeriod"), ("cleaner_iterations", "cleanerIterations"),
                      ("fs_redzone_pct", "fsRedzone"), ("lock_timeout_ms", "lockTimeout"),
                      ("expire_oplog_days", "expireOplogDays"), ("expire_oplog_hours", "expireOplogHours")):
        if spec.get(key) is not None:
            out.append(Setting(name, spec[key]))
    if spec.get("directio") is not None:
        out.append(Setting("directio", spec["directio"]))
    if spec.get("nssize_mb") is not None:
        out.append(Setting("nssize", spec["nssize_mb"]))
    if spec.get("directory_per_db") is not None:
        # TokuMX 2.0.1's mongod defines no --directoryperdb (Tokutek/mongo tokumx-2.0.1,
        # src/mongo/db/db.cpp buildOptionsDescriptions); only its tools (tools/tool.cpp) take it.
        ctx.fail("directory_per_db", f"{ctx.binary()} has no --directoryperdb (TokuMX keeps every database in "
                                     "its dbpath); allowed values: none (remove the key)")
    _syncdelay(ctx, out)
    return out


# (engine, version line) -> builder, and which spec keys each engine reads.
BUILDERS = {"wiredTiger": _wiredtiger, "inMemory": _inmemory, "mmapv1": _mmapv1, "rocksdb": _rocksdb,
            "tokuft": _tokuft, "tokumx": _tokumx}
GENERAL_KEYS = {"engine", "binary", "mongos", "topology", "members", "shards", "config_members", "oplog_size_mb",
                "on_stale_secondary", "lag_sample_s", "write_concern", "set_parameters", "extra_options"}
ENGINE_KEYS = {
    "wiredTiger": {"cache_size_mb", "journal", "journal_compressor", "block_compressor", "index_prefix_compression",
                   "table_type", "syncdelay_s"},
    "inMemory": {"cache_size_mb"},
    "mmapv1": {"journal", "syncdelay_s", "nssize_mb", "journal_commit_interval_ms", "directory_per_db"},
    "rocksdb": {"cache_size_mb", "block_compressor", "journal", "syncdelay_s"},
    "tokuft": {"cache_size_mb", "block_compressor", "fanout", "read_page_size", "journal", "syncdelay_s",
               "directio", "cleaner_period_s", "cleaner_iterations", "fs_redzone_pct", "lock_timeout_ms"},
    "tokumx": {"cache_size_mb", "block_compressor", "fanout", "read_page_size", "fast_updates",
               "checkpoint_period_s", "log_flush_period_ms", "directio", "cleaner_period_s", "cleaner_iterations",
               "fs_redzone_pct", "lock_timeout_ms", "expire_oplog_days", "expire_oplog_hours", "syncdelay_s",
               "nssize_mb", "directory_per_db"},
}


def version_line(engine: str, info: BinaryInfo) -> str:
    """The version line a binary belongs to for an engine (for errors and the manifest)."""
    if engine == "tokumx":
        return f"TokuMX {(info.tokumx_version or '2.x')[:3]}"
    major, minor, _ = info.version_tuple
    if engine == "mmapv1" and (major, minor) < (3, 0):
        return "2.x"
    if engine == "wiredTiger":
        return "3.0-3.2" if (major, minor) < (3, 4) else ("3.4-4.0" if (major, minor) < (4, 2) else "4.2+")
    return f"{major}.{minor}"


def engine_settings(label: str, spec: dict, info: BinaryInfo, notes: list[str] | None = None) -> list[Setting]:
    """The engine's settings for this binary, or OptionError naming the system, key and allowed
    values. `notes` (a list) lets values derived from embedded options be adjusted with a note."""
    engine = spec.get("engine") or info.default_engine
    ctx = _Ctx(label, {**spec, "engine": engine}, info, notes)
    if engine not in info.engines:
        ctx.fail("engine", f"{engine!r} is not supported by {ctx.binary()}; allowed values: "
                           f"{', '.join(info.engines) or '(none found in its --help)'}")
    set_keys = {k for k, v in spec.items() if v is not None and not k.startswith("_") and v != {}}
    stray = sorted(set_keys - GENERAL_KEYS - ENGINE_KEYS[engine])
    if stray:
        ctx.fail(stray[0], f"does not apply to engine {engine}; allowed keys for {engine}: "
                           f"{', '.join(sorted(ENGINE_KEYS[engine]))}")
    replset = (spec.get("topology") or "standalone") != "standalone"
    out = BUILDERS[engine](ctx, replset)
    for name, value in (spec.get("set_parameters") or {}).items():
        shown = str(value).lower() if isinstance(value, bool) else value
        out.append(Setting("setParameter", f"{name}={shown}", f"setParameter.{name}", yaml_value=value))
    for name, value in (spec.get("extra_options") or {}).items():
        if info.options and name not in info.options:
            ctx.fail(f"extra_options.{name}", f"{ctx.binary()} has no option --{name} (per its --help)")
        out.append(Setting(name, value))
    return out
