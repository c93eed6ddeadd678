"""The sections every report page shares, called from each family's notebook.

A notebook keeps only what is its family's own (its tables, charts and findings); opening the
run, the claims table, the repeats and the provenance are the same on every page and live here,
so a change to them is made once.
"""
from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Callable

import polars as pl
from IPython.display import HTML, Markdown, display

from ..params import load_params
from . import html, repeats
from .claims import SIZE_FACTOR, TABLE_COLUMNS, VERDICT_CLASSES, claim_figure, verdict_summary
from .summary import CLAIMS_MIME, json_safe
from .rundata import RunData, load_run



def experiment_params(exp: str, scale: str) -> dict:
    """The experiment's resolved params; a bad params file fails here, before anything starts."""
    return load_params(exp, scale)


def open_run(exp: str, scale: str, target: str, run_dir: str) -> RunData:
    """The run this page reports: `run_dir` when given, else a fresh run of the experiment."""
    from .. import run as run_experiment  # the driver, imported only when the page runs one
    run = load_run(Path(run_dir) if run_dir else run_experiment(exp, scale, target))
    html.mark_partial(run.systems)
    return run


def claims(run: RunData, claims_table: Callable) -> pl.DataFrame:
    """The family's claims, combined over the run's repeat group (REPEAT=n)."""
    return repeats.claims(run, claims_table)


def show_claims(table: pl.DataFrame, title: str = "Claims", columns=TABLE_COLUMNS, run: RunData | None = None) -> None:
    """The claims table; its rows also go out as JSON (CLAIMS_MIME), which the page ignores and
    summary.json takes its verdicts from. With the run: how to explain each verdict that differs
    from the post (`make explain`), linked to its page where one was made."""
    present = [c for c in columns if c in table.columns]
    display({"text/html": html.table(table.select(present), title, classes=VERDICT_CLASSES),
             CLAIMS_MIME: {"claims": json_safe(table.to_dicts())}}, raw=True)
    if run is not None:
        from ..explain import explain_note
        note = explain_note(run.manifest["experiment"], table)
        if note:
            display(HTML(note))
        show_server_layer(run, table)


def show_server_layer(run: RunData, claims: pl.DataFrame) -> None:
    """How far a server's own layer, which an embedded run leaves out, would move each ratio."""
    from .. import server_cost as measured_cost
    from . import server_cost
    measured = measured_cost.latest()
    found = server_cost.table(run, claims, measured)
    said = server_cost.sentence(run, measured, found)
    if said:
        display(Markdown(said))
    if not found.is_empty():
        display(HTML(html.table(found, "The claims' ratios with a server's layer added (an upper bound)")))


def show_context(run: RunData) -> None:
    """The post's scale beside this run's, and the post's ratio between its engines beside ours."""
    from . import context
    from .trust import one_server_reason
    display(HTML(html.table(context.scale_mapping(run), "The post's scale and ours")))
    one_server = one_server_reason(run)
    if one_server:  # TARGET=uri: one server measured in place of the post's engines
        display(HTML(f"<p>The post's ratio between its engines is not set beside ours: {escape(one_server)}.</p>"))
        return
    display(HTML(html.table(context.normalised_view(run), "The post's ratio between its engines beside ours "
                            "(b-tree / LSM; TokuMX: MMAPv1 / fractal tree)")))


def show_repeats(run: RunData) -> None:
    display(Markdown(repeats.section(run)))
    group = repeats.group_runs(run)
    if len(group) > 1:
        display(HTML(html.table(repeats.spread_table(group), "Headline numbers over the repeated runs")))


def show_per_second(run: RunData) -> None:
    """Where a stall hides: the seconds whose rate dipped, and those phases second by second;
    when RocksDB held writes back; the engines' checkpoints on the per-second rate."""
    from IPython.display import Image

    from . import charts, per_second
    found = per_second.dips(run)
    display(Markdown(per_second.sentence(run, found)))
    if not found.is_empty():
        display(HTML(html.table(found, "Seconds that dipped, per system and phase")))
        display(Image(charts.to_png(per_second.chart(run, found))))
    held = per_second.throttled(run)
    said = per_second.throttle_sentence(run, held)
    if said:
        display(Markdown(said))
    if not held.is_empty():
        display(HTML(html.table(held, "When RocksDB held writes back, per interval")))
    from . import checkpoints
    marked = checkpoints.spans(run)
    display(Markdown(checkpoints.sentence(run, marked)))
    if not marked.is_empty():
        display(HTML(html.table(checkpoints.table(run, marked), "The engines' checkpoints inside each phase")))
        display(Image(charts.to_png(checkpoints.chart(run, marked))))


def show_engine_counters(run: RunData) -> None:
    """The fractal tree's own counters per phase (report/engine_counters.py), where it ran, and
    MongoRocks' throttle and tombstone compactions where RocksDB ran with them."""
    from . import engine_counters
    table = engine_counters.table(run, "fractal")
    if not table.is_empty():
        display(HTML(html.table(table, "The fractal tree's own counters, per phase (PerconaFT's engine status)")))
    table = engine_counters.table(run, "rocksdb")
    counted = table.drop("system", "phase") if not table.is_empty() else table
    if not counted.is_empty() and any(counted[c].null_count() < counted.height for c in counted.columns):
        display(HTML(html.table(table, "MongoRocks' write throttle and tombstone compactions, per phase")))


