"""`make explain-differing`: `make explain` for every claim the collection page lists as
"not explained yet": its verdict at the scale differs from the post's (explain.differs) and no
explain answer is on file. One experiment at a time, its claims together, so a run they share is
made once (explain.explain_claims). `PLAN=1` prints the runs and the time they should take on this
host (from its newest complete run of each experiment, system by system) and runs nothing: at the
default scale a whole collection's explains take hours, and the plan says which ones.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl

from .collection import wall_seconds
from .explain import claim_experiments, claims_in_run_order, differs, paired_plan, read_answer
from .explain_runs import existing_run, measured_as, serves
from .params import experiments as all_experiments
from .paths import reference_dir, results_dir


def differing(scale: str, only: list[str] | None = None, again: bool = False) -> dict[str, list[str]]:
    """Per experiment (in the collection's order), the claims whose newest embedded verdict at
    `scale` differs from the post, without an answer unless `again`."""
    from .report.collection import claim_rows
    order = all_experiments()
    unknown = [name for name in only or [] if name not in order]
    if unknown:
        raise ValueError(f"EXPERIMENTS: {', '.join(map(repr, unknown))} not an experiment; allowed: "
                         + ", ".join(order))
    todo: dict[str, list[str]] = {}
    # The collection's rows leave out the expectation; differs needs it (a bound has no size).
    expects = dict(pl.read_csv(reference_dir() / "claims.csv", infer_schema_length=0).select("id", "expect").iter_rows())
    for row in claim_rows():
        if row["scale"] != scale or row["target"] != "embedded" or (only and row["experiment"] not in only):
            continue
        if not differs({**row, "expect": expects.get(row["claim_id"])}):
            continue
        if read_answer(row["experiment"], row["claim_id"]) and not again:
            continue
        # A claim comparing two experiments has a row in each, and one explain that runs both: in
        # the batch of the later one, after the other's claims, whose runs may then serve it.
        batch = max(claim_experiments(row["experiment"], row["claim_id"]), key=order.index)
        claims = todo.setdefault(batch, [])
        if row["claim_id"] not in claims:
            claims.append(row["claim_id"])
    return {exp: todo[exp] for exp in order if exp in todo}


def system_seconds(exp: str, scale: str, to_end_of_load: bool = False) -> dict[str, float]:
    """How long each system takes in a run of exp at scale on this host, from the newest complete
    run (without --set) that ran it: its runner's time (first event to done, or to the end of its
    load phase: a load claim's runs stop there), scaled so a run's systems add up to its wall time
    (the driver's own work between them counted in proportion)."""
    found: dict[str, float] = {}
    for path in sorted((results_dir() / exp).glob("*/manifest.json"), reverse=True):
        manifest = json.loads(path.read_text())
        if (manifest.get("status") != "complete" or manifest.get("scale") != scale
                or (manifest.get("params") or {}).get("sets")):
            continue
        own, until = {}, {}
        for events_path in path.parent.glob("*/events.jsonl"):
            events = [json.loads(line) for line in events_path.read_text().splitlines() if line.strip()]
            times = [e.get("t") for e in events if isinstance(e.get("t"), (int, float))]
            if times:
                label = events_path.parent.name
                own[label] = max(times) - min(times)
                load_end = [e["t"] for e in events if e.get("event") == "phase_end" and e.get("phase") == "load"]
                until[label] = (load_end[0] - min(times)) if load_end else own[label]
        wall, total = wall_seconds(manifest), sum(own.values())
        for label, seconds in (until if to_end_of_load else own).items():
            found.setdefault(label, seconds * (wall or total) / total)
    return found


def planned_runs(exp: str, claim_ids: list[str], scale: str, planned: list | None = None,
                 started_at: float | None = None) -> list[tuple[str, str, list[str], list[str], bool]]:
    """The distinct runs explain_claims would make, in its order: (experiment, factor, systems,
    the factor's --sets, whether the systems stop after their load). A variant is left out where
    a run of this sitting, or one planned before it (another claim's, of more systems, or one
    that went on past the same load), measured its systems under its settings (explain_runs). A
    claim comparing two experiments plans its runs in both. `planned`: what earlier batches plan
    (the runs of an experiment's own claims serve a claim across it and another), added to.
    `started_at`: the command's start, whose sitting the explains read (explain.explain)."""
    runs, planned = [], ([] if planned is None else planned)
    for claim_id in claims_in_run_order(exp, claim_ids, scale):
        experiments, _claim, _systems, variants = paired_plan(exp, claim_id, scale)
        for variant in variants:
            if variant.not_run:
                continue
            for in_exp in experiments:
                wanted = measured_as(in_exp, scale, variant.run_sets)
                if (any(done == in_exp and serves(ran, wanted, variant.changes) for done, ran in planned)
                        or existing_run(in_exp, scale, variant.changes, variant.run_sets, now=started_at)):
                    continue
                planned.append((in_exp, (wanted[0], {label: wanted[1][label] for label in variant.changes})))
                runs.append((in_exp, variant.factor, list(variant.changes), list(variant.sets), bool(variant.scope)))
    return runs


def plan_text(todo: dict[str, list[str]], scale: str, started_at: float | None = None) -> str:
    """What `make explain-differing` would run, with the time each experiment's runs should take."""
    if not todo:
        return f"explain-differing: every claim that differs from the post at the {scale} scale has an answer"
    lines, total, unknown = [], 0.0, []
    timings: dict[tuple[str, bool], dict[str, float]] = {}

    def seconds(in_exp: str, load_only: bool) -> dict[str, float]:
        if (in_exp, load_only) not in timings:
            timings[in_exp, load_only] = system_seconds(in_exp, scale, to_end_of_load=load_only)
        return timings[in_exp, load_only]
    planned: list = []
    for exp, claim_ids in todo.items():
        runs = planned_runs(exp, claim_ids, scale, planned, started_at)
        known = all(label in seconds(in_exp, False) for in_exp, _f, changes, _s, _l in runs for label in changes)
        spent = sum(seconds(in_exp, load_only).get(label, 0.0)
                    for in_exp, _f, changes, _s, load_only in runs for label in changes)
        if known:
            total += spent
        else:
            unknown.append(exp)
        when = f"about {spent / 60:.0f} min" if known else "no complete run here to time it from"
        lines.append(f"{exp}: {', '.join(claim_ids)}: {len(runs)} runs, {when}")
        lines.extend(f"    {factor}: {', '.join(changes)}" + (f" in {in_exp}" if in_exp != exp else "")
                     + (" to the end of the load" if load_only else "")
                     + (f" ({' '.join(sets)})" if sets else "") for in_exp, factor, changes, sets, load_only in runs)
    head = f"explain-differing at the {scale} scale: about {total / 60:.0f} min in all"
    if unknown:
        head += f", plus {', '.join(unknown)} (never run here at this scale)"
    return "\n".join([head, *lines])


def explain_differing(scale: str, target: str = "embedded", repeat: int = 1, only: list[str] | None = None,
                      again: bool = False, dry_run: bool = False) -> list[Path]:
    """Explain every differing claim without an answer, experiment by experiment; prints the plan
    first. The pages written (none with dry_run). Every batch reads the sitting of the command's
    start, the one its plan was made in: otherwise a run the plan counted on could age out of
    the three hours while an earlier experiment's explains ran (the uncached SSD's disk loads,
    planned as served by runs 2 h 50 min old, would have been made again an hour later)."""
    from .explain import explain_claims
    started_at = time.time()
    todo = differing(scale, only, again)
    print(plan_text(todo, scale, started_at), flush=True)
    if dry_run:
        return []
    pages = []
    for exp, claim_ids in todo.items():
        pages.extend(explain_claims(exp, claim_ids, scale, target, repeat, started_at=started_at))
    return pages
