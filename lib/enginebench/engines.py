"""The embedded engines, each in one record: its options, how reports name it, the mongod
storage engine it stands for, and what its own log adds to a system's data.

The params schema, the mongod target's implied settings and the space estimate are all built
from ENGINES; the native runner holds the engine itself (lib/native/src/engines/<name>.rs, listed
by `enginebench-runner engines`). Adding an engine means its record here and its Rust module
(docs/layout.md: "Adding a family or an engine").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

from pydantic import Field

from .params.base import Strict

MB = 1 << 20


class RecordStoreOptions(Strict):
    """Options of the record-store layer every embedded engine shares (op1 = with an oplog)."""
    oplog: bool = False
    oplog_size_mb: int = Field(1024, ge=1)
    # Documents per storage transaction of a batch insert: 1 in MongoDB 3.0/3.2, 64 from 3.4
    # (settings.py gives it per setting).
    insert_group: int = Field(1, ge=1)
    # A query's scan yields (its snapshot let go, the scan resumed with a new seek) every so many
    # entries or milliseconds: mongod 3.2's internalQueryExecYieldIterations 128 and
    # internalQueryExecYieldPeriodMS 10 (query_knobs.cpp at r3.2.0); 0 iterations: no yields.
    yield_iterations: int = Field(128, ge=0)
    yield_period_ms: int = Field(10, ge=1)


# WiredTiger as the posts' MongoDB releases shipped it (tools/wiredtiger.sources, built by
# tools/build_wiredtiger_tag.sh), each named by its tag: seed 001 compared MongoDB 3.0.x (3.0.4's
# tree, WiredTiger 2.5.3) with 3.1.5 (WiredTiger 2.6.1, the release nearest it); seed 000 3.0.7
# (2.5.3) with 3.2.0rc0 (the mongodb-3.2.0-rc1 tree, 2.6.2; the repository has no rc0 tag).
# Each with the WiredTiger release its tree carries (dist/RELEASE_INFO at the tag), which orders
# them against each other and against the releases built from source (report/rundata.py).
WT_TAG_TREES = {"mongodb-3.0.4": "2.5.3", "2.6.1": "2.6.1", "mongodb-3.0.7": "2.5.3", "mongodb-3.2.0-rc1": "2.6.2"}
WT_TAG_RELEASES = tuple(WT_TAG_TREES)


def posts_trees(versions) -> set[str]:
    """The posts' own trees among these releases where there are two or more of them: a release
    claim then compares those (11.3.1 beside them is today's release, not one end of the post's
    pair); empty where there are fewer."""
    trees = {v for v in versions if v in WT_TAG_TREES}
    return trees if len(trees) >= 2 else set()


# The MongoDB release each tree stands for (its mongod reports this version): what a server must
# be for a system that names the tree to run on it under TARGET=mongod.
WT_TAG_MONGOD = {"mongodb-3.0.4": "3.0.4", "2.6.1": "3.1.5", "mongodb-3.0.7": "3.0.7",
                 "mongodb-3.2.0-rc1": "3.2.0-rc1"}


# Engine settings left unset (None) are those mongod or MongoRocks used, as the native runner
# applies them (lib/native/src/engines/mongod_layout.rs names each setting's source); the run's
# manifest records every effective value.
class WiredTigerOptions(RecordStoreOptions):
    # The WiredTiger release: 11.3.1 or 2.9.2 built from source, Debian's 3.2.1 beside them, or a
    # tree as one of the posts' MongoDB releases shipped it (WT_TAG_RELEASES).
    version: Literal[("11.3.1", "3.2.1", "2.9.2") + WT_TAG_RELEASES] = "11.3.1"
    table_type: Literal["btree", "lsm"] = "btree"
    cache_size_mb: int = Field(256, ge=1)
    block_compressor: Literal["none", "snappy", "zstd", "zlib"] = "snappy"
    log: bool = True
    journal_compressor: Literal["none", "snappy", "zlib", "zstd"] = "snappy"
    checkpoint_s: int = Field(60, ge=1)            # mongod's --syncdelay
    checkpoint_log_size_mb: int = Field(2048, ge=0)  # 3.x: also after 2 GB of journal; 0: none (3.6+)
    session_max: int = Field(20000, ge=1)
    eviction_threads_min: int = Field(1, ge=1)
    eviction_threads_max: int = Field(4, ge=1)
    eviction_dirty_target: int | None = Field(None, ge=1)   # percent of the cache; None: the release's
    eviction_dirty_trigger: int | None = Field(None, ge=1)
    close_idle_time_s: int = Field(100000, ge=1)
    unlogged_user_tables: bool = False                 # 8.0 replica sets: only the oplog journaled
    journal_commit_ms: int | None = Field(None, ge=0)  # the journal flusher's period (3.2: 100 ms; 0: none)
    lsm_chunk_mb: int | None = Field(None, ge=1)       # LSM tables: 10 MB, or an eighth of a smaller cache
    index_prefix_compression: bool | None = None
    # mongod's record store searches for a record before it rewrites or deletes it
    # (WiredTigerRecordStore::updateRecord / deleteRecord at r3.2.0: search, get_value, then write).
    read_before_write: bool = True


class RocksDBOptions(RecordStoreOptions):
    cache_size_mb: int = Field(256, ge=1)
    compression: Literal["none", "snappy", "zlib", "zstd", "lz4"] = "snappy"
    # Memtables are memory outside the block cache: scaled-down runs under a memory limit
    # need them scaled down too (MongoRocks: 64 MB x 4).
    write_buffer_mb: int | None = Field(None, ge=1)
    max_write_buffers: int | None = Field(None, ge=2)
    max_background_compactions: int | None = Field(None, ge=1)
    max_background_flushes: int | None = Field(None, ge=1)
    # The LSM's shape (MongoRocks: 64 MB files, 512 MB at the base level): a scaled-down database
    # needs it scaled too, or each compaction out of its base level rewrites much of the database.
    target_file_size_mb: int | None = Field(None, ge=1)
    max_bytes_for_level_base_mb: int | None = Field(None, ge=1)
    block_size_kb: int | None = Field(None, ge=1)
    bloom_bits: int | None = Field(None, ge=0)
    # A periodic WAL sync every so many ms; None: MongoRocks r3.2.0's, none (only j:true writes sync it).
    journal_commit_ms: int | None = Field(None, ge=0)
    statistics: bool = False  # RocksDB's tickers (block cache hits, stalls, ...): MongoRocks left them off
    rate_limit_mb: int = Field(1024, ge=1)   # MongoRocks' storage.rocksdb.maxWriteMBPerSec
    config_string: str = ""                  # storage.rocksdb.configString: RocksDB's option syntax, applied last
    # Scans as MongoRocks r3.2.0 made them: the iterator bounded at the end of the whole collection
    # or index, a reverse scan positioned by Seek then Prev; `bounded`: at the range, SeekForPrev.
    scans: Literal["mongorocks", "bounded"] = "mongorocks"
    # MongoRocks' updateRecord / deleteRecord read the old record first (for its size counter).
    read_before_write: bool = True
    # MongoRocks' tombstone compactions: one iterator step that skipped this many deletions or more
    # suggests its collection's or index's range for compaction, at most once per interval (none in
    # the first); 0: none. `2015` sets MongoRocks r3.2.0's 50,000 and 600 s (settings.py).
    tombstone_compaction_skips: int = Field(0, ge=0)
    tombstone_compaction_interval_s: int = Field(600, ge=1)
    # MongoRocks' soft_rate_limit (2.5 at r3.2.0): writes delayed to delayed_write_rate while a level
    # below L0 holds more than this many times its target (RocksDB 4.x's rule, kept by the runner
    # over 7.8's own delay: lib/native/src/engines/rocks_throttle.rs); 0: none. `2015` sets 2.5.
    soft_rate_limit: float = Field(0, ge=0)


# PerconaFT's releases the runner builds (tools/build_perconaft.sh; tools/perconaft.sources): the
# one seed 004's TokuMX ran (1.0.4: the newest TokuMX tag before the post's runs, whose MongoDB log
# reads 22 August 2013; 1.1.0 was tagged on the 21st, after the clusters were deployed), seed 002's
# Percona TokuMX 2.0.1, and seed 002's TokuMXse RC6. The release names the server whose layout
# runs over it: tokumx-* TokuMX's, tokumxse-* mongod 3.0's as TokuMXse's tokuft engine made it.
FRACTAL_RELEASES = ("tokumx-1.0.4", "tokumx-2.0.1", "tokumxse-1.0.0-rc.6")
# PerconaFT has no release after these: `today` runs the newest tag here (settings.py).
FRACTAL_NEWEST = "tokumxse-1.0.0-rc.6"


class FractalOptions(RecordStoreOptions):
    """PerconaFT's settings as TokuMX (storage/env.cpp, cmdline.h) and TokuMXse
    (tokuft_engine_options.cpp, tokuft_dictionary_options.cpp) set them; unset (None) takes the
    release's server's own (the runner names each source: src/engines/fractal.rs)."""
    version: Literal[FRACTAL_RELEASES] = "tokumx-2.0.1"
    cache_size_mb: int | None = Field(None, ge=1)        # None: half of the machine's memory (both servers)
    checkpoint_s: int = Field(60, ge=0)                  # TokuMX --checkpointPeriod; TokuMXse --syncdelay
    log_flush_ms: int = Field(100, ge=0, le=300)         # TokuMX --logFlushPeriod; TokuMXse ...JournalCommitInterval
    lock_timeout_ms: int | None = Field(None, ge=0)      # None: TokuMX 4000, TokuMXse 100
    locktree_max_mb: int | None = Field(None, ge=1)      # None: TokuMX a tenth of the cache, TokuMXse 64
    cleaner_period_s: int = Field(2, ge=0)
    cleaner_iterations: int = Field(5, ge=0)
    fs_redzone_percent: int = Field(5, ge=0, le=100)
    direct_io: bool = False
    compress_buffers_before_eviction: bool | None = None  # None: TokuMX 2.x the engine's (on), TokuMXse off
    # Every dictionary's (TokuMX's defaults: pageSize 4MB, readPageSize 64KB, zlib, fanout 16).
    page_size_kb: int = Field(4096, ge=64)
    read_page_size_kb: int = Field(64, ge=1)
    compression: Literal["zlib", "quicklz", "lzma", "none"] = "zlib"
    fanout: int | None = Field(None, ge=4)               # None: 16 (fixed in 1.x)
    fast_updates: bool = False                           # TokuMX 2.x's fastUpdates server parameter


MMAP_LOCKS = ("database", "collection", "none")


class LMDBOptions(RecordStoreOptions):
    map_size_gb: int = Field(64, ge=1)
    readahead: bool = False
    # The mmap stand-in emulates MMAPv1's reader-writer lock: per database (MongoDB 2.2 to 2.6),
    # per collection (3.0), or none (LMDB's own: one writer, readers never wait). Unset: the
    # lock of the release the experiment's post ran (mmap_lock_for).
    mmap_lock: Literal[MMAP_LOCKS] | None = None


# The MongoDB release each family's post measured MMAPv1 on: Flashback's post ran 2.6, the
# TokuMX posts of 2013 ran 2.2 and 2.4, the LinkBench, iibench and sysbench posts 3.0.
POST_MONGODB_RELEASE = {"flashback": (2, 6), "tokumx": (2, 4), "linkbench": (3, 0), "iibench": (3, 0),
                        "sysbench": (3, 0)}


def mmap_lock_for(family: str) -> str:
    """The lock MMAPv1 took in the release the family's post ran: one per database from 2.2
    through 2.6, one per collection from 3.0 (its release notes: collection-level locking for
    MMAPv1). A family with no release listed gets 3.0's, the last MMAPv1 the posts ran."""
    return "database" if POST_MONGODB_RELEASE.get(family, (3, 0)) < (3, 0) else "collection"


