"""The named settings every system runs with: `2015` or `today`.

- `2015`: the posts' server (MongoDB 3.0/3.2) and their engines' 2015 releases' defaults, emulated
  where today's engine allows, plus the post's own server options (`post_settings:` of its params
  file, e.g. the LinkBench post's syncPeriodSecs 600 and journalCompressor none).
- `today`: MongoDB 8.0's connection and create strings and the engines' current defaults.

A setting is an engine option (engines.py) the profile gives a value; an option the params set on
a system by hand always wins. Every value names its source (SOURCES), and the README's engine
table lists them. The engine release (WiredTiger 11.3.1, 3.2.1 or 2.9.2, or a post's own tree such
as mongodb-3.0.7) is an option of its own, set apart from these; the fractal tree's too, except that
`today` names one (PerconaFT has no release after 2015: `today` runs the newest tag the runner
builds).
"""
from __future__ import annotations

from .engines import WT_TAG_RELEASES

SETTINGS = ("2015", "today")

# RocksDB 4.1 (what MongoRocks r3.2.0 built against at the post's date) where 7.8.3's defaults
# differ, in RocksDB's own option syntax (MongoRocks' storage.rocksdb.configString).
ROCKSDB_2015 = ";".join((
    "allow_concurrent_memtable_write=false", "enable_write_thread_adaptive_yield=false",
    "level0_stop_writes_trigger=24", "compaction_pri=kByCompensatedSize",
    "soft_pending_compaction_bytes_limit=0", "hard_pending_compaction_bytes_limit=0",
    "delayed_write_rate=1048576"))

PROFILES: dict[str, dict[str, dict]] = {
    "2015": {
        "wiredtiger": {"journal_compressor": "snappy", "checkpoint_s": 60, "checkpoint_log_size_mb": 2048,
                       "session_max": 20000, "eviction_threads_min": 1, "eviction_threads_max": 4,
                       "eviction_dirty_target": 80, "eviction_dirty_trigger": 95, "close_idle_time_s": 100000,
                       "unlogged_user_tables": False, "insert_group": 1},
        "rocksdb": {"config_string": ROCKSDB_2015, "insert_group": 1, "tombstone_compaction_skips": 50000,
                    "tombstone_compaction_interval_s": 600, "soft_rate_limit": 2.5},
        "lmdb": {"insert_group": 1},
        # The release the system names (a post's own, in its params), with TokuMX's defaults.
        "fractal": {"checkpoint_s": 60, "log_flush_ms": 100, "cleaner_period_s": 2, "cleaner_iterations": 5,
                    "compression": "zlib", "page_size_kb": 4096, "read_page_size_kb": 64, "insert_group": 1},
    },
    "today": {
        "wiredtiger": {"journal_compressor": "snappy", "checkpoint_s": 60, "checkpoint_log_size_mb": 0,
                       "session_max": 33000, "eviction_threads_min": 4, "eviction_threads_max": 4,
                       "eviction_dirty_target": None, "eviction_dirty_trigger": None, "close_idle_time_s": 600,
                       "unlogged_user_tables": "with_oplog", "insert_group": 64},
        "rocksdb": {"config_string": "", "insert_group": 64, "tombstone_compaction_skips": 0, "soft_rate_limit": 0},
        "lmdb": {"insert_group": 64, "mmap_lock": "none"},
        "fractal": {"version": "tokumxse-1.0.0-rc.6", "checkpoint_s": 60, "log_flush_ms": 100, "cleaner_period_s": 2,
                    "cleaner_iterations": 5, "compression": "zlib", "page_size_kb": 4096, "read_page_size_kb": 64,
                    "insert_group": 64},
    },
}

# A WiredTiger tree as a post's MongoDB release shipped it (engines.WT_TAG_RELEASES), under either
# setting: `2015`'s values, with the tree's own defaults where 11.3.1 is made to emulate 2.7.0's
# and its own mongod's journal flusher (the runner's MongodTree: none at 3.0.x and 3.1.5, 100 ms
# at 3.2.0-rc).
TAGGED_TREE = {"eviction_threads_min": 1, "eviction_dirty_target": None, "eviction_dirty_trigger": None,
               "journal_commit_ms": None}

