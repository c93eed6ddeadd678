"""sysbench report pieces: throughput matrix per memory size next to the post's, 10-second series,
IO per operation, claims."""
from __future__ import annotations

import math
import statistics
from typing import Callable

import altair as alt
import polars as pl

from ...paths import reference_dir
from ...report import over_time, palette, unfinished
from ...report.charts import time_unit
from ...report.claims import Measured, evaluate, load_claims, role_note
from ...report.rundata import RunData, phase_summary
from ...report.steady import RULE, steadiness


def post_matrix() -> pl.DataFrame:
    ref = pl.read_csv(reference_dir() / "sysbench_2015.csv")
    ref = ref.with_columns(pl.format("{}/{}", "cache_gib", "total_gib").alias("cache/total GiB"))
    return ref.pivot(on="system", index="cache/total GiB", values="ops_per_s")


def _label_kind(system: dict) -> str:
    """The engine configuration a system stands for, without its memory size."""
    options = system["options"]
    if system["engine"] == "wiredtiger":
        kind = "wiredTiger" if options.get("table_type", "btree") == "btree" else "wiredTiger LSM"
        return kind + (f" (checkpoint {options['checkpoint_s']}s)" if _checkpoint_s(system) != 60 else "")
    if system["engine"] == "fractal":
        return "TokuMXse" if _server(system) == "tokumxse" else "TokuMX"
    return {"rocksdb": "RocksDB", "lmdb": "LMDB (mmap)"}[system["engine"]]


def _server(system: dict) -> str:
    """A fractal system's server: `tokumx` or `tokumxse`, by its PerconaFT release."""
    return str(system["options"].get("version", "")).split("-")[0]


def _run_rows(run: RunData, label: str) -> pl.DataFrame:
    return run.intervals.filter((pl.col("system") == label) & (pl.col("phase") == "run")).sort("interval")


