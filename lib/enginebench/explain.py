"""`make explain EXP=<exp> CLAIM=<id>`: why a claim's verdict differs from the post.

The claim's systems run once as the experiment's params have them (the base) and once per
factor, each variant differing from the base in exactly one named factor, set the way a user
sets it by hand (`--set`, params/overrides.py). The page gives the claim's ratio under each run
with its verdict (noise included: report/noise.py, and the spread of `REPEAT=n` runs of each),
and names the factors that move the ratio across the claim's bound or back within the published
size; otherwise it says the ratio is unexplained by these factors.

The factors are one catalogue (FACTORS), each a param of its own:

- settings: the named settings `2015` / `today` (settings.py), every system at once;
- release: WiredTiger 11.3.1 / 3.2.1 (`options.version`), on the WiredTiger systems;
- insert grouping: 1 document per storage transaction (MongoDB 3.0/3.2) / 64 (3.4+);
- checkpoint interval: 60 s / 600 s (WiredTiger's `checkpoint_s`, mongod's syncdelay), scaled
  alike where the measured phase keeps the post's checkpoints per span;
- checkpoints in measured time: the post's checkpoints per measured span and no checkpoint
  between load and queries (`phases.measure.stands_for_s`, `phases.quiesce_checkpoint: false`) /
  the interval unscaled and a checkpoint before the queries;
- journal compressor: none / snappy (WiredTiger);
- cache size: twice the base's engine cache;
- RocksDB scans: bounded at the collection's end and reversed by Seek then Prev, as MongoRocks
  made them / bounded at the range with SeekForPrev (the engine's `scans`);
- write throttle: MongoRocks' soft_rate_limit 2.5 / none (RocksDB's `soft_rate_limit`);
- tombstone compactions: MongoRocks' compaction of a collection or index after one iterator step
  skipped 50,000 deletions, at most every 10 minutes / none (`tombstone_compaction_skips`);
- query yields: a query's scan yields every 128 entries or 10 ms, its snapshot let go, and seeks
  again (mongod 3.2) / never (`yield_iterations`);
- reads before writes: the record read before it is rewritten or deleted, as mongod 3.2's
  WiredTiger record store and MongoRocks did / not (`read_before_write`);
- storage: the params' emulated device / none (no IOPS or bandwidth cap), where the params emulate one;
- threads: twice the base's client threads of the phase the claim reads.

The access path is not among them: the store reaches the engines as mongod's planner did, and
has no setting that changes it.

A claim's systems are those its family's resolver reads (sysbench's sb.lsm_vs_btree: not the
900-s WiredTiger; Flashback's: one replayer per role). A variant runs only the systems its factor
changes (a WiredTiger release leaves RocksDB as it was); the claim is then read from those and
the base's runs of the others, side by side, as one run of every system. The base's systems ran
earlier in the same sitting, and the host's speed probe of each run is on its page. A variant
(the base too) that a run of this sitting already measured, the experiment's own or another
claim's explain's, is read from that run instead of run again (explain_runs.py); its row names
the run. A load claim's variant is also served by a run that loaded its systems alike and went
on to their requests, so the claims on the requests are explained first (claims_in_run_order).

A claim comparing two experiments (lb.load.disk_vs_ssd) runs every variant in both, set alike
(paired_plan), and reads the pair: a factor on one side only would compare unlike devices. Its
page and answer are kept under the first experiment it names.
"""
from __future__ import annotations

import html as html_lib
import json
import math
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import zip_longest
from pathlib import Path
from typing import Callable

import polars as pl

from .engines import posts_trees
from .explain_runs import existing_run
from .families import family
from .params import load_params
from .paths import reports_dir
from .report import repeats
from .report.claims import FAILS, HOLDS, load_claims, published_size, size_agrees
from .report.html import STYLE, table
from .report.rundata import RunData, load_run
from .results.calibration import own_drift, system_speed


@dataclass(frozen=True)
class Factor:
    """One named factor: `sets(params, labels)` gives the `--set`s of its variant for the
    claim's systems, or None when it does not apply to them; `what` says what it changes.

    Every variant loads afresh, even for a factor that changes nothing a load leaves: measured
    from a kept load's copy (phases.load.reuse), RocksDB ran about 20% slower than after its own
    load, a difference the factor would then be blamed for."""
    name: str
    what: str
    sets: Callable[[dict, list[dict]], list[str] | None]
    # The engine counter (an interval column, cumulative) that shows the base used what the factor
    # takes away. Where it stayed at zero on every system the variant changes, the variant changes
    # nothing that ran: it repeats the base and measures the run-to-run spread, not the factor.
    # (MongoRocks' tombstone compactions wait 10 minutes, longer than a default-scale system runs.)
    acted_counter: str | None = None


def _flip_settings(params: dict, systems: list[dict]) -> list[str]:
    current = {s.get("settings") or params.get("settings") for s in systems}
    target = "today" if current == {"2015"} else "2015"
    return [f"settings={target}"] + [f"systems[{s['label']}].settings={target}" for s in systems if s.get("settings")]


def _wiredtiger(systems: list[dict]) -> list[dict]:
    return [s for s in systems if s["engine"] == "wiredtiger"]


def _per_system(systems: list[dict], option: str, value_of: Callable[[dict], object]) -> list[str] | None:
    sets = [f"systems[{s['label']}].options.{option}={value_of(s)}" for s in systems]
    return sets or None