# (setting, engine, option) -> where its value comes from.
SOURCES: dict[tuple[str, str, str], str] = {
    ("2015", "wiredtiger", "journal_compressor"): "mongod 3.0/3.2 default (wiredtiger_global_options.cpp, journalCompressor snappy)",
    ("2015", "wiredtiger", "checkpoint_s"): "mongod 3.x --syncdelay default 60 (mongod_options.cpp), as checkpoint=(wait=60)",
    ("2015", "wiredtiger", "checkpoint_log_size_mb"): "mongod 3.0.7/3.2.0 WiredTigerKVEngine: checkpoint=(log_size=2GB)",
    ("2015", "wiredtiger", "session_max"): "mongod 3.2.0 WiredTigerKVEngine: session_max=20000",
    ("2015", "wiredtiger", "eviction_threads_min"): "WiredTiger 2.7.0 default (mongod 3.2.0 sets only threads_max)",
    ("2015", "wiredtiger", "eviction_threads_max"): "mongod 3.2.0 WiredTigerKVEngine: eviction=(threads_max=4)",
    ("2015", "wiredtiger", "eviction_dirty_target"): "WiredTiger 2.7.0 (in mongod 3.2.0) dist/api_data.py: 80% (5% from 2.9.0)",
    ("2015", "wiredtiger", "eviction_dirty_trigger"): "WiredTiger 2.7.0 dist/api_data.py: 95% (20% from 2.9.0)",
    ("2015", "wiredtiger", "close_idle_time_s"): "mongod 3.2.0 WiredTigerKVEngine: file_manager=(close_idle_time=100000)",
    ("2015", "wiredtiger", "unlogged_user_tables"): "mongod 3.x journaled every table (no per-table log setting)",
    ("2015", "wiredtiger", "insert_group"): "mongod 3.2.0 batch_executor.cpp insertOne: one document per WriteUnitOfWork",
    ("2015", "rocksdb", "config_string"): "RocksDB 4.1 defaults where 7.8.3's differ (options.h, util/options.cc at v4.1): "
                                          "one memtable writer, no adaptive yield, L0 stop at 24, compaction by "
                                          "compensated size, no pending-compaction limits, delayed writes at 1 MB/s",
    ("2015", "rocksdb", "insert_group"): "mongod 3.2.0 batch_executor.cpp insertOne: one document per WriteUnitOfWork",
    ("2015", "rocksdb", "tombstone_compaction_skips"): "mongo-rocks r3.2.0 rocks_compaction_scheduler.h: "
                                                       "kSkippedDeletionsThreshold 50000 per iterator step (perf "
                                                       "context internal_delete_skipped_count), SuggestCompactRange "
                                                       "of the collection or index, never the oplog",
    ("2015", "rocksdb", "soft_rate_limit"): "mongo-rocks r3.2.0 rocks_engine.cpp: soft_rate_limit = 2.5; RocksDB 4.1-4.3 "
                                            "column_family.cc delays writes to delayed_write_rate while a level below "
                                            "L0 scores over it; kept by the runner over 7.8's own delay (rocks_throttle.rs)",
    ("2015", "rocksdb", "tombstone_compaction_interval_s"): "mongo-rocks r3.2.0 rocks_compaction_scheduler.h: "
                                                            "kMinCompactionIntervalMins 10, one timer per engine, "
                                                            "started when it opens",
    ("2015", "lmdb", "insert_group"): "mongod 3.0 batch_executor.cpp insertOne: one document per WriteUnitOfWork",
    ("2015", "fractal", "checkpoint_s"): "TokuMX 1.0.4 / 2.0.1 cmdline.h checkpointPeriod 60 s (TokuMXse: --syncdelay 60)",
    ("2015", "fractal", "log_flush_ms"): "TokuMX cmdline.h logFlushPeriod 100 ms (TokuMXse tokuftEngineJournalCommitInterval 100)",
    ("2015", "fractal", "cleaner_period_s"): "TokuMX cmdline.h cleanerPeriod 2 s (TokuMXse tokuftEngineCleanerPeriod 2)",
    ("2015", "fractal", "cleaner_iterations"): "TokuMX cmdline.h cleanerIterations 5 (TokuMXse tokuftEngineCleanerIterations 5)",
    ("2015", "fractal", "compression"): "TokuMX storage/env.cpp db_open (1.0.4) and dictionary.cpp defaultCompression (2.0.1): "
                                        "zlib; TokuMXse tokuft_dictionary_options.cpp: zlib",
    ("2015", "fractal", "page_size_kb"): "TokuMX env.cpp db_open / defaultPageSize: 4 MB (TokuMXse: the same)",
    ("2015", "fractal", "read_page_size_kb"): "TokuMX env.cpp db_open / defaultReadPageSize: 64 KB (TokuMXse: the same)",
    ("2015", "fractal", "insert_group"): "TokuMX commits each insert call in one transaction (instance.cpp receivedInsert); "
                                         "TokuMXse, on mongod 3.0, one document per WriteUnitOfWork",
    ("today", "fractal", "version"): "PerconaFT has no current release: the newest release tag here (TokuMXse RC6, "
                                     "2015-05-14), under mongod's record store, the last server layout it had",
    ("today", "fractal", "checkpoint_s"): "unchanged: PerconaFT has no release after 2015 (mongod's --syncdelay 60)",
    ("today", "fractal", "log_flush_ms"): "unchanged: PerconaFT has no release after 2015",
    ("today", "fractal", "cleaner_period_s"): "unchanged: PerconaFT has no release after 2015",
    ("today", "fractal", "cleaner_iterations"): "unchanged: PerconaFT has no release after 2015",
    ("today", "fractal", "compression"): "unchanged: PerconaFT has no release after 2015",
    ("today", "fractal", "page_size_kb"): "unchanged: PerconaFT has no release after 2015",
    ("today", "fractal", "read_page_size_kb"): "unchanged: PerconaFT has no release after 2015",
    ("today", "fractal", "insert_group"): "mongod 3.4+ write_ops_exec.cpp: internalInsertMaxBatchSize 64",
    ("today", "wiredtiger", "journal_compressor"): "mongod 8.0 default (wiredtiger_global_options.idl: snappy)",
    ("today", "wiredtiger", "checkpoint_s"): "mongod 8.0's checkpointer every syncdelay (60 s), no log_size trigger",
    ("today", "wiredtiger", "checkpoint_log_size_mb"): "mongod 3.6+ passes no checkpoint log_size (DOCS-12495)",
    ("today", "wiredtiger", "session_max"): "mongod 8.0 WiredTigerKVEngine: session_max=33000 (SERVER-40162)",
    ("today", "wiredtiger", "eviction_threads_min"): "mongod 8.0 WiredTigerKVEngine: eviction=(threads_min=4,threads_max=4)",
    ("today", "wiredtiger", "eviction_threads_max"): "mongod 8.0 WiredTigerKVEngine: eviction=(threads_min=4,threads_max=4)",
    ("today", "wiredtiger", "eviction_dirty_target"): "WiredTiger 11.3 default (5%; mongod 8.0 sets none)",
    ("today", "wiredtiger", "eviction_dirty_trigger"): "WiredTiger 11.3 default (20%; mongod 8.0 sets none)",
    ("today", "wiredtiger", "close_idle_time_s"): "mongod 8.0 file_manager=(close_idle_time=600)",
    ("today", "wiredtiger", "unlogged_user_tables"): "mongod 8.0 WiredTigerUtil::useTableLogging: a replica set's user "
                                                     "tables log=(enabled=false), the oplog logged",
    ("today", "wiredtiger", "insert_group"): "mongod 3.4+ write_ops_exec.cpp: internalInsertMaxBatchSize 64",
    ("today", "rocksdb", "config_string"): "RocksDB 7.8.3's own defaults (no MongoDB release ships RocksDB today)",
    ("today", "rocksdb", "insert_group"): "mongod 3.4+ write_ops_exec.cpp: internalInsertMaxBatchSize 64",
    ("today", "rocksdb", "soft_rate_limit"): "RocksDB 7.8.3 has no soft_rate_limit (its pending-compaction-bytes "
                                             "delay, at its own defaults, is what stalls it)",
    ("today", "rocksdb", "tombstone_compaction_skips"): "no MongoDB release ships RocksDB today: RocksDB 7.8.3's own "
                                                        "compactions only",
    ("today", "lmdb", "insert_group"): "mongod 3.4+ write_ops_exec.cpp: internalInsertMaxBatchSize 64",
    ("today", "lmdb", "mmap_lock"): "MMAPv1 is gone (removed in 4.2): LMDB's own concurrency",
}


