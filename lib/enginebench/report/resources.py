"""What the resource profile enforced and how close each system came to the emulated device."""
from __future__ import annotations

import altair as alt
import polars as pl

from . import palette
from .emulation import emulation_slice_ms, flag_note
from .rundata import RunData

MB = 1 << 20


def _measured(run: RunData, label: str) -> pl.DataFrame:
    """A system's intervals in its measured phases: the closed-loop "run" where there is one
    (LinkBench, sysbench, a replay; not a rate sweep's open-loop phases), else every phase after
    the load (TokuMX's client counts), else the load itself where it is what an experiment
    measures (iibench)."""
    if run.intervals.is_empty():
        return run.intervals
    rows = run.intervals.filter(pl.col("system") == label)
    for measured in (rows.filter(pl.col("phase") == "run"), rows.filter(pl.col("phase") != "load")):
        if len(measured):
            return measured
    return rows


def _observed(run: RunData, label: str, column: str) -> tuple[float | None, float | None]:
    """(mean, max) of a per-interval rate over the measured phases."""
    if run.intervals.is_empty() or column not in run.intervals.columns:
        return None, None
    rows = _measured(run, label)[column].drop_nulls()
    return (float(rows.mean()), float(rows.max())) if len(rows) else (None, None)


def resources_table(run: RunData) -> pl.DataFrame:
    rows = []
    for s in run.systems:
        res = s.get("resources") or {}
        memory = res.get("memory") or {}
        caps = res.get("io_caps") or {}
        read_col = "cg_read_iops" if res.get("io_method") else "read_iops"
        write_col = "cg_write_iops" if res.get("io_method") else "write_iops"
        read_mean, read_max = _observed(run, s["label"], read_col)
        write_mean, write_max = _observed(run, s["label"], write_col)
        cold = next((p for p in [s.get("cold_start")] if p), None)
        rows.append({
            "setup": s["label"],
            "memory limit MB": (memory.get("limit_bytes") or 0) // MB or res.get("memory_limit_mb"),
            "enforced by": res.get("memory_method") or "not enforced",
            "peak MB": None if memory.get("peak_bytes") is None else memory["peak_bytes"] // MB,
            "limit hits": memory.get("failcnt"), "OOM kills": memory.get("oom_kills"),
            "storage": res.get("storage_profile", "none") + ("" if res.get("io_method") or res.get("storage_profile", "none") == "none" else " (not enforced)"),
            "read IOPS cap": caps.get("read_iops"), "read IOPS mean/max": _pair(read_mean, read_max),
            "write IOPS cap": caps.get("write_iops"), "write IOPS mean/max": _pair(write_mean, write_max),
            "throttle slice ms": emulation_slice_ms(s),
            "cold start": (cold or {}).get("method", "none"),
        })
    return pl.DataFrame(rows)


def _pair(a, b):
    return "n/a" if a is None else f"{a:,.0f} / {b:,.0f}"


def caps_held(run: RunData) -> list[str]:
    """Plain sentences: for each system and cap, whether the observed IOPS stayed under it; then
    which latency percentiles the throttle's slice sets (report/emulation.py)."""
    out = []
    for s in run.systems:
        res = s.get("resources") or {}
        caps = res.get("io_caps") or {}
        if not res.get("io_method"):
            continue
        for kind, column in (("read", "cg_read_iops"), ("write", "cg_write_iops")):
            cap = caps.get(f"{kind}_iops")
            _, peak = _observed(run, s["label"], column)
            if not cap or peak is None:
                continue
            held = peak <= cap * 1.05
            line = (f"{s['label']}: {kind} IOPS issued by its group reached {peak:,.0f} (highest interval average) "
                    f"against a cap of {cap:,}: " + ("the cap held." if held else "the cap did not hold."))
            if kind == "write" and res.get("cgroup_version") == 1:
                _, device_peak = _observed(run, s["label"], "write_iops")
                line += (" cgroup v1 neither throttles nor attributes buffered writeback (the kernel's flusher "
                         "writes it), so this undercounts"
                         + (f"; the device saw up to {device_peak:,.0f} writes/s" if device_peak is not None else "")
                         + ("." if device_peak is None or device_peak <= cap * 1.05 else ", above the cap."))
            out.append(line)
    note = flag_note(run.systems)  # the caps' other effect: the tail latency the slice sets
    return out + ([note] if note else [])


def physical_limit_chart(run: RunData) -> alt.Chart | None:
    """Storage reads the query phase needed (ops/s x r/o) against the device's read IOPS cap."""
    if run.intervals.is_empty():
        return None
    rows = []
    for s in run.systems:
        caps = (s.get("resources") or {}).get("io_caps") or {}
        cap = caps.get("read_iops")
        data = run.intervals.filter((pl.col("system") == s["label"]) & (pl.col("phase") == "run")).sort("interval")
        for row in data.iter_rows(named=True):
            if row.get("r_per_op") is None or row.get("ops_per_s") is None:
                continue
            rows.append({"system": s["label"], "interval": row["interval"] + 1,
                         "reads_per_s": row["ops_per_s"] * row["r_per_op"], "cap": cap})
    if not rows or all(r["cap"] is None for r in rows):
        return None
    data = alt.Data(values=rows)
    base = alt.Chart(data).encode(x=alt.X("interval:O", title="query interval"),
                                  color=palette.color("system", [r["system"] for r in rows]))
    bars = base.mark_bar().encode(y=alt.Y("reads_per_s:Q", title="storage reads per second (ops/s x r/o)"),
                                  xOffset="system:N")
    cap = alt.Chart(data).mark_rule(strokeDash=[6, 4], color="black").encode(y="max(cap):Q")
    return (bars + cap).properties(width=520, height=240,
                                   title="How close each engine gets to the emulated device (dashed: read IOPS cap)")