def _release(_params: dict, systems: list[dict]) -> list[str] | None:
    # A post's own tree (the 2015 default where the post names its release) against today's
    # 11.3.1 under the same settings; 11.3.1 against 3.2.1.
    return _per_system(_wiredtiger(systems), "version",
                       lambda s: "3.2.1" if s["options"].get("version", "11.3.1") == "11.3.1" else "11.3.1")


def _insert_group(_params: dict, systems: list[dict]) -> list[str] | None:
    return _per_system(systems, "insert_group", lambda s: 64 if s["options"].get("insert_group", 1) == 1 else 1)


def _checkpoint(_params: dict, systems: list[dict]) -> list[str] | None:
    # The interval as the settings gave it, before a measured phase's stands_for_s scaled it
    # (which it scales in the variant too).
    def given(s: dict) -> int:
        return s.get("checkpoint_scaled_from_s") or s["options"].get("checkpoint_s", 60)
    return _per_system(_wiredtiger(systems), "checkpoint_s", lambda s: 600 if given(s) == 60 else 60)


def _checkpoints_in_measured_time(params: dict, systems: list[dict]) -> list[str] | None:
    # The post's checkpoints per measured span and no checkpoint before the queries (the base),
    # against the settings' interval unscaled and the quiesce's checkpoint: what this collection
    # measured before it kept the post's proportion. Only where the params keep it.
    phases = params.get("phases") or {}
    if (phases.get("measure") or {}).get("stands_for_s") is None or not any("checkpoint_s" in s["options"] for s in systems):
        return None
    return ["phases.measure.stands_for_s=null", "phases.quiesce_checkpoint=true"]


def _journal(_params: dict, systems: list[dict]) -> list[str] | None:
    return _per_system(_wiredtiger(systems), "journal_compressor",
                       lambda s: "snappy" if s["options"].get("journal_compressor") == "none" else "none")


def _cache(_params: dict, systems: list[dict]) -> list[str] | None:
    return _per_system([s for s in systems if "cache_size_mb" in s["options"]], "cache_size_mb",
                       lambda s: 2 * s["options"]["cache_size_mb"])


def _rocksdb_scans(_params: dict, systems: list[dict]) -> list[str] | None:
    return _per_system([s for s in systems if s["engine"] == "rocksdb"], "scans",
                       lambda s: "bounded" if s["options"].get("scans", "mongorocks") == "mongorocks" else "mongorocks")


def _write_throttle(_params: dict, systems: list[dict]) -> list[str] | None:
    return _per_system([s for s in systems if s["engine"] == "rocksdb"], "soft_rate_limit",
                       lambda s: 0 if s["options"].get("soft_rate_limit", 0) else 2.5)


def _tombstone_compactions(_params: dict, systems: list[dict]) -> list[str] | None:
    return _per_system([s for s in systems if s["engine"] == "rocksdb"], "tombstone_compaction_skips",
                       lambda s: 0 if s["options"].get("tombstone_compaction_skips", 0) else 50000)


def _query_yields(_params: dict, systems: list[dict]) -> list[str] | None:
    return _per_system([s for s in systems if s["engine"] in ("wiredtiger", "rocksdb")], "yield_iterations",
                       lambda s: 0 if s["options"].get("yield_iterations", 128) else 128)


def _read_before_write(_params: dict, systems: list[dict]) -> list[str] | None:
    return _per_system([s for s in systems if s["engine"] in ("wiredtiger", "rocksdb")], "read_before_write",
                       lambda s: str(not s["options"].get("read_before_write", True)).lower())


def _storage(params: dict, _systems: list[dict]) -> list[str] | None:
    profile = ((params.get("resources") or {}).get("storage") or {}).get("profile", "none")
    return None if profile == "none" else ["resources.storage.profile=none"]


def _threads_of(phase: str) -> Callable[[dict, list[dict]], list[str] | None]:
    def sets(params: dict, _systems: list[dict]) -> list[str] | None:
        threads = ((params.get("phases") or {}).get(phase) or {}).get("threads")
        if isinstance(threads, list):  # a client sweep: each count doubled
            return [f"phases.{phase}.threads=[{', '.join(str(2 * t) for t in threads)}]"] if threads else None
        return [f"phases.{phase}.threads={2 * threads}"] if threads else None
    return sets