def steady_rows(run: RunData, label: str) -> pl.DataFrame:
    """The second half of a system's run intervals: the post averaged the 2nd of its 2 hours."""
    if run.intervals.is_empty():
        return run.intervals
    rows = _run_rows(run, label)
    return rows.tail(max(1, rows.height // 2))


def steady_rate(run: RunData, label: str) -> float | None:
    """Mean 10-second throughput over the second half of the run."""
    rows = steady_rows(run, label)
    return float(rows["ops_per_s"].mean()) if rows.height else None


def steady_intervals(run: RunData, label: str, _phase: str = "run") -> list[int]:
    rows = steady_rows(run, label)
    return rows["interval"].to_list() if rows.height else []


OVER_TIME = over_time.View(("run",), steady_intervals, "the second half of each system's intervals, which its "
                           "throughput figures and claims average, as the post averaged the 2nd of its 2 hours",
                           per="transaction")


def memory_heading(run: RunData) -> str:
    """What a matrix row's memory is: the limit, or without the process's own memory where the
    params added that to it (System.memory_own_mb)."""
    if any(s.get("memory_own_mb") for s in run.systems):
        return "memory for cache and data"
    return "memory limit"


def our_matrix(run: RunData) -> pl.DataFrame:
    cells: dict[str, dict[str, float | None]] = {}
    for s in run.systems:
        memory = s.get("memory_limit_mb") or run.manifest["params"]["resources"]["memory"]["limit_mb"]
        rate = steady_rate(run, s["label"])
        cells.setdefault(f"{memory} MB", {})[_label_kind(s)] = None if rate is None else round(rate, 1)
    rows = [{memory_heading(run): size, **values} for size, values in cells.items()]
    return pl.DataFrame(rows)


def throughput_chart(run: RunData) -> alt.Chart | None:
    rows = []
    for s in run.systems:
        data = run.intervals.filter((pl.col("system") == s["label"]) & (pl.col("phase") == "run")).sort("interval")
        for row in data.iter_rows(named=True):
            rows.append({"system": _label_kind(s), "memory": f"{s.get('memory_limit_mb')} MB",
                         "seconds": (row["interval"] + 1) * row["seconds"], "tps": row["ops_per_s"]})
    if not rows:
        return None
    divisor, unit = time_unit(max(r["seconds"] for r in rows))
    rows = [{**r, "elapsed": r["seconds"] / divisor} for r in rows]
    return (alt.Chart(alt.Data(values=rows), title="Transactions per second, every interval")
            .mark_line()
            .encode(x=alt.X("elapsed:Q", title=f"{unit} into the run"), y=alt.Y("tps:Q", title="transactions/s"),
                    color=palette.color("system", [r["system"] for r in rows], title="engine"),
                    row=alt.Row("memory:N", title=memory_heading(run)))
            .properties(width=560, height=140))


def io_chart(run: RunData) -> alt.Chart | None:
    rows = []
    for s in run.systems:
        summary = phase_summary(run.intervals, s["label"], "run")
        if not summary:
            continue
        if summary["rkb_per_op"] is not None:
            rows.append({"system": s["label"], "kind": "read KiB/op", "value": summary["rkb_per_op"]})
        if summary["wkb_per_op"] is not None:
            rows.append({"system": s["label"], "kind": "write KiB/op", "value": -summary["wkb_per_op"]})
    if not rows:
        return None
    return (alt.Chart(alt.Data(values=rows), title="IO per transaction: reads above zero, writes below")
            .mark_bar()
            .encode(x=alt.X("system:N", title=None, axis=alt.Axis(labelAngle=-40)), y=alt.Y("value:Q", title="KiB per transaction"),
                    color=alt.Color("kind:N", title=None))
            .properties(width=560, height=260))


# -- claims ---------------------------------------------------------------------------------
def _checkpoint_s(system: dict) -> int:
    return system["options"].get("checkpoint_s", 60)


def _memory(system: dict) -> int:
    return system.get("memory_limit_mb") or 0


# The post's second WiredTiger configuration (--syncdelay=900); the other is its default, 60 s.
LONG_CHECKPOINT_S = 900


def _kind(role: str, long_checkpoint: bool | None = None, server: str | None = None) -> Callable[[dict], bool]:
    """The systems of a role; WiredTiger's with the post's 900-s checkpoint or without it (its
    default, which an explain's checkpoint variant may set to another interval: still the
    claim's WiredTiger); the fractal tree's of one server (by its PerconaFT release)."""
    return lambda s: (s["role"] == role
                      and (long_checkpoint is None or (_checkpoint_s(s) == LONG_CHECKPOINT_S) == long_checkpoint)
                      and (server is None or _server(s) == server))


# What each ratio claim compares, numerator over denominator, at the memory sizes both ran; the
# post's WiredTiger is the 60-s checkpoint's, the 900-s systems only the checkpoint claim's.
BTREE = _kind("btree", long_checkpoint=False)
LSM = _kind("lsm")
SIDES = {
    "sb.lsm_vs_btree": (LSM, BTREE),
    "sb.btree_vs_mmap": (BTREE, _kind("mmap")),
    "sb.checkpoint": (_kind("btree", long_checkpoint=True), BTREE),
    "sb.tokumxse": (_kind("fractal", server="tokumx"), _kind("fractal", server="tokumxse")),
}
# What each claim across memory sizes reads, every size of each.
ACROSS_SIZES = {
    "sb.cache_scaling": (BTREE, LSM),
    "sb.fractal_flat": (_kind("fractal", server="tokumx"),),
}


def claim_reads(_params: dict, claim: dict, systems: list[dict]) -> list[dict]:
    """Of the systems that play a claim's roles, those resolver() reads, so an explain runs none
    its claim ignores (sb.lsm_vs_btree reads no 900-s WiredTiger; sb.tokumxse reads TokuMX only at
    the sizes TokuMXse ran). A pair with no size in common keeps every system: the resolver then
    says what it needs."""
    if claim["id"] in SIDES:
        num, den = ([s for s in systems if side(s)] for side in SIDES[claim["id"]])
        common = {_memory(s) for s in num} & {_memory(s) for s in den}
        return [s for s in systems if _memory(s) in common and (s in num or s in den)] if common else systems
    if claim["id"] in ACROSS_SIZES:
        return [s for s in systems if any(kind(s) for kind in ACROSS_SIZES[claim["id"]])]
    return systems


def _rates_by_memory(run: RunData, kind: Callable[[dict], bool]) -> dict[int, float]:
    """Each memory size's steady rate of the complete systems of a kind (the first at a size)."""
    out = {}
    for s in run.complete_systems:
        if not kind(s):
            continue
        rate = steady_rate(run, s["label"])
        if rate is not None:
            out.setdefault(_memory(s), rate)
    return out


def resolver(run: RunData):
    def compare(num: dict, den: dict, name_a: str, name_b: str, use_min: bool) -> Measured:
        sizes = sorted(set(num) & set(den))
        if not sizes:
            return Measured(None, "", f"needs {name_a} and {name_b} at the same memory size")
        ratios = [num[m] / den[m] for m in sizes if den[m]]
        detail = "; ".join(f"{m} MB: {num[m]:.0f} / {den[m]:.0f}" for m in sizes)
        value = min(ratios) if use_min else math.exp(statistics.mean(math.log(r) for r in ratios))
        return Measured(value, detail)

    def resolve(claim: dict) -> Measured:
        cid = claim["id"]
        rates = [_rates_by_memory(run, kind) for kind in SIDES.get(cid) or ACROSS_SIZES.get(cid) or ()]
        if cid == "sb.tokumxse":
            return compare(*rates, "TokuMX", "TokuMXse", use_min=False)
        if cid == "sb.lsm_vs_btree":
            return compare(*rates, "lsm", "btree", use_min=True)
        if cid == "sb.btree_vs_mmap":
            measured = compare(*rates, "btree", "mmap", use_min=True)
            mmap = next((s for s in run.complete_systems if s["role"] == "mmap"), None)
            if mmap and role_note(mmap) and measured.detail:
                measured.detail += f" (mmap{role_note(mmap)})"
            return measured
        if cid == "sb.checkpoint":
            return compare(*rates, "checkpoint 900 s", "checkpoint 60 s", use_min=False)
        if cid == "sb.cache_scaling":
            ratios, parts = [], []
            for role, by_size in zip(("btree", "lsm"), rates):
                if len(by_size) >= 2:
                    lo, hi = min(by_size), max(by_size)
                    ratios.append(by_size[hi] / by_size[lo])
                    parts.append(f"{role}: {by_size[hi]:.0f} at {hi} MB / {by_size[lo]:.0f} at {lo} MB")
            if not ratios:
                return Measured(None, "", "needs btree or lsm systems at two memory sizes")
            return Measured(min(ratios), "; ".join(parts))
        if cid == "sb.fractal_flat":
            (tokumx,) = rates
            if len(tokumx) < 2:
                return Measured(None, "", "needs TokuMX (a tokumx-* release of the fractal tree) at two memory sizes")
            lo, hi = min(tokumx), max(tokumx)
            return Measured(tokumx[hi] / tokumx[lo], f"TokuMX: {tokumx[hi]:.0f} at {hi} MB / {tokumx[lo]:.0f} at {lo} MB")
        if cid == "sb.write_per_op":
            per_role = {}
            for s in run.systems:
                summary = phase_summary(run.intervals, s["label"], "run") if s.get("status") == "complete" else None
                if summary and summary["wkb_per_op"] is not None:
                    per_role.setdefault(s["role"], []).append(summary["wkb_per_op"])
            if "lsm" not in per_role or len(per_role) < 2:
                return Measured(None, "", "needs the lsm engine and at least one other")
            lsm = min(per_role["lsm"])
            others = min(min(v) for r, v in per_role.items() if r != "lsm")
            # "lowest": the lowest other engine's KB/op over the LSM's; at least 1 means the LSM is lowest.
            return Measured(others / lsm if lsm else math.inf, f"lsm {lsm:.2f} KB/op, lowest other {others:.2f}")
        return Measured(None, "", f"claim {cid} has no resolver")
    return resolve


def claims_table(run: RunData) -> pl.DataFrame:
    return evaluate(load_claims(run.manifest["experiment"]), resolver(run))


# -- findings -------------------------------------------------------------------------------
def _steady_state(run: RunData, done: list[dict]) -> str:
    """When each system's measured phase became steady by the collection's rule, beside the
    post's own window (the second half), so a reader can tell a warm-up the half still holds."""
    each = "; ".join(f"{s['label']} {steadiness(run, s['label'], 'run').describe()}" for s in done)
    return (f"**Steady state.** The figures average the second half of each run, as the post averaged the 2nd "
            f"of its 2 hours. By the steady rule of the LinkBench experiments ({RULE}): {each}.")


def findings(run: RunData, claims: pl.DataFrame) -> str:
    """What the numbers say: throughput against memory per engine configuration, the deepest
    10-second dip against the run's mean (where checkpoints show), and IO per transaction."""
    done = run.complete_systems
    if not done:
        return unfinished.nothing_completed(run)
    lines = []
    by_kind: dict[str, list[tuple[int, float]]] = {}
    for s in done:
        rate = steady_rate(run, s["label"])
        if rate is not None:
            by_kind.setdefault(_label_kind(s), []).append((_memory(s), rate))
    parts = []
    for kind, points in by_kind.items():
        points.sort()
        text = ", ".join(f"{rate:,.0f} at {memory} MB" for memory, rate in points)
        if len(points) > 1 and points[0][1]:
            change = points[-1][1] / points[0][1] - 1
            text += f" ({change:+.0%} from the smallest to the largest memory)"
        parts.append(f"{kind}: {text}")
    lines.append("**Throughput against memory** (transactions/s, second half of each run). " + "; ".join(parts) + ".")
    lines.append(_steady_state(run, done))
    dips = []
    for s in done:
        rows = _run_rows(run, s["label"])
        if rows.height < 3:
            continue
        mean, low = float(rows["ops_per_s"].mean()), float(rows["ops_per_s"].min())
        if mean:
            dips.append((low / mean, s["label"], low, mean))
    if dips:
        dips.sort()
        deepest = ", ".join(f"{label} {low:,.0f} against a mean of {mean:,.0f} ({share:.0%})"
                            for share, label, low, mean in dips[:3])
        text = f"**Stalls.** The slowest 10-second interval of each run against its mean, deepest first: {deepest}."
        by_checkpoint: dict[int, list[float]] = {}
        for share, label, _, _ in dips:
            system = next(s for s in done if s["label"] == label)
            if system["engine"] == "wiredtiger":
                by_checkpoint.setdefault(_checkpoint_s(system), []).append(share)
        if len(by_checkpoint) > 1:
            text += " WiredTiger's slowest interval averaged " + ", ".join(
                f"{statistics.mean(shares):.0%} of its mean with a {seconds} s checkpoint"
                for seconds, shares in sorted(by_checkpoint.items())) + "."
        lines.append(text)
    io = []
    for s in done:
        summary = phase_summary(run.intervals, s["label"], "run")
        if summary and summary.get("rkb_per_op") is not None and summary.get("wkb_per_op") is not None:
            io.append(f"{s['label']} {summary['rkb_per_op']:.1f} / {summary['wkb_per_op']:.2f}")
    if io:
        lines.append("**IO per transaction** (read / write KiB): " + ", ".join(io) + ".")
    lines += unfinished.paragraphs(run)
    return "\n\n".join(lines)