@dataclass(frozen=True)
class Engine:
    name: str                # `engine:` in a params file
    display: str             # how reports name it
    options: type[RecordStoreOptions]
    mongod_engine: str       # the storage engine it stands for under TARGET=mongod
    # Its options as mongod settings (mongod/spec.py keys), for the implied `mongod:` block.
    mongod_settings: Callable[[dict], dict]
    # (bytes, how) its own log adds to the data of a load of `data_bytes`, for the space check.
    log_bytes: Callable[[dict, int], tuple[int, str]]
    # The environment its embedded runner starts with, over the runner's own (recorded per system).
    runner_env: dict = field(default_factory=dict)


def _wiredtiger_settings(options: dict) -> dict:
    return {"table_type": options.get("table_type", "btree"), "block_compressor": options.get("block_compressor"),
            "syncdelay_s": options.get("checkpoint_s"), "journal": None if options.get("log", True) else False,
            "journal_compressor": options.get("journal_compressor"), "cache_size_mb": options.get("cache_size_mb")}


WIREDTIGER_LOG_FILE = 100 * MB      # WiredTiger's log file_max default


def _wiredtiger_log(options: dict, data_bytes: int) -> tuple[int, str]:
    if not options.get("log", True):
        return 0, ""
    return 2 * WIREDTIGER_LOG_FILE, "WiredTiger's log file and the one it preallocates"


