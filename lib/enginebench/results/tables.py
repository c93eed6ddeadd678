"""Tidy tables of one system's run, built from the runner's events and the OS samples.

intervals: one row per (system, phase, interval) with op totals and per-op OS metrics.
ops:       one row per (system, phase, interval, op type) with latency percentiles (HdrHistogram).
ticks:     one row per (system, phase, interval, tick): the rate per second (a tick is a second
           when the interval is whole seconds), counted as the interval's rate is.
samples:   the raw OS samples, one row per sample time.
"""
from __future__ import annotations


from hdrh.histogram import HdrHistogram

from ..metrics.normalize import interval_metrics, per_op

PERCENTILES = (("p50_us", 50.0), ("p95_us", 95.0), ("p99_us", 99.0), ("p999_us", 99.9))
DEFAULT_ACCOUNTING = {"rate": "count", "rate_ops": None, "per_op": None}


def decode_histogram(encoded: str | None) -> HdrHistogram | None:
    return HdrHistogram.decode(encoded) if encoded else None


def op_rows(system: str, event: dict) -> list[dict]:
    rows = []
    for op, stats in event["ops"].items():
        hist = decode_histogram(stats["hist"])
        row = {"system": system, "phase": event["phase"], "interval": event["interval"], "op": op,
               "count": stats["count"], "items": stats["items"], "errors": stats["errors"],
               "slow": stats.get("slow", 0),
               "op_cpu_s": stats["cpu_ns"] / 1e9,
               # The runner's (the library's definition, computed where it is cheap); the library's
               # own walks every bucket, seconds a run.
               "mean_us": stats["mean_us"] if "mean_us" in stats else hist.get_mean_value() if hist else None,
               "max_us": hist.get_max_value() if hist else None, "hist": stats["hist"]}
        for name, pct in PERCENTILES:
            row[name] = hist.get_value_at_percentile(pct) if hist else None
        intended = decode_histogram(stats.get("intended_hist"))
        row["intended_hist"] = stats.get("intended_hist")
        row["intended_p50_us"] = intended.get_value_at_percentile(50.0) if intended else None
        row["intended_p99_us"] = intended.get_value_at_percentile(99.0) if intended else None
        rows.append(row)
    return rows


def counted(per_op: dict[str, tuple[int, int]], accounting: dict | None) -> int:
    """What a rate counts, from (calls, items) per op type: calls or documents, of every op type
    or of the ones the workload names (its accounting)."""
    accounting = accounting or DEFAULT_ACCOUNTING
    which = 1 if accounting["rate"] == "items" else 0
    return sum(pair[which] for name, pair in per_op.items()
               if accounting["rate_ops"] is None or name in accounting["rate_ops"])


def counted_ops(event: dict) -> tuple[float, float | None]:
    """What an interval's throughput counts, and what its per-op figures divide by (None: the
    same). The workload says which (calls or documents, of which ops): e.g. LinkBench's load
    counts all documents inserted per second, per node inserted, as in the post's load tables."""
    ops = event["ops"]
    accounting = event.get("accounting") or DEFAULT_ACCOUNTING
    numerator = counted({name: (s["count"], s["items"]) for name, s in ops.items()}, accounting)
    normaliser = ops.get(accounting["per_op"], {}).get("items", 0) or None if accounting["per_op"] else None
    return numerator, normaliser


def tick_rows(system: str, event: dict, tick_s: float) -> list[dict]:
    """One row per tick of an interval event, its rate counted as the interval's (counted):
    the per-second rate and the interval's are one definition at two resolutions."""
    ticks = {name: stats.get("ticks") or [] for name, stats in event["ops"].items()}
    n = max((len(t) for t in ticks.values()), default=0)
    rows = []
    for i in range(n):
        t0 = event["t_start"] + i * tick_s
        seconds = min(tick_s, event["t_end"] - t0)
        ops = counted({name: tuple(t[i]) if i < len(t) else (0, 0) for name, t in ticks.items()},
                      event.get("accounting"))
        if seconds <= 1e-9:  # past a phase that ended mid-interval: the runner counts nothing there
            if rows:
                rows[-1]["ops"] += ops
                rows[-1]["ops_per_s"] = rows[-1]["ops"] / rows[-1]["seconds"]
            continue
        rows.append({"system": system, "phase": event["phase"], "interval": event["interval"], "tick": i,
                     "t_start": t0, "seconds": seconds, "ops": ops, "ops_per_s": ops / seconds})
    return rows


def interval_rate(event: dict) -> float:
    """An interval event's throughput, as the report's tables count it."""
    seconds = event["t_end"] - event["t_start"]
    return counted_ops(event)[0] / seconds if seconds > 0 else 0.0


def interval_row(system: str, event: dict, samples: list[dict]) -> dict:
    seconds = event["t_end"] - event["t_start"]
    ops = event["ops"]
    requests = sum(s["count"] for s in ops.values())
    items = sum(s["items"] for s in ops.values())
    op_cpu_s = sum(s["cpu_ns"] for s in ops.values()) / 1e9
    thread_cpu_s = event["thread_cpu_ns"] / 1e9
    deltas = interval_metrics(samples, event["t_start"], event["t_end"])
    numerator, normaliser = counted_ops(event)
    row = {"system": system, "phase": event["phase"], "interval": event["interval"],
           "t_start": event["t_start"], "t_end": event["t_end"], "seconds": seconds,
           "requests": requests, "items": items, "ops": numerator,
           "per_op_denominator": normaliser if normaliser is not None else numerator,
           # Client CPU: worker-thread CPU outside the timed store calls (generating the workload).
           "client_cpu_s": max(0.0, thread_cpu_s - op_cpu_s), "op_cpu_s": op_cpu_s}
    row.update(deltas)
    row.update(per_op(deltas, numerator, seconds, normaliser))
    denominator = row["per_op_denominator"]
    row["client_cpu_us_per_op"] = row["client_cpu_s"] * 1e6 / denominator if denominator else None
    for key, value in (event.get("engine") or {}).items():
        row[f"engine.{key}"] = value
    return row
