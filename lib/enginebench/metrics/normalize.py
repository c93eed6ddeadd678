"""Per-interval and per-operation metrics from cumulative samples (DESIGN §7).

Counters are interpolated linearly at an interval's start and end, so intervals need not align
with sample times. Per-op figures follow Mark Callaghan's definitions (harness_anchors §5.2):
r/o = device reads / ops, rKB/o and wKB/o = device KB / ops, cs/o = context switches / ops,
cpu/o = server CPU microseconds / ops.
"""
from __future__ import annotations

import bisect

COUNTERS = ("cpu_user_s", "cpu_sys_s", "ctx_switches", "proc_read_bytes", "proc_write_bytes",
            "dev_reads", "dev_read_bytes", "dev_writes", "dev_write_bytes", "cg_reads", "cg_writes")


def interpolate(samples: list[dict], key: str, t: float) -> float | None:
    """The value of a cumulative counter at time t (None if no sample has it)."""
    points = [(s["t"], s[key]) for s in samples if s.get(key) is not None]
    if not points:
        return None
    times = [p[0] for p in points]
    i = bisect.bisect_left(times, t)
    if i == 0:
        return float(points[0][1])
    if i >= len(points):
        return float(points[-1][1])
    (t0, v0), (t1, v1) = points[i - 1], points[i]
    if t1 == t0:
        return float(v1)
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def interval_metrics(samples: list[dict], t_start: float, t_end: float) -> dict:
    """Counter deltas over [t_start, t_end], peak RSS in it, and the database size at its end."""
    out: dict = {}
    for key in COUNTERS:
        a, b = interpolate(samples, key, t_start), interpolate(samples, key, t_end)
        out[key] = None if a is None or b is None else max(0.0, b - a)
    inside = [s for s in samples if t_start <= s["t"] <= t_end] or _nearest(samples, t_end)
    rss = [s["rss_bytes"] for s in inside if s.get("rss_bytes")]
    out["rss_bytes"] = max(rss) if rss else None
    # The size at the end: the reading nearest it, before or after. The driver asks for one as a
    # phase ends (Sampler.sample_now), so a phase shorter than a sampling period still has its own.
    sized = _nearest([s for s in samples if s.get("size_du_bytes") is not None], t_end)
    out["size_du_bytes"] = sized[0]["size_du_bytes"] if sized else None
    out["size_apparent_bytes"] = sized[0]["size_apparent_bytes"] if sized else None
    return out


def _nearest(samples: list[dict], t: float) -> list[dict]:
    return [min(samples, key=lambda s: abs(s["t"] - t))] if samples else []


def per_op(deltas: dict, ops: float, seconds: float, normaliser: float | None = None) -> dict:
    """Rates and per-operation figures. `ops` is the throughput numerator (ops/s = ops/seconds);
    per-op figures divide by `normaliser` operations (default: ops), as the post divides its load
    metrics by node inserts while reporting the insert rate over all collections."""
    denominator = ops if normaliser is None else normaliser

    def ratio(value, scale=1.0):
        if value is None or not denominator:
            return None
        return value * scale / denominator
    cpu = None
    if deltas.get("cpu_user_s") is not None and deltas.get("cpu_sys_s") is not None:
        cpu = deltas["cpu_user_s"] + deltas["cpu_sys_s"]
    # Reads per op: the system's own cgroup reads where a storage profile is enforced (exact);
    # otherwise the device's, as the post's iostat figures were.
    reads = deltas.get("cg_reads") if deltas.get("cg_reads") is not None else deltas.get("dev_reads")
    # Bytes written per op: the system's own processes' (/proc/<pid>/io write_bytes, what they sent
    # to storage, page-cache writeback included). The device's counter takes in every other writer
    # on the host: on this shared machine it once made RocksDB's 0.9 KB per sysbench transaction
    # read 60. Where no process of the system is sampled (a remote server), the device's.
    writes = deltas.get("proc_write_bytes") if deltas.get("proc_write_bytes") is not None else deltas.get("dev_write_bytes")
    return {
        "ops_per_s": ops / seconds if seconds > 0 else None,
        "r_per_op": ratio(reads),
        "device_r_per_op": ratio(deltas.get("dev_reads")),
        "rkb_per_op": ratio(deltas.get("dev_read_bytes"), 1 / 1024),
        "wkb_per_op": ratio(writes, 1 / 1024),
        "device_wkb_per_op": ratio(deltas.get("dev_write_bytes"), 1 / 1024),
        "cs_per_op": ratio(deltas.get("ctx_switches")),
        "cpu_us_per_op": ratio(cpu, 1e6),
        "read_iops": _rate(deltas.get("dev_reads"), seconds),
        "write_iops": _rate(deltas.get("dev_writes"), seconds),
        # IOs issued by the system's own cgroup (exact, where a storage profile is enforced).
        "cg_read_iops": _rate(deltas.get("cg_reads"), seconds),
        "cg_write_iops": _rate(deltas.get("cg_writes"), seconds),
    }


def _rate(value, seconds):
    return value / seconds if value is not None and seconds > 0 else None