FACTORS = (
    Factor("settings", "the named settings 2015 / today (settings.py)", _flip_settings),
    Factor("release", "WiredTiger's release: the post's own tree / 11.3.1, or 11.3.1 / 3.2.1", _release),
    Factor("insert grouping", "documents per storage transaction: 1 (MongoDB 3.0/3.2) / 64 (3.4+)", _insert_group),
    Factor("checkpoint interval", "WiredTiger's checkpoint every 60 s / 600 s", _checkpoint),
    Factor("checkpoints in measured time", "the post's checkpoints per measured span, none before the queries / "
           "the interval unscaled and a checkpoint before the queries", _checkpoints_in_measured_time),
    Factor("journal compressor", "WiredTiger's journal compressor none / snappy", _journal),
    Factor("rocksdb scans", "RocksDB's scans bounded at the collection's end, reversed by Seek then Prev (MongoRocks) "
           "/ bounded at the range, SeekForPrev", _rocksdb_scans),
    Factor("write throttle", "MongoRocks' soft_rate_limit 2.5 (writes delayed while a level below L0 holds 2.5x "
           "its target) / none", _write_throttle, acted_counter="engine.mongorocks.soft_rate_limit_delays"),
    Factor("tombstone compactions", "MongoRocks' compaction of a collection or index after one step skipped 50,000 "
           "deletions, at most every 10 minutes / RocksDB's own compactions only", _tombstone_compactions,
           acted_counter="engine.mongorocks.tombstone_compactions"),
    Factor("query yields", "a query's scan yields every 128 entries or 10 ms and seeks again (mongod 3.2) / never",
           _query_yields),
    Factor("reads before writes", "the record read before it is rewritten or deleted (mongod 3.2, MongoRocks) / not",
           _read_before_write),
    Factor("storage", "the emulated device / none (no IOPS or bandwidth cap)", _storage),
    Factor("cache size", "twice the engine cache", _cache),
)


def phase_of(claim: dict) -> str:
    """The phase a claim's metric reads: `load.ops` the load, everything else the measured phase."""
    return "load" if claim["metric"].startswith("load.") else "measure"


def claim_systems(params: dict, claim: dict) -> list[dict]:
    """The systems a claim compares: those of its roles; for a claim on the measured phase, only
    the ones that measure it; for a claim that is not about releases or the oplog, only the
    release the setting gives (not a system that names its own release), with the oplog as the
    experiment runs it (the op1 systems); for a release claim, the posts' own trees where the
    experiment runs two; of those, the ones the family's resolver reads (Family.claim_reads)."""
    roles = set(re.split(r"[|:]", f"{claim['numerator_role']}|{claim['denominator_role']}")) - {"", "newer", "older"}
    systems = [s for s in params["systems"] if s["role"] in roles]
    if phase_of(claim) == "measure":
        systems = [s for s in systems if s.get("measure_requests", True)]
    if ":" not in claim["numerator_role"] + claim["denominator_role"]:
        # Not the systems that name a release of their own (they are there for the release claims).
        systems = [s for s in systems if s["engine"] != "wiredtiger" or "version" not in s.get("explicit_options", ())]
    else:  # a release claim compares the posts' own trees where the experiment runs two (rundata.plays)
        trees = posts_trees(s["options"].get("version") for s in systems)
        if trees:
            systems = [s for s in systems if s["options"].get("version") in trees]
    if "oplog" not in claim["metric"]:
        with_oplog = [s for s in systems if s["options"].get("oplog")]
        systems = with_oplog or systems
    return family(params["workload"]["name"]).claim_reads(params, claim, systems)


@dataclass
class Variant:
    factor: str
    what: str
    sets: list[str]
    changes: list[str]  # the labels of the claim's systems the factor changes
    not_run: str = ""   # why the factor has no variant for this claim, when it has none
    scope: tuple[str, ...] = ()  # the sets every run of the claim carries (load_only_sets)

    @property
    def run_sets(self) -> list[str]:
        """What the run is given: the factor's sets and the claim's scope."""
        return [*self.sets, *self.scope]


def load_only_sets(params: dict, systems: list[dict]) -> list[str]:
    """For a claim read from the load phase: its systems load and stop (`measure_requests: false`,
    the post's load-only setups). Nothing after the load changes what the load measured, and the
    measured phase is most of a run's time at the default scale (LinkBench's queries, up to
    300 s a system), so a load claim's variants take a fraction of it."""
    if not (params.get("phases") or {}).get("measure"):
        return []
    return [f"systems[{s['label']}].measure_requests=false" for s in systems if s.get("measure_requests", True)]


def _changed(base: dict, variant: dict, labels: list[str]) -> list[str]:
    """The claim's systems whose resolved params differ between base and variant (all of them
    when anything outside the systems differs: the workload, the phases)."""
    def rest(params: dict) -> dict:
        return {k: v for k, v in params.items() if k not in ("systems", "sets")}
    if rest(base) != rest(variant):
        return list(labels)
    before = {s["label"]: s for s in base["systems"]}
    after = {s["label"]: s for s in variant["systems"]}
    return [label for label in labels if before[label] != after[label]]


