"""A finished (or aborted) run, loaded for reporting: manifest plus tidy tables."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from hdrh.histogram import HdrHistogram

from ..engines import WT_TAG_TREES, posts_trees
from ..metrics.normalize import COUNTERS, per_op
from ..results.tables import PERCENTILES
from ..paths import results_dir


@dataclass
class RunData:
    path: Path
    manifest: dict
    intervals: pl.DataFrame
    ops: pl.DataFrame
    samples: pl.DataFrame
    # The rate per tick (a second) of every interval (results/tables.py tick_rows): empty for runs
    # made before the runner counted ticks.
    ticks: pl.DataFrame = field(default_factory=pl.DataFrame)
    # Where a system's own files are when they are not in this run's folder: a run read side by
    # side with another (explain.side_by_side) takes some systems from that run.
    system_paths: dict[str, Path] = field(default_factory=dict)
    # A claim comparing two experiments reads this run's partner in the other from here, by
    # experiment, when an explain pairs them (explain.paired_plan); otherwise runs.partner_run.
    companions: dict[str, "RunData"] = field(default_factory=dict)

    def system_dir(self, label: str) -> Path:
        """A system's folder: its events, Flashback's replay summary and scans."""
        return self.system_paths.get(label) or self.path / label

    @property
    def systems(self) -> list[dict]:
        """Systems in params order, each with its params and its recorded status."""
        recorded = self.manifest.get("systems", {})
        out = []
        for system in self.manifest["params"]["systems"]:
            entry = dict(system)
            entry.update(recorded.get(system["label"], {"status": "not run", "error": "the run stopped before it"}))
            out.append(entry)
        return out

    @property
    def complete_systems(self) -> list[dict]:
        """The systems that completed, in params order: the ones whose numbers a claim may use."""
        return [s for s in self.systems if s.get("status") == "complete"]

    def complete_of_role(self, role: str) -> dict | None:
        """The first complete system of a role: the one a claim about that role compares."""
        return next((s for s in self.complete_systems if self.plays(s, role)), None)

    def plays(self, system: dict, role: str) -> bool:
        """Whether a system plays a claim's role: a plain role (`btree`), or a role at one end of
        the engine releases the run's complete systems of that role ran (`btree:older`,
        `btree:newer`: the release comparisons). Where the run has two or more of the posts' own
        trees (engines.WT_TAG_RELEASES), the comparison is between those: 11.3.1 beside them is
        today's release, not one end of the post's pair."""
        base, _, end = role.partition(":")
        if system["role"] != base:
            return False
        if not end:
            return True
        candidates = [s for s in self.complete_systems if s["role"] == base]
        trees = posts_trees(s.get("version") for s in candidates)
        if trees:
            if system.get("version") not in trees:
                return False
            candidates = [s for s in candidates if s.get("version") in trees]
        releases = sorted({release_key(s.get("version")) for s in candidates})
        if len(releases) < 2:
            return False
        return release_key(system.get("version")) == (releases[0] if end == "older" else releases[-1])

    def role_of(self, label: str) -> str:
        return next(s["role"] for s in self.manifest["params"]["systems"] if s["label"] == label)


def release_key(version: str | None) -> tuple:
    """A release as a sortable tuple: '11.3.1' -> (11, 3, 1); a post's tree by the WiredTiger
    release it carries, then its MongoDB tag ('mongodb-3.0.7' -> (2, 5, 3, 3, 0, 7), after
    'mongodb-3.0.4' and before 2.6.1); anything unreadable sorts first."""
    def numbers(text: str) -> list[int]:
        parts = []
        for part in text.replace("-", ".").split("."):
            digits = "".join(ch for ch in part if ch.isdigit())
            parts.append(int(digits) if digits else 0)
        return parts
    if version in WT_TAG_TREES:
        mongod = numbers(version.removeprefix("mongodb-")) if version.startswith("mongodb-") else []
        return tuple(numbers(WT_TAG_TREES[version]) + mongod)
    return tuple(numbers(version or ""))


def load_run(path: str | Path) -> RunData:
    path = Path(path)
    manifest = json.loads((path / "manifest.json").read_text())

    def table(name):
        file = path / f"{name}.parquet"
        return pl.read_parquet(file) if file.exists() else pl.DataFrame()
    samples = table("samples")
    return RunData(path, manifest, _every_thread_switches(table("intervals"), samples), table("ops"), samples,
                   table("ticks"))


def _every_thread_switches(intervals: pl.DataFrame, samples: pl.DataFrame) -> pl.DataFrame:
    """intervals with no context switches for a system whose samples count its main thread's
    alone (sampled before `ctx_switch_threads` existed: metrics/sampler.py): a table showing
    them would understate a multi-threaded runner's by orders of magnitude. The claims on them
    say why they are void (claims.switches_counted)."""
    if intervals.is_empty() or "ctx_switches" not in intervals.columns or "system" not in samples.columns:
        return intervals
    counted = (samples.filter(pl.col("ctx_switch_threads").is_not_null())["system"].unique().to_list()
               if "ctx_switch_threads" in samples.columns else [])
    return intervals.with_columns(
        pl.when(pl.col("system").is_in(counted)).then(pl.col("ctx_switches")).otherwise(None).alias("ctx_switches"))


def system_events(run: RunData, label: str, *kinds: str) -> list[dict]:
    """A system's runner events of these kinds, from its events.jsonl: written as they came, so
    kept whole even for a system whose runner was killed (the manifest keeps only a summary)."""
    path = run.system_dir(label) / "events.jsonl" if run.path is not None else None
    if path is None or not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            parsed = json.loads(line)
        except ValueError:
            continue  # a partial last line of a killed runner
        if parsed.get("event") in kinds:
            out.append(parsed)
    return out


def latest_run(exp: str, status: str | None = "complete") -> Path | None:
    """The newest run folder of an experiment (with that status, if given)."""
    base = results_dir() / exp
    if not base.is_dir():
        return None
    for folder in sorted((p for p in base.iterdir() if (p / "manifest.json").exists()), reverse=True):
        if status is None or json.loads((folder / "manifest.json").read_text()).get("status") == status:
            return folder
    return None


def phase_summary(intervals: pl.DataFrame, system: str, phase: str, interval: int | None = None) -> dict | None:
    """Per-op metrics over a whole phase (or one interval of it), from summed counters."""
    if intervals.is_empty():
        return None
    rows = intervals.filter((pl.col("system") == system) & (pl.col("phase") == phase))
    if interval is not None:
        rows = rows.filter(pl.col("interval") == interval)
    if rows.is_empty():
        return None
    seconds = rows["seconds"].sum()
    ops = rows["ops"].sum()
    denominator = rows["per_op_denominator"].sum()
    deltas = {}
    for key in COUNTERS:
        column = rows[key] if key in rows.columns else None
        deltas[key] = None if column is None or column.null_count() == len(column) else float(column.sum())
    figures = per_op(deltas, ops, seconds, denominator)
    last = rows.sort("t_end").row(-1, named=True)
    return {
        **figures, "seconds": seconds, "ops": ops, "requests": rows["requests"].sum(),
        "size_du_bytes": last.get("size_du_bytes"), "size_apparent_bytes": last.get("size_apparent_bytes"),
        "rss_bytes": rows["rss_bytes"].max() if "rss_bytes" in rows.columns else None,
        "client_cpu_us_per_op": rows["client_cpu_s"].sum() * 1e6 / denominator if denominator else None,
        "intervals": len(rows),
    }


def merge_histograms(encoded_column) -> HdrHistogram | None:
    """One HdrHistogram from a column of encoded ones, merged exactly (counts added per bucket)."""
    return _merge([HdrHistogram.decode(encoded) for encoded in encoded_column.drop_nulls()])


def _merge(hists: list[HdrHistogram | None]) -> HdrHistogram | None:
    """The histograms merged into the first of them (which is changed)."""
    merged = None
    for hist in hists:
        if hist is None:
            continue
        if merged is None:
            merged = hist
        else:
            merged.add(hist)
    return merged


def _merged_mean_us(means: list[float | None], counts: list[int], merged: HdrHistogram) -> float:
    """The merged histogram's mean, from its intervals' means (each the library's, of the interval's
    histogram, kept in the ops table) and their histograms' counts: a mean over buckets is linear
    in their counts, so the count-weighted mean of the intervals' means is the merged one's. The
    library's own mean walks every bucket of the merged histogram, seconds a report."""
    if any(mean is None for mean, count in zip(means, counts) if count):
        return merged.get_mean_value()
    total = sum(counts)
    return sum(mean * count for mean, count in zip(means, counts) if count) / total if total else 0.0


