"""An engine's own counters over each phase, as the runner sampled them at every interval (the
intervals table's `engine.<counter>` columns). For RocksDB, what MongoRocks did beyond RocksDB
itself: when its write throttle delayed writes, and its tombstone compactions.

For the fractal tree, from PerconaFT's engine status (ft/cachetable.cc, ft/checkpoint.cc,
ft/ft-ops.cc, the logger and the locktree): the cache's limit and the most of it in use, its
misses, evictions and prefetches (the three the TokuMX post graphed to explain its dips), the
checkpoints taken and their seconds (2.x releases count them), the bytes of tree nodes and of log
it wrote, and its lock waits and timeouts (2.x). A counter the release does not keep is left
empty, never zero."""
from __future__ import annotations

import polars as pl

from .rundata import RunData

MB = 1 << 20
# (column, the counters it adds up, how a phase reads them, divisor): `delta` is the phase's
# increase (from the interval before it), `max` the highest value it saw, `last` its last.
FRACTAL = (
    ("cache limit, MB", ("ft.CT_SIZE_LIMIT",), "last", MB),
    ("cache in use at most, MB", ("ft.CT_SIZE_CURRENT",), "max", MB),
    ("cache misses", ("ft.CT_MISS",), "delta", 1),
    ("evictions", ("ft.CT_EVICTIONS",), "delta", 1),
    ("prefetches", ("ft.CT_PREFETCHES",), "delta", 1),
    ("checkpoints", ("ft.CP_CHECKPOINT_COUNT",), "delta", 1),
    ("checkpointing, s", ("ft.CP_TIME_CHECKPOINT_DURATION",), "delta", 1),
    ("nodes written, MB", ("ft.FT_DISK_FLUSH_LEAF_BYTES", "ft.FT_DISK_FLUSH_NONLEAF_BYTES",
                           "ft.FT_DISK_FLUSH_LEAF_BYTES_FOR_CHECKPOINT", "ft.FT_DISK_FLUSH_NONLEAF_BYTES_FOR_CHECKPOINT"),
     "delta", MB),
    ("log written, MB", ("ft.LOGGER_BYTES_WRITTEN",), "delta", MB),
    ("lock waits", ("ft.LTM_WAIT_COUNT",), "delta", 1),
    ("lock timeouts", ("ft.LTM_TIMEOUT_COUNT",), "delta", 1),
)
# MongoRocks' own behaviours the runner keeps (lib/native/src/engines/rocks_throttle.rs and
# rocksdb.rs): its soft_rate_limit's write delays, the highest level score it read, its
# tombstone compactions. A run made without them (settings `today`) leaves them empty.
ROCKSDB = (
    ("write delays begun (soft_rate_limit)", ("mongorocks.soft_rate_limit_delays",), "delta", 1),
    ("writes delayed, s", ("mongorocks.soft_rate_limit_delayed_ms",), "delta", 1000),
    ("highest level score", ("mongorocks.max_level_score_x100",), "max", 100),
    ("tombstone compactions", ("mongorocks.tombstone_compactions",), "delta", 1),
)
ENGINES = {"fractal": FRACTAL, "rocksdb": ROCKSDB}


def _series(rows: pl.DataFrame, counters: tuple[str, ...]) -> list[float | None]:
    """The counters' sum at each interval (None where the release keeps none of them)."""
    columns = [f"engine.{c}" for c in counters if f"engine.{c}" in rows.columns]
    if not columns:
        return [None] * rows.height
    return rows.select(pl.sum_horizontal(columns).cast(pl.Float64)).to_series().to_list()


def table(run: RunData, engine: str = "fractal") -> pl.DataFrame:
    """One row per system of `engine` and phase: its counters over the phase."""
    spec = ENGINES[engine]
    out = []
    for system in run.systems:
        if system["engine"] != engine or run.intervals.is_empty():
            continue
        rows = run.intervals.filter(pl.col("system") == system["label"]).sort("t_end")
        if rows.is_empty():
            continue
        phases = rows["phase"].to_list()
        values = {name: _series(rows, counters) for name, counters, _, _ in spec}
        for phase in dict.fromkeys(phases):
            at = [i for i, p in enumerate(phases) if p == phase]
            row = {"system": system["label"], "phase": phase}
            for name, _, how, divisor in spec:
                series = values[name]
                mine = [series[i] for i in at if series[i] is not None]
                if not mine:
                    row[name] = None
                    continue
                if how == "delta":
                    before = series[at[0] - 1] if at[0] > 0 and series[at[0] - 1] is not None else 0.0
                    value = mine[-1] - before
                else:
                    value = max(mine) if how == "max" else mine[-1]
                row[name] = round(value / divisor, 1) if divisor != 1 else int(value)
            out.append(row)
    return pl.DataFrame(out) if out else pl.DataFrame()