def plan(exp: str, claim_id: str, scale: str, only: list[str] | None = None) -> tuple[dict, list[dict], list[Variant]]:
    """The claim, its systems and the variants to run (the base first), decided before anything
    runs: an unknown claim is an error naming the experiment's claims. `only`: these factors
    alone (`FACTORS=`), an unknown name an error naming the factors."""
    claims = load_claims(exp)
    rows = claims.filter(pl.col("id") == claim_id)
    if rows.is_empty():
        raise ValueError(f"CLAIM={claim_id}: not a claim of {exp} (data/reference/claims.csv); allowed: "
                         + ", ".join(claims["id"].to_list()))
    # A claim on one system (fb.writes_fast: a bound, not a ratio) has no denominator role.
    claim = {key: ("" if key.endswith("_role") and value is None else value)
             for key, value in rows.row(0, named=True).items()}
    params = load_params(exp, scale)
    systems = claim_systems(params, claim)
    if not systems:
        raise ValueError(f"CLAIM={claim_id}: none of {exp}'s systems at scale {scale} has the roles "
                         f"{claim['numerator_role']} / {claim['denominator_role']}")
    labels = [s["label"] for s in systems]
    phase = phase_of(claim)
    scope = tuple(load_only_sets(params, systems)) if phase == "load" else ()
    scoped = load_params(exp, scale, list(scope)) if scope else params
    variants = []
    threads = Factor("threads", f"twice the client threads of the {phase} phase", _threads_of(phase))
    compares_releases = ":" in claim["numerator_role"] + claim["denominator_role"]
    the_family = family(params["workload"]["name"])
    # A system every run of the claim's needs (Flashback's recorder: the claim's systems replay
    # what it records) runs in every variant, under the variant's sets, and is matched by them.
    needed = the_family.always_runs(params)

    def with_needed(changes: list[str]) -> list[str]:
        return [*needed, *(label for label in changes if label not in needed)]
    variants.append(Variant("base", "the experiment's params as they are", [], with_needed(labels), scope=scope))
    ordered = (*FACTORS[:-1], threads, FACTORS[-1])  # the threads before the cache, as the page lists them
    names = [f.name for f in ordered]
    unknown = [name for name in only or [] if name not in names]
    if unknown:
        raise ValueError(f"FACTORS: {', '.join(map(repr, unknown))} not a factor; allowed: {', '.join(names)}")
    for factor in ordered:
        if only and factor.name not in only:
            continue
        if factor.name == "release" and compares_releases:
            continue  # the release is what the claim compares: swapping it changes nothing
        grouped = the_family.measured_inserts_grouped if phase == "measure" else the_family.load_inserts_grouped
        if factor.name == "insert grouping" and not grouped:
            only_the_load = phase == "measure" and the_family.load_inserts_grouped
            variants.append(Variant(factor.name, factor.what, [], [], not_run=(
                f"the {the_family.name} requests the claim reads insert one document each, so "
                + ("the grouping changes only how the load wrote; explain a load claim to see it" if only_the_load
                   else "there is nothing to group"))))
            continue
        sets = factor.sets(params, systems)
        changes = _changed(scoped, load_params(exp, scale, [*sets, *scope]), labels) if sets else []
        if not changes:  # a factor that changes none of the claim's systems has nothing to run
            continue
        variants.append(Variant(factor.name, factor.what, sets, with_needed(changes), scope=scope))
    return claim, systems, variants


def _speeds_during(run: RunData, labels: list[str]) -> dict[str, dict]:
    """Per system: the host's speed while it ran in this run and its change across it."""
    speed = (run.manifest.get("host") or {}).get("speed") or {}
    order = (run.manifest.get("order") or {}).get("systems") or []
    return {label: {"docs_per_s": system_speed(speed, order, label), "drift": own_drift(speed, order, label)}
            for label in labels}


def side_by_side(variant: RunData, base: RunData, changed: list[str]) -> RunData:
    """One run of every system: the variant's runs of the systems it changed, the base's of the
    others (params, recorded results, intervals, ops and samples)."""
    kept = [s for s in base.manifest["params"]["systems"] if s["label"] not in changed]
    kept_labels = [s["label"] for s in kept]
    # A variant read from an earlier run (explain_runs) may have run more systems than it changed:
    # the base's runs of those stand.
    own = [s for s in variant.manifest["params"]["systems"] if s["label"] not in kept_labels]
    # In the base's order: a claim reads the first complete system of its role (rundata, the
    # families' resolvers), so the variant's systems must not jump ahead of the base's.
    order = {s["label"]: i for i, s in enumerate(base.manifest["params"]["systems"])}
    systems = sorted(own + kept, key=lambda s: order.get(s["label"], len(order)))
    manifest = dict(variant.manifest)
    manifest["params"] = {**variant.manifest["params"], "systems": systems}
    # The host's speed while each system ran, from the probes of its own run: the variant's probes
    # know nothing of the base's systems, and a claim's drift is judged between its two systems.
    host = variant.manifest.get("host") or {}
    during = {**_speeds_during(variant, [s["label"] for s in own]), **_speeds_during(base, kept_labels)}
    manifest["host"] = {**host, "speed": {**(host.get("speed") or {}), "during": during}}
    manifest["systems"] = {**{label: state for label, state in variant.manifest.get("systems", {}).items()
                              if label not in kept_labels},
                           **{label: base.manifest["systems"][label] for label in kept_labels}}
    manifest.pop("selection", None)

    def table(ours: pl.DataFrame, theirs: pl.DataFrame) -> pl.DataFrame:
        ours = ours.filter(~pl.col("system").is_in(kept_labels)) if ours.height else ours
        theirs = theirs.filter(pl.col("system").is_in(kept_labels)) if theirs.height else theirs
        return pl.concat([t for t in (ours, theirs) if t.height], how="diagonal_relaxed") if ours.height or theirs.height else ours
    # Each system's own files (events, Flashback's replay summary) from the run it came from.
    paths = {**{s["label"]: variant.system_dir(s["label"]) for s in own},
             **{label: base.system_dir(label) for label in kept_labels}}
    return RunData(variant.path, manifest, table(variant.intervals, base.intervals), table(variant.ops, base.ops),
                   table(variant.samples, base.samples), table(variant.ticks, base.ticks), system_paths=paths)