def show_provenance(run: RunData) -> None:
    display(HTML(html.provenance(run)))


# -- the first screen ------------------------------------------------------------------------
TOC_MARK = "<!-- eb-toc -->"   # experiment.to_html puts the page's contents here


def show_header(run: RunData, claims: pl.DataFrame) -> None:
    """What a reader needs first: which experiment, the question it asks, the answer this run
    gives (with how far to trust it), what ran at which scale, and the way to the rest."""
    params = run.manifest["params"]
    sentences = "".join(f"<li>{escape(line)}</li>" for line in claim_sentences(claims))
    parts = [f"<h1>{escape(params['title'])}</h1>",
             f"<p class='eb-question'><b>Question.</b> {escape(params.get('question') or '')}</p>",
             f"<div class='eb-answer'><b>Answer from this run.</b><ul>{sentences}</ul>{escape(answer(run, claims))} "
             "<a href='#Claims'>Claims</a></div>",
             f"<p class='eb-scale'><b>Scale.</b> {escape(scale_line(run))}</p>",
             TOC_MARK]
    display(HTML("\n".join(parts)))


HEADLINE_CLAIMS = 4  # the first claims of claims.csv for the experiment: the post's own headline order


def claim_sentences(claims: pl.DataFrame) -> list[str]:
    """One plain sentence per headline claim: the post's words, its ratio and ours side by side,
    and the verdict or why there is none."""
    lines = []
    for row in claims.head(HEADLINE_CLAIMS).iter_rows(named=True):
        published = claim_figure(row.get("published_ratio"), row.get("expect")) or "no figure"
        ours = claim_figure(row.get("measured_ratio"), row.get("expect")) or "not measured"
        why = f" ({row['reason']})" if row.get("reason") and row["verdict"] not in ("holds", "does not hold") else ""
        if row["verdict"] == "holds" and row.get("size") == "direction only":
            why = f" in direction only: outside {SIZE_FACTOR:g}x of the post's size"
        lines.append(f"{row['claim']}: the post {published}, this run {ours}; {row['verdict']}{why}.")
    return lines


def answer(run: RunData, claims: pl.DataFrame) -> str:
    """One line: the verdicts with their trust (claims.verdict_summary: smoke, host drift and
    unsteady systems withhold them), and what an unfinished run leaves judged."""
    if claims.is_empty():
        return "no claim could be evaluated."
    text = f"{len(claims)} claims: {verdict_summary(claims)}."
    if run.manifest.get("status") != "complete":
        text += f" The run is {run.manifest.get('status')}: only what its complete systems measured is judged."
    return text


def scale_line(run: RunData) -> str:
    """The scale's name and its phases as they ran: the load, the pause, the measured phases."""
    phases = run.manifest["params"].get("phases") or {}
    measure = phases.get("measure") or {}
    threads = measure.get("threads")
    clients = (f"{', '.join(map(str, threads))} clients in turn" if isinstance(threads, list)
               else f"{threads} clients")
    parts = [f"{run.manifest.get('scale')}", f"load with {(phases.get('load') or {}).get('threads')} threads"]
    if phases.get("cold_start") not in (None, "none"):
        parts.append(f"cold start ({phases['cold_start']})")
    restored = {label: info["load_restored"] for label, info in run.manifest.get("systems", {}).items()
                if info.get("load_restored")}
    if restored:
        parts.append("measured from a copy of an earlier load (phases.load.reuse): "
                     + ", ".join(f"{label} from {o.get('run')}/{o.get('system')}" for label, o in restored.items()))
    if measure.get("duration_s"):
        intervals = int(measure["duration_s"] // measure["interval_s"])
        warmup = f" after {measure['warmup_s']:g} s of warm-up" if measure.get("warmup_s") else ""
        if measure.get("until_steady"):
            # What ran: each system's phase ended once steady (report/steady.py), not at its maximum.
            ran = [f"{p['system']} {p['seconds']:g} s" for p in measured_lengths(run)]
            parts.append(f"measured until steady ({measure.get('min_duration_s') or 0:g}-{measure['duration_s']:g} s "
                         f"in {measure['interval_s']:g}-s intervals){warmup} with {clients}"
                         + (f": {', '.join(ran)}" if ran else ""))
        else:
            parts.append(f"measured {intervals} x {measure['interval_s']:g} s{warmup} with {clients}")
    return "; ".join(parts) + "."


def measured_lengths(run: RunData) -> list[dict]:
    """How long each system's measured phase ("run") lasted, as its runner reported."""
    out = []
    for label, info in (run.manifest.get("systems") or {}).items():
        for phase in info.get("phases") or []:
            if phase.get("phase") == "run" and phase.get("seconds") is not None:
                out.append({"system": label, "seconds": round(phase["seconds"])})
    return out