def profile(setting: str, engine: str, options: dict) -> dict:
    """The option values `setting` gives a system of `engine` with these options."""
    if engine == "wiredtiger" and options.get("version") in WT_TAG_RELEASES:
        # A post's own tree runs as its own mongod ran it, whatever the setting (MongoDB 8.0's
        # strings name options such a tree does not have, per-table logging among them), and needs
        # no emulation of its defaults: it has them; the runner opens it with its own mongod's
        # strings (lib/native/src/engines/mongod_layout.rs, MongodTree).
        return {**PROFILES["2015"][engine], **TAGGED_TREE}
    out = dict(PROFILES[setting].get(engine, {}))
    if out.get("unlogged_user_tables") == "with_oplog":
        out["unlogged_user_tables"] = bool(options.get("oplog"))
    return out


def release(setting: str, engine: str, explicit: dict, defaults: dict, post: dict | None):
    """The engine release a system runs: its own, else (2015) the one its post names in
    `post_settings` (the post's own WiredTiger tree), else the setting's, else the engine's default."""
    if "version" in explicit:
        return explicit["version"]
    if setting == "2015" and post and "version" in post:
        return post["version"]
    return PROFILES[setting].get(engine, {}).get("version", defaults.get("version"))


def resolve(engine: str, setting: str, explicit: dict, defaults: dict, post: dict | None) -> dict:
    """A system's options: the engine's defaults, then the setting's values, then (for 2015)
    the post's own server options, then what the params set on the system by hand."""
    options = {**defaults}
    options.update(profile(setting, engine, {**defaults, **explicit, "version": release(setting, engine, explicit, defaults, post)}))
    if setting == "2015" and post:
        options.update(post)
    options.update(explicit)
    return options