def _measure(runs: list[RunData], claim_id: str) -> dict:
    name = runs[0].manifest["params"]["workload"]["name"]
    row = repeats.claims_over(runs, family(name).report_module().claims_table).filter(pl.col("id") == claim_id)
    return row.row(0, named=True) if row.height else {}


def _log_gap(a: float | None, b: float | None) -> float | None:
    return abs(math.log(a) - math.log(b)) if a and b and a > 0 and b > 0 else None


def repeat_spread(rows: list[dict]) -> float:
    """How far (in log ratio) the variants that repeat the base (their factor idle in it) read
    from the base: the run-to-run spread this explain measured, 0 when none repeats it."""
    gaps = [_log_gap(r.get("ratio"), rows[0].get("ratio")) for r in rows[1:] if r.get("idle")]
    return max((g for g in gaps if g is not None), default=0.0)


def within_spread(rows: list[dict]) -> list[dict]:
    """The variants that acted but read no further from the base than a repeat of it did: what
    they turn is the run-to-run spread, not their factor (ib.size read 0.99 in its base and
    1.10 in a repeat, so 1.04 under another factor moves nothing)."""
    spread = repeat_spread(rows)
    gaps = [(r, _log_gap(r.get("ratio"), rows[0].get("ratio"))) for r in rows[1:] if not r.get("idle")]
    return [r for r, gap in gaps if spread and gap is not None and gap <= spread]  # a row not run has no gap


def _moves(claim: dict, rows: list[dict]) -> list[tuple[dict, str]]:
    """The variants (not those idle in the base, nor within the spread of the base's repeats)
    that move the ratio across the bound, within the published size or out of it, each with how."""
    base = rows[0]
    published = published_size(float(claim["reference_ratio"]) if claim["reference_ratio"] else None, claim["expect"])
    noise = [r["factor"] for r in within_spread(rows)]
    moved = []
    for row in rows[1:]:
        if row.get("idle") or row["factor"] in noise:
            continue
        if row["verdict"] in (HOLDS, FAILS) and base["verdict"] in (HOLDS, FAILS) and row["verdict"] != base["verdict"]:
            moved.append((row, f"the verdict turns from {base['verdict']} to {row['verdict']}"))
        elif (row["verdict"] == HOLDS and published and size_agrees(published, row["ratio"])
              and not size_agrees(published, base["ratio"])):
            moved.append((row, "the ratio comes within the published size"))
        elif (row["verdict"] == HOLDS and base["verdict"] == HOLDS and published and row["ratio"]
              and size_agrees(published, base["ratio"]) and not size_agrees(published, row["ratio"])):
            moved.append((row, f"the ratio leaves the published size: {row['ratio']:.2f} against {base['ratio']:.2f}"))
    return moved


def conclusion(claim: dict, rows: list[dict]) -> str:
    """The factors that move the ratio across the bound or back within the published size; a
    factor that never acted in the base is not one of them (its variant repeats the base)."""
    base = rows[0]
    published = published_size(float(claim["reference_ratio"]) if claim["reference_ratio"] else None, claim["expect"])
    repeats_base = _repeats_of_base(base, rows[1:])
    moved = _moves(claim, rows)
    if moved:
        return "Factors that move the ratio: " + "; ".join(f"{row['factor']} ({how})" for row, how in moved) + "." \
            + repeats_base
    acted = [r for r in rows[1:] if not r.get("idle")]
    tried = ", ".join(r["factor"] for r in acted if r.get("ratio")) or "none could run"
    if base["verdict"] == HOLDS and published and base.get("ratio") and size_agrees(published, base["ratio"]):
        # Nothing to explain: a claim explained with others (CLAIM=a,b) may already read as the post.
        return (f"Agrees with the post: the base holds within the published size ({base['ratio']:.2f} against "
                f"{published:g}), and no factor tried turns the verdict or takes the ratio outside that size "
                f"(tried: {tried})." + repeats_base)
    if base["verdict"] == HOLDS and published is None:
        # A bound met (fb.writes_fast: under 10 ms) or a claim with no published figure.
        return f"Agrees with the post: the base holds, and no factor tried turns the verdict (tried: {tried})." \
            + repeats_base
    noise = within_spread(rows)
    nearest = _nearest(published, base, [r for r in acted if r not in noise])
    return ("Unexplained by these factors: no single one moves the ratio across the claim's bound or within the "
            f"published size (tried: {tried})." + nearest + repeats_base)


def _repeats_of_base(base: dict, rows: list[dict]) -> str:
    """A sentence on the variants whose factor never acted in the base: what they read is the
    claim's run-to-run spread on this host, beside the base's ratio."""
    idle = [r for r in rows if r.get("idle") and r.get("ratio")]
    if not idle or not base.get("ratio"):
        return ""
    read = ", ".join(f"{r['factor']} {r['ratio']:.2f}" for r in idle)
    turned = [r["factor"] for r in idle if r["verdict"] in (HOLDS, FAILS) and base["verdict"] in (HOLDS, FAILS)
              and r["verdict"] != base["verdict"]]
    inside = within_spread([base, *rows])
    return (" Factors that never acted in the base (their engine counters stayed at 0) leave their variants "
            f"repeating it: {read} against the base's {base['ratio']:.2f}, the spread between two runs of the "
            "same settings"
            + (f", enough to turn the verdict ({', '.join(turned)})" if turned else "") + "."
            + (" Within that spread of the base, so moving nothing: "
               + ", ".join(f"{r['factor']} {r['ratio']:.2f}" for r in inside) + "." if inside else ""))


