"""Each system's engine settings as one table (one row per system, one column per setting), as
the runner recorded them when it opened the store: what ran, not what the params asked for.

A system that never opened its store has no recorded settings; its row shows the params' options
and says so in its `settings from` column."""
from __future__ import annotations

import polars as pl

from .rundata import RunData

# Recorded, but not settings: the version is its own column, the banner repeats it, and the
# engine's raw configuration strings (*_config) restate the settings in the engine's syntax.
NOT_SETTINGS = {"release", "banner"}
# The settings a reader compares first (cache, compression, blocks, filters, journal, oplog, lock),
# in this order; any others follow as the systems recorded them.
FIRST = ("cache_size_mb", "cache", "map_size_gb", "table_type", "block_compressor", "compression",
         "compression_per_level", "block_size_kb", "bloom_bits_per_key", "lsm_chunk_mb", "log", "wal", "wal_sync",
         "journal_commit_ms", "sync", "checkpoint_s", "oplog", "oplog_size_mb", "emulated_lock")


def _flat(settings: dict, prefix: str = "") -> dict[str, object]:
    """Nested settings (a mongod's YAML options) as dotted keys, e.g. storage.wiredTiger.cacheSizeGB."""
    out: dict[str, object] = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, f"{name}."))
        elif key not in NOT_SETTINGS and not key.endswith("_config"):
            out[name] = value
    return out


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def engine_name(run: RunData, system: dict) -> str:
    """What ran a system: its engine; on TARGET=uri, where every system is the same server, the
    server as it named itself and its storage engine as serverStatus reported it."""
    reported = system.get("engine_reported")
    if (run.manifest.get("target") or {}).get("kind") != "uri":
        return reported or system["engine"]
    server = (system.get("engine_config") or {}).get("server_process") or "the server at the URI"
    engine = reported if reported and reported != "unknown" else "not reported"
    return f"{server} (storage engine: {engine})"


def engine_configuration(run: RunData) -> pl.DataFrame:
    """One row per system: label, engine, version, its named settings, where the recorded values
    come from, then each setting."""
    rows = []
    for system in run.systems:
        recorded = system.get("engine_config")
        settings = _flat(recorded if recorded else {k: v for k, v in system["options"].items() if k != "version"})
        rows.append({"system": system["label"], "engine": engine_name(run, system),
                     "version": system.get("version") or system["options"].get("version") or "not recorded",
                     # the named settings (docs/settings.md gives each value and its source)
                     "settings": system.get("settings") or run.manifest["params"].get("settings") or "2015",
                     "settings from": "the runner" if recorded else f"the params ({system.get('status')})",
                     **{key: _text(value) for key, value in settings.items()}})
    seen = list(dict.fromkeys(key for row in rows for key in row))
    columns = seen[:5] + [c for c in FIRST if c in seen] + [c for c in seen[5:] if c not in FIRST]
    return pl.DataFrame([{c: row.get(c) for c in columns} for row in rows],
                        schema={c: pl.Utf8 for c in columns})


IDENTITY = ("system", "engine", "version", "settings", "settings from")


def split_settings(table: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """What a reader compares: the settings whose value differs between the systems that have
    them, as a table; and, one line per group, the settings every system of the group shares
    ('every system: oplog yes, ...', 'rocksdb only: bloom_bits_per_key 10, ...')."""
    differing, shared = [], {}
    for column in [c for c in table.columns if c not in IDENTITY]:
        present = table.filter(pl.col(column).is_not_null())
        values = set(present[column].to_list())
        if not values:  # recorded by no system
            continue
        if len(values) > 1:
            differing.append(column)
            continue
        engines = sorted(set(present["engine"].to_list()))
        group = "every system" if present.height == table.height else " and ".join(engines) + " only"
        shared.setdefault(group, []).append(f"{column} {values.pop()}")
    lines = [f"{group}: {', '.join(settings)}" for group, settings in shared.items()]
    return table.select([*[c for c in IDENTITY if c in table.columns], *differing]), lines
