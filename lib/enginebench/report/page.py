"""The sections every report page shares, called from each family's notebook.

A notebook keeps only what is its family's own (its tables, charts and findings); opening the
run, the claims table, the repeats and the provenance are the same on every page and live here,
so a change to them is made once.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import polars as pl
from IPython.display import HTML, Markdown, display

from ..params import load_params
from . import html, repeats
from .summary import CLAIMS_MIME, json_safe
from .rundata import RunData, load_run

CLAIM_COLUMNS = ("id", "claim", "published_ratio", "measured_ratio", "expect", "verdict", "from", "reason")
VERDICT_CLASSES = {"holds": "eb-holds", "does not hold": "eb-fails", "not evaluated": "eb-na"}


def experiment_params(exp: str, scale: str) -> dict:
    """The experiment's resolved params; a bad params file fails here, before anything starts."""
    params = load_params(exp, scale)
    print(f"{params['title']}: scale {scale}, {len(params['systems'])} systems")
    return params


def open_run(exp: str, scale: str, target: str, run_dir: str) -> RunData:
    """The run this page reports: `run_dir` when given, else a fresh run of the experiment."""
    if run_dir:
        return load_run(Path(run_dir))
    from .. import run as run_experiment  # the driver, imported only when the page runs one
    return load_run(run_experiment(exp, scale, target))


def claims(run: RunData, claims_table: Callable) -> pl.DataFrame:
    """The family's claims, combined over the run's repeat group (REPEAT=n)."""
    return repeats.claims(run, claims_table)


def show_claims(table: pl.DataFrame, title: str = "Claims", columns=CLAIM_COLUMNS) -> None:
    """The claims table; its rows also go out as JSON (CLAIMS_MIME), which the page ignores and
    summary.json takes its verdicts from."""
    present = [c for c in columns if c in table.columns]
    display({"text/html": html.table(table.select(present), title, classes=VERDICT_CLASSES),
             CLAIMS_MIME: {"claims": json_safe(table.to_dicts())}}, raw=True)


def show_repeats(run: RunData) -> None:
    display(Markdown(repeats.section(run)))
    group = repeats.group_runs(run)
    if len(group) > 1:
        display(HTML(html.table(repeats.spread_table(group), "Headline numbers over the repeated runs")))


def show_provenance(run: RunData) -> None:
    display(HTML(html.provenance(run)))