def _nearest(published: float | None, base: dict, rows: list[dict]) -> str:
    """The factor that moves the ratio furthest toward the published one, in log distance, when
    one moves it at all: a partial explanation is still worth a sentence."""
    if not published or not base.get("ratio") or base["ratio"] <= 0:
        return ""
    gap = lambda ratio: _log_gap(ratio, published)  # noqa: E731
    closer = [(gap(base["ratio"]) - gap(r["ratio"]), r) for r in rows if r.get("ratio") and r["ratio"] > 0]
    closer = [(gain, r) for gain, r in closer if gain > 0]
    if not closer:
        return ""
    gain, row = max(closer, key=lambda pair: pair[0])
    return (f" The one that moves it furthest toward the post's {published:g}: {row['factor']} "
            f"({base['ratio']:.2f} to {row['ratio']:.2f}).")


def moved_factors(claim: dict, rows: list[dict]) -> list[str]:
    """The names of the factors conclusion() names as moving the ratio."""
    return [row["factor"] for row, _how in _moves(claim, rows)]


def answer_path(exp: str, claim_id: str) -> Path:
    """The explain's answer as data, beside its page: what the collection page shows by the claim
    (under the claim's home experiment, as its page)."""
    return reports_dir() / f"explain-{claim_experiments(exp, claim_id)[0]}-{claim_id}.json"