def banner(params: dict) -> str:
    """A run's settings, for its report's first lines: one setting for every system, or which
    system ran which."""
    by_setting: dict[str, list[str]] = {}
    for system in params["systems"]:
        by_setting.setdefault(system.get("settings") or params.get("settings", "2015"), []).append(system["label"])
    post = params.get("post_settings") or {}
    if len(by_setting) == 1:
        return describe(next(iter(by_setting)), post)
    return " ".join(f"{', '.join(labels)}: {describe(setting, post)}" for setting, labels in by_setting.items())


def describe(setting: str, post: dict[str, dict] | None) -> str:
    """One line for a report's first lines."""
    if setting == "today":
        return "Settings: today (MongoDB 8.0's connection and create strings, the engines' current defaults)."
    own = "; ".join(f"{engine}: " + ", ".join(f"{k} {v}" for k, v in values.items())
                    for engine, values in (post or {}).items() if values)
    return ("Settings: 2015 (MongoDB 3.2.0 and its engines' 2015 defaults, emulated where today's engines allow"
            + (f"; the post's own server options: {own}" if own else "") + ").")


def settings_page() -> str:
    """docs/settings.md: the named settings' table, then each experiment's own server options
    (its params file's `post_settings:`, applied under 2015). `python -m enginebench settings`
    prints it; lib/tests checks the page against it."""
    import yaml
    from .paths import params_dir
    posts = []
    for path in sorted(params_dir().glob("*.yaml")):
        own = (yaml.safe_load(path.read_text()) or {}).get("post_settings") or {}
        for engine, values in own.items():
            posts.append(f"- {path.stem}: {engine} " + ", ".join(f"`{k}` {v}" for k, v in values.items()))
    return ("# The named settings\n\n"
            "Every system runs under one named setting (`settings: 2015 | today` in a params file, or per\n"
            "system; `--set settings=today` by hand). An option set on a system by hand always wins. The\n"
            "engine release (WiredTiger 11.3.1, 3.2.1 or 2.9.2, or a post's own tree) is an option of its own; the\n"
            "fractal tree's is set by `today` (PerconaFT has no release after 2015: `today` runs its newest tag\n"
            "here) and otherwise by the system or its post's `post_settings`. This page is printed by\n"
            "`python -m enginebench settings` from lib/enginebench/settings.py; a test keeps them equal.\n\n"
            + markdown_table()
            + "\nUnder `2015`, each post's own server options come on top (the params file's `post_settings:`):\n\n"
            + "\n".join(posts) + "\n"
            + "\nA WiredTiger tree as a post's MongoDB release shipped it (`version: mongodb-3.0.4`, `2.6.1`,\n"
              "`mongodb-3.0.7`, `mongodb-3.2.0-rc1`) needs none of 11.3.1's emulation of 2015's defaults: it has\n"
              "them. Under either setting it runs with `2015`'s values and " + ", ".join(f"`{k}` {'(its own)' if v is None else v}"
                                                           for k, v in TAGGED_TREE.items())
            + ", and the runner opens it with its own mongod's `wiredtiger_open` string, create strings and\n"
              "journal flusher (none at 3.0.x and 3.1.5, every 100 ms at 3.2.0-rc; "
              "lib/native/src/engines/mongod_layout.rs, `MongodTree`).\n")


def markdown_table() -> str:
    """The table of settings_page: per engine and option, its value under each named setting and
    where each value comes from (SOURCES)."""
    lines = ["| engine | option | 2015 | today | source (2015) | source (today) |", "|---|---|---|---|---|---|"]
    engines = dict.fromkeys(engine for setting in SETTINGS for engine in PROFILES[setting])
    for engine in engines:
        options = dict.fromkeys(o for setting in SETTINGS for o in PROFILES[setting].get(engine, {}))
        for option in options:
            values = [PROFILES[s].get(engine, {}).get(option, "(engine default)") for s in SETTINGS]
            cells = ["(engine default)" if v is None else str(v).replace("|", "\\|").replace(";", "; ")
                     for v in values]
            sources = [SOURCES.get((s, engine, option), "") for s in SETTINGS]
            lines.append(f"| {engine} | `{option}` | {cells[0]} | {cells[1]} | {sources[0]} | {sources[1]} |")
    return "\n".join(lines) + "\n"