ROCKSDB_WRITE_BUFFERS = (64, 4)     # MongoRocks' write_buffer_size (MB) and max_write_buffer_number


def _rocksdb_log(options: dict, data_bytes: int) -> tuple[int, str]:
    buffer_mb = options.get("write_buffer_mb") or ROCKSDB_WRITE_BUFFERS[0]
    buffers = options.get("max_write_buffers") or ROCKSDB_WRITE_BUFFERS[1]
    return (min(data_bytes, buffer_mb * buffers * MB),
            f"RocksDB's write-ahead log of its {buffers} x {buffer_mb} MB write buffers")


def _lmdb_oplog_ring(options: dict, counted_bytes: int) -> tuple[int, str]:
    """The part of the oplog's ring the space estimate has not counted yet: it counts the oplog
    as the copy a load leaves, min(data, oplog size), and passes data + that copy here, so the
    copy is half of it below the oplog's size; the ring takes its whole size at creation."""
    if not options.get("oplog"):
        return 0, ""
    ring = options.get("oplog_size_mb", 1024) * MB
    return max(0, ring - counted_bytes // 2), "the rest of the oplog's ring, preallocated in full (as MMAPv1's was)"


def _fractal_settings(options: dict) -> dict:
    """A fractal system as a server: TokuMX 2.x (--cacheSize, --checkpointPeriod, default*
    parameters, fastUpdates) for a tokumx release, TokuMXse's tokuft engine otherwise."""
    tokumx = str(options.get("version", "tokumx-2.0.1")).startswith("tokumx-")
    read_page = options.get("read_page_size_kb")
    out = {"engine": "tokumx" if tokumx else "tokuft", "cache_size_mb": options.get("cache_size_mb"),
           "block_compressor": options.get("compression"), "fanout": options.get("fanout"),
           "read_page_size": read_page * 1024 if read_page else None}
    if tokumx:
        out.update(checkpoint_period_s=options.get("checkpoint_s"), fast_updates=options.get("fast_updates") or None,
                   log_flush_period_ms=options.get("log_flush_ms"))
    else:
        out["syncdelay_s"] = options.get("checkpoint_s")
    return out


def _fractal_log(options: dict, data_bytes: int) -> tuple[int, str]:
    # The log is trimmed at each checkpoint: at most the log of one checkpoint period's writes,
    # which a load's data bounds.
    return min(data_bytes, 1 << 30), "PerconaFT's log (tokulog files) until the next checkpoint trims it"


def full_options(engine: str, options: dict) -> dict:
    """Every option of `engine`, its defaults filled in and the values checked: what the native
    runner reads (it keeps no defaults of its own: lib/native/src/engines/mod.rs, Options)."""
    return ENGINES[engine].options(**options).model_dump()


def defaults_json() -> str:
    """Each engine's options at their defaults, as the native runner's Rust tests read them
    (lib/native/tests/data/engine_options.json, written by `python -m enginebench engine-options`
    and checked by lib/tests/test_registry.py)."""
    import json
    return json.dumps({name: full_options(name, {}) for name in ENGINES}, indent=2, sort_keys=True) + "\n"


ENGINES: dict[str, Engine] = {e.name: e for e in (
    Engine("wiredtiger", "WiredTiger", WiredTigerOptions, "wiredTiger", _wiredtiger_settings, _wiredtiger_log),
    Engine("rocksdb", "RocksDB", RocksDBOptions, "rocksdb",
           lambda o: {"block_compressor": o.get("compression"), "cache_size_mb": o.get("cache_size_mb")}, _rocksdb_log),
    # LMDB's memory-mapped B+tree stands in for MMAPv1; it keeps no log of its own, but its
    # oplog is a ring created at full size.
    Engine("lmdb", "LMDB (mmap)", LMDBOptions, "mmapv1", lambda o: {}, _lmdb_oplog_ring),
    # PerconaFT: TokuMX's or TokuMXse's, by its release (the mongod engine follows it).
    # tcmalloc's aggressive decommit: TokuMX linked jemalloc, which hands the memory PerconaFT frees
    # back to the system; tcmalloc by default keeps it, and a load's serialised nodes then held as
    # much again as the cache outside it (measured: 300 MB of RSS for a 100 MB cache, 209 MB with this).
    Engine("fractal", "PerconaFT (fractal)", FractalOptions, "tokumx", _fractal_settings, _fractal_log,
           runner_env={"TCMALLOC_AGGRESSIVE_DECOMMIT": "true"}),
)}
NAMES = tuple(ENGINES)