def write_answer(exp: str, claim: dict, rows: list[dict], scale: str, repeat: int, load_only: bool = False) -> Path:
    base = rows[0] if rows else {}
    record = {"experiment": exp, "claim_id": claim["id"], "scale": scale, "repeat": repeat, "to_end_of_load": load_only,
              "answer": conclusion(claim, rows), "moved": moved_factors(claim, rows),
              "tried": [r["factor"] for r in rows[1:] if r.get("ratio") is not None and not r.get("idle")],
              "idle": {r["factor"]: r["idle"] for r in rows[1:] if r.get("idle")},
              "not_run": {r["factor"]: r["reason"] for r in rows[1:] if r.get("verdict") == "not run"},
              "base": {"ratio": base.get("ratio"), "verdict": base.get("verdict"), "run": base.get("run")},
              "variants": [{k: r.get(k) for k in ("factor", "set", "ratio", "verdict", "run")} for r in rows],
              "page": page_path(exp, claim["id"]).name,
              "written": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    out = answer_path(exp, claim["id"])
    out.write_text(json.dumps(record, indent=1, default=str))
    return out


def read_answer(exp: str, claim_id: str) -> dict | None:
    path = answer_path(exp, claim_id)
    return json.loads(path.read_text()) if path.is_file() else None


def claims_in_run_order(exp: str, claim_ids: list[str], scale: str, only: list[str] | None = None) -> list[str]:
    """The claims in the order their runs are best made: a load claim's variants stop at the end
    of the load, and a run of the same settings that went on to the requests serves them
    (explain_runs), so the claims on the requests run first."""
    return sorted(claim_ids, key=lambda claim_id: bool(plan(exp, claim_id, scale, only)[2][0].scope))


def explain_claims(exp: str, claim_ids: list[str], scale: str = "default", target: str = "embedded",
                   repeat: int = 1, runner: Callable | None = None, only: list[str] | None = None,
                   started_at: float | None = None) -> list[Path]:
    """explain() for several claims of one experiment, every distinct run made once: claims on the
    same systems and phase (LinkBench's cached query rate, RSS and p99 on wt.op1 and rx.op1) share
    their base and every variant, so a second claim costs no run. Every claim is planned before
    anything runs, so a misspelt one is refused first. The pages come back in claim_ids' order.
    Every claim's sitting is the three hours before `started_at` (now by default)."""
    for claim_id in claim_ids:
        plan(exp, claim_id, scale, only)
    from .experiment import run_repeated
    run = runner or (lambda in_exp, changes, sets: run_repeated(in_exp, scale, target, repeat, changes, sets))
    made: dict[tuple, Path] = {}

    def once(in_exp: str, changes: list[str], sets: list[str]) -> Path:
        key = (in_exp, tuple(changes), tuple(sets))
        if key not in made:
            made[key] = run(in_exp, changes, sets)
        else:
            print(f"[explain] the same systems and settings ran already: {made[key].name}", flush=True)
        return made[key]
    started_at = time.time() if started_at is None else started_at
    pages = {claim_id: explain(exp, claim_id, scale, target, repeat, runner=once, only=only, reuse=runner is None,
                               started_at=started_at)
             for claim_id in claims_in_run_order(exp, claim_ids, scale, only)}
    return [pages[claim_id] for claim_id in claim_ids]


def claim_experiments(exp: str, claim_id: str) -> list[str]:
    """The experiments a claim of exp reads: exp alone, or both of a claim that compares two
    (lb.load.disk_vs_ssd: linkbench_uncached_disk+linkbench_uncached_ssd, in that order)."""
    rows = load_claims(exp).filter(pl.col("id") == claim_id)
    named = rows["experiment"][0] if rows.height else exp
    return named.split("+") if "+" in named else [exp]


def paired_plan(exp: str, claim_id: str, scale: str, only: list[str] | None = None
                ) -> tuple[list[str], dict, list[dict], list[Variant]]:
    """A claim's experiments (its home first: where its page and answer are kept) and the plan
    every one of them runs. A claim comparing two experiments is explained in both at once: a
    factor changes both sides alike (storage off on the disk alone would compare no device with
    the SSD), so the two plans must set the same keys, or the claim has no explain."""
    experiments = claim_experiments(exp, claim_id)
    claim, systems, variants = plan(experiments[0], claim_id, scale, only)

    def keys(planned: list[Variant]) -> list[tuple]:
        return [(v.factor, tuple(v.run_sets), tuple(v.changes), bool(v.not_run)) for v in planned]
    for other in experiments[1:]:
        ours, theirs = keys(variants), keys(plan(other, claim_id, scale, only)[2])
        differ = next(((a, b) for a, b in zip_longest(ours, theirs) if a != b), None)
        if differ:
            raise ValueError(f"CLAIM={claim_id} compares {' and '.join(experiments)}, whose variants differ "
                             f"({experiments[0]}: {differ[0] or 'none'}; {other}: {differ[1] or 'none'}): "
                             "a factor must change both alike")
    return experiments, claim, systems, variants


def explain(exp: str, claim_id: str, scale: str = "default", target: str = "embedded", repeat: int = 1,
            runner: Callable | None = None, only: list[str] | None = None, reuse: bool | None = None,
            started_at: float | None = None) -> Path:
    """Run the base and every variant of the claim's systems (or of the factors `only` names);
    write the page; its path. `reuse`: a variant (the base too) is read from a run of this
    sitting that measured its systems under its settings (explain_runs.existing_run) instead of
    run again, with REPEAT=1 (by default only when this function makes the runs itself).
    `started_at`: when the command started (now by default); the sitting is the three hours
    before it, so a run the plan counted on still serves hours into a long batch.
    `runner(experiment, systems, sets)` makes a run: a claim comparing two experiments runs each
    variant in both (paired_plan)."""
    from .experiment import run_repeated
    started_at = time.time() if started_at is None else started_at
    experiments, claim, systems, variants = paired_plan(exp, claim_id, scale, only)
    exp = experiments[0]
    labels = [s["label"] for s in systems]
    run = runner or (lambda in_exp, changes, sets: run_repeated(in_exp, scale, target, repeat, changes, sets))
    if reuse is None:
        reuse = runner is None
    rows, base_groups = [], {}
    for variant in variants:
        row = {"factor": variant.factor, "what": variant.what, "set": " ".join(variant.sets),
               "ran": ", ".join(variant.changes)}
        if variant.not_run:
            print(f"[explain {claim_id}] {variant.factor}: not run ({variant.not_run})", flush=True)
            rows.append({**row, "ratio": None, "verdict": "not run", "from": "", "reason": variant.not_run, "run": ""})
            continue
        try:
            paths, earlier = _variant_runs(experiments, claim_id, variant, scale, target, repeat, run, reuse,
                                           started_at)
        except ValueError as exc:  # refused before it started (e.g. a doubled cache over a memory limit)
            rows.append({**row, "ratio": None, "verdict": "not run", "from": "", "reason": str(exc), "run": ""})
            continue
        row["ran"] += "".join(f" ({where}run {path.name}, made earlier in this sitting)" for where, path in earlier)
        groups = {in_exp: repeats.group_runs(load_run(path)) for in_exp, path in paths.items()}
        if not base_groups:
            base_groups = groups
        else:
            row["idle"] = idle_in_base(variant, [run for group in base_groups.values() for run in group])
            groups = {in_exp: [side_by_side(g, base_groups[in_exp][i % len(base_groups[in_exp])], variant.changes)
                               for i, g in enumerate(group)] for in_exp, group in groups.items()}
        # A claim across experiments reads each run's partner in the other from the same variant.
        for i, one in enumerate(groups[exp]):
            one.companions = {other: groups[other][i % len(groups[other])] for other in experiments[1:]}
        measured = _measure(groups[exp], claim_id)
        rows.append({**row, "ratio": measured.get("measured_ratio"), "verdict": measured.get("verdict", "not measured"),
                     "from": measured.get("from", ""), "reason": measured.get("reason", ""),
                     "run": "; ".join(str(path) for path in paths.values())})
    page = write_page(exp, claim, labels, rows, scale, repeat, load_only=bool(variants[0].scope),
                      experiments=experiments)
    write_answer(exp, claim, rows, scale, repeat, load_only=bool(variants[0].scope))
    return page


def idle_in_base(variant: Variant, base_runs: list[RunData]) -> str:
    """Why the variant repeats the base, or "": its factor's counter (Factor.acted_counter) stayed
    at zero on every system it changes, in the phases the claim's runs ran, in every base run."""
    factor = next((f for f in FACTORS if f.name == variant.factor), None)
    if factor is None or factor.acted_counter is None:
        return ""
    seen = []
    for run in base_runs:
        if run.intervals.is_empty() or factor.acted_counter not in run.intervals.columns:
            return ""  # a run made before the counter was kept: nothing says it did not act
        rows = run.intervals.filter(pl.col("system").is_in(variant.changes))
        if variant.scope:
            rows = rows.filter(pl.col("phase") == "load")
        if rows.is_empty():
            return ""  # the system has no intervals here: nothing says what it did
        seen.append(rows[factor.acted_counter].fill_null(0).max() or 0)
    if not seen or any(seen):
        return ""
    return (f"{factor.acted_counter.split('.')[-1].replace('_', ' ')} stayed at 0 on "
            f"{', '.join(variant.changes)} in the base: this variant changes nothing that ran there")


def _variant_runs(experiments: list[str], claim_id: str, variant: Variant, scale: str, target: str, repeat: int,
                  run: Callable, reuse: bool, started_at: float) -> tuple[dict[str, Path], list[tuple[str, Path]]]:
    """The run of the variant in each experiment, made or read from this sitting; and those read
    (with the experiment named when the claim reads more than one)."""
    paths, earlier = {}, []
    for in_exp in experiments:
        where = f"{in_exp} " if len(experiments) > 1 else ""
        found = (existing_run(in_exp, scale, variant.changes, variant.run_sets, target, now=started_at)
                 if reuse and repeat == 1 else None)
        if found is not None:
            print(f"[explain {claim_id}] {variant.factor}: {where}run {found.name} measured "
                  f"{', '.join(variant.changes)} under these settings in this sitting; read, not run again", flush=True)
            earlier.append((where, found))
            paths[in_exp] = found
            continue
        print(f"[explain {claim_id}] {variant.factor}: {where}{' '.join(variant.sets) or '(base)'}; runs "
              f"{', '.join(variant.changes)}" + (" up to the end of their load" if variant.scope else ""), flush=True)
        paths[in_exp] = run(in_exp, variant.changes, variant.run_sets)
    return paths, earlier


def write_page(exp: str, claim: dict, labels: list[str], rows: list[dict], scale: str, repeat: int,
               load_only: bool = False, experiments: list[str] | None = None) -> Path:
    out_dir = reports_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    out = page_path(exp, claim["id"])
    experiments = experiments or [exp]
    where = " and ".join(experiments) + (", each variant run in both, set alike" if len(experiments) > 1 else "")
    lead = (f"<h1>Why {html_lib.escape(claim['id'])} reads as it does</h1>"
            f"<p><em>{html_lib.escape(claim['claim'])}</em> (published {claim['reference_ratio'] or 'no'} ratio, "
            f"expected {html_lib.escape(claim['expect'])}). Systems {', '.join(labels)} of {where} at the {scale} scale, "
            f"{repeat} run(s) per variant; each variant differs from the base in one factor, set as shown. "
            "The verdict includes the noise rule (within noise: the ratio is closer to the bound than the "
            "runs' spread, or for a single run the host's speed change and the intervals' swing, allow). "
            "Every variant loads afresh, as the base did; one whose systems and settings a run of this sitting "
            "(the last three hours) already measured is read from that run, named in its row."
            + (" The claim reads the load phase, so every run, the base's included, stops at the end of its "
               "systems' load (measure_requests false), or is read from a run that loaded them alike and went on "
               "to their requests: nothing after the load changes what it measured."
               if load_only else "") + "</p>"
            f"<p><strong>{html_lib.escape(conclusion(claim, rows))}</strong></p>")
    shown = pl.DataFrame([{k: (round(v, 3) if isinstance(v, float) and math.isfinite(v) else v)
                           for k, v in r.items()} for r in rows])
    body = lead + table(shown, f"{claim['id']} under each variant")
    out.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>explain {html_lib.escape(claim['id'])}"
                   f"</title>{STYLE}</head><body style='font-family: system-ui, sans-serif; margin: 24px'>{body}"
                   "</body></html>")
    return out