def merged_latency(ops: pl.DataFrame, system: str, phase: str, interval: int | None = None) -> list[dict]:
    """Latency per op type over a phase, from the exactly merged HdrHistograms."""
    if ops.is_empty():
        return []
    rows = ops.filter((pl.col("system") == system) & (pl.col("phase") == phase))
    if interval is not None:
        rows = rows.filter(pl.col("interval") == interval)
    out = []
    for (op,), group in rows.group_by(["op"], maintain_order=True):
        hists = [HdrHistogram.decode(encoded) if encoded is not None else None for encoded in group["hist"]]
        counts = [hist.get_total_count() if hist is not None else 0 for hist in hists]  # before merging
        merged = _merge(hists)
        intended = merge_histograms(group["intended_hist"]) if "intended_hist" in group.columns else None
        entry = {"op": op, "count": int(group["count"].sum()), "errors": int(group["errors"].sum()),
                 "items": int(group["items"].sum())}
        if merged is not None:
            means = group["mean_us"].to_list() if "mean_us" in group.columns else [None] * len(hists)
            entry["mean_ms"] = _merged_mean_us(means, counts, merged) / 1000
            for name, pct in PERCENTILES:
                entry[name.replace("_us", "_ms")] = merged.get_value_at_percentile(pct) / 1000
            entry["max_ms"] = merged.get_max_value() / 1000
        if intended is not None:  # open loop: from each op's scheduled start
            entry["intended_p50_ms"] = intended.get_value_at_percentile(50.0) / 1000
            entry["intended_p99_ms"] = intended.get_value_at_percentile(99.0) / 1000
            entry["intended_max_ms"] = intended.get_max_value() / 1000
        out.append(entry)
    return sorted(out, key=lambda e: -e["count"])


__all__ = ["RunData", "load_run", "system_events", "latest_run", "phase_summary", "merged_latency"]