def differs(row: dict) -> bool:
    """A verdict that differs from the post: it does not hold, or holds with a size outside
    SIZE_FACTOR of the published one."""
    if row["verdict"] == FAILS:
        return True
    published = published_size(row.get("published_ratio"), row.get("expect"))
    return row["verdict"] == HOLDS and bool(published) and size_agrees(published, row["measured_ratio"]) is False


def page_path(exp: str, claim_id: str) -> Path:
    """A claim's explain page, kept under its home experiment (claim_experiments)."""
    return reports_dir() / f"explain-{claim_experiments(exp, claim_id)[0]}-{claim_id}.html"


def explain_note(exp: str, claims: pl.DataFrame) -> str:
    """For the report, under its claims: each verdict that differs from the post, with the command
    that explains it, linked to its page where one was made."""
    items = []
    for row in claims.iter_rows(named=True):
        if not differs(row):
            continue
        page = page_path(exp, row["id"])
        link = f" (<a href='{html_lib.escape(page.as_uri())}'>its page</a>)" if page.exists() else ""
        answer = read_answer(exp, row["id"])
        said = f": {html_lib.escape(answer['answer'])}" if answer else ""
        items.append(f"<li><code>make explain EXP={exp} CLAIM={html_lib.escape(row['id'])}</code>{link}{said}</li>")
    if not items:
        return ""
    return ("<p>Verdicts that differ from the post; each command runs the claim's systems once per named factor "
            "(settings, release, insert grouping, checkpoint, journal compressor, MongoRocks' scans, write throttle "
            "and tombstone compactions, query yields, reads before writes, storage, cache, threads) and writes a "
            "page naming the factors that move the ratio:</p><ul>" + "".join(items) + "</ul>")
