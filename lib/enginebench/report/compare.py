"""`make compare A=<run> B=<run>`: one page that points at what changed between two runs.

In order: what changed most, links to both runs' reports, the headline numbers' differences
sorted by size and marked against the noise of repeats, the host-speed probes side by side with
the ratios corrected by them, latency per op type, claim verdicts, then the provenance that
differs. The tables come from report/differences.py.
"""
from __future__ import annotations

import html as html_lib
import os
from pathlib import Path
from typing import Callable

import polars as pl

from ..families import family
from ..paths import reports_dir
from ..results.rundir import settle
from . import repeats
from .differences import (NO_REPEATS, NOISE_CVS, headline_differences, latency_differences,
                          provenance_differences, verdict_differences)
from .hostspeed import probe_ratio, probe_table
from .html import STYLE, number, table
from .claims import VERDICT_CLASSES
from .rundata import RunData, load_run
from .runs import find_run

def family_claims(run: RunData) -> pl.DataFrame:
    """The claims the run's own report shows: its family's, combined over its repeat group."""
    name = run.manifest["params"]["workload"]["name"]
    return repeats.claims(run, family(name).report_module().claims_table)


def _p(text: str) -> str:
    return f"<p class='eb-scale'>{text}</p>"


def header(a: RunData, b: RunData) -> str:
    from .collection import hardware, host_of
    title = f"{a.manifest['experiment']}: {a.manifest['run_id']} (A) against {b.manifest['run_id']} (B)"
    out = f"<h1>{html_lib.escape(title)}</h1>"
    hosts = [host_of(run.manifest) for run in (a, b)]
    # Two hosts' runs of one experiment (make all CLUSTER=...): which machine each number is from.
    out += _p(html_lib.escape(
        f"A ran on {hosts[0]} ({hardware(a.manifest)}), B on {hosts[1]} ({hardware(b.manifest)})"
        + (": two hosts, so the host-speed probes below say how far their speeds differ." if hosts[0] != hosts[1]
           else ": the same host.")))
    if a.manifest["experiment"] != b.manifest["experiment"]:
        out += (f"<div class='eb-banner'>A is {html_lib.escape(a.manifest['experiment'])} and B is "
                f"{html_lib.escape(b.manifest['experiment'])}: different experiments, so only systems with "
                "the same label are compared.</div>")
    return out


def links(a: RunData, b: RunData, out_dir: Path) -> str:
    """Each run's own report (<run folder>/report.html), linked relative to this page."""
    items = []
    for side, run in (("A", a), ("B", b)):
        m = run.manifest
        page = run.path / "report.html"
        what = (f"{html_lib.escape(m['run_id'])}: status {html_lib.escape(str(m['status']))}, scale "
                f"{html_lib.escape(str(m['scale']))}, folder {html_lib.escape(str(run.path))}")
        if page.exists():
            href = html_lib.escape(os.path.relpath(page.resolve(), out_dir.resolve()))
            items.append(f"<li>{side}: <a href='{href}'>report of run {what}</a></li>")
        else:
            items.append(f"<li>{side}: {what}; no report yet (make experiment EXP={html_lib.escape(m['experiment'])} "
                         f"RUN={html_lib.escape(str(run.path))} renders one)</li>")
    return "<h2 id='reports'>The two runs' reports</h2><ul class='eb-scale'>" + "".join(items) + "</ul>"


def lead(headlines: pl.DataFrame, verdicts: pl.DataFrame | None) -> str:
    """What changed most: the three largest headline differences not within noise, and the
    verdicts that changed."""
    notable = headlines.filter(~pl.col("noise").str.starts_with("within") & pl.col("B / A").is_not_null()).head(3)
    parts = [f"{html_lib.escape(r['system'])} {r['phase']} {html_lib.escape(r['metric'])} x{number(r['B / A'])} "
             f"({html_lib.escape(r['noise'])})" for r in notable.iter_rows(named=True)]
    text = ("Largest differences: " + "; ".join(parts) + ".") if parts else "No headline difference beyond noise."
    if verdicts is not None:
        changed = verdicts.filter(pl.col("changed") == "changed")
        text += (f" Verdicts changed: {', '.join(html_lib.escape(i) for i in changed['id'])}." if changed.height
                 else " No claim's verdict changed.")
    return f"<p class='eb-answer'><b>What changed.</b> {text}</p>"


def headline_section(headlines: pl.DataFrame, noise: tuple[dict, dict]) -> str:
    repeated = [side for side, cvs in zip("AB", noise) if cvs]
    rule = (f"A difference is <b>within noise</b> when |ln(B / A)| is at most {NOISE_CVS:g} times the "
            "coefficient of variation (sample sd / mean) of that number over the run's repeats (REPEAT=n), "
            "the larger of A's and B's where both were repeated; 2 CV is about the 95% range of one run's "
            "figure around its group's mean. ")
    rule += (f"Repeats found for {' and '.join(repeated)}." if repeated else
             f"Neither run was repeated, so every difference reads '{NO_REPEATS}': even a large one may be the "
             "host's drift.")
    return ("<h2 id='headlines'>Headline numbers</h2>" + _p(
        "Per system and phase, B / A for each headline number, the largest effect |ln(B / A)| first (a halving "
        "ranks with a doubling). p99 is over all op types of the phase; a number that is 0 in both runs is left "
        "out, and one that is 0 in one run only has no ratio (n/a). " + rule)
        + table(headlines, "Headline numbers, B / A, largest difference first"))


def host_section(a: RunData, b: RunData, probes: float | None) -> str:
    meaning = (f"B's host ran the probe {number(probes)} times as fast as A's (mean of start and end). "
               if probes else "At least one run has no probe, so no ratio is corrected. ")
    return ("<h2 id='host'>Host speed</h2>" + _p(
        "Each run times a fixed piece of the harness's single-threaded work (BSON encode, decode and hash) at its "
        "start and end. " + meaning + "The column 'B / A at A's host speed' divides a rate's ratio by the probes' "
        "ratio and multiplies a time's (cpu/o, latency) by it: what B would have measured on a host as fast as A's. "
        "Its limits: the probe measures one thread of Python work, not the engines' compiled code, the device or "
        "memory; only a figure bound by the CPU moves with it, so counts and bytes (r/o, KB/o, size) are not "
        "corrected, and the host's speed between the two probes is not known.")
        + table(probe_table(a, b), "Host-speed probe, A and B"))


def latency_section(a: RunData, b: RunData, probes: float | None) -> str:
    return ("<h2 id='latency'>Latency per op type</h2>"
            + _p("Response times from each phase's exactly merged histograms, for the op types both runs timed; "
                 "the largest p99 change first.")
            + table(latency_differences(a, b, probes), "p50 and p99 per op type (ms), B / A"))


def verdict_section(verdicts: pl.DataFrame | None, a: RunData, b: RunData) -> str:
    head = "<h2 id='verdicts'>Claim verdicts</h2>"
    if verdicts is None:
        names = [r.manifest["params"]["workload"]["name"] for r in (a, b)]
        return head + _p(f"A is a {names[0]} run and B a {names[1]} run: their claims are not the same, so "
                         "no verdicts are compared.")
    return (head + _p("Each run's claims as its own report shows them (combined over its repeats); a measured "
                      "ratio has no unit (one system's figure over the other's). Changed verdicts first.")
            + table(verdicts, "Verdict per claim, A and B", classes=VERDICT_CLASSES))


def compare_verdicts(a: RunData, b: RunData, claims_of: Callable) -> pl.DataFrame | None:
    if a.manifest["params"]["workload"]["name"] != b.manifest["params"]["workload"]["name"]:
        return None
    return verdict_differences(claims_of(a), claims_of(b))


def page(a: RunData, b: RunData, out_dir: Path, claims_of: Callable = family_claims) -> str:
    if not set(s["label"] for s in a.systems) & set(s["label"] for s in b.systems):
        raise ValueError(f"{a.path} and {b.path} have no system label in common; nothing to compare")
    noise = (repeats.noise_cv(a), repeats.noise_cv(b))
    probes = probe_ratio(a, b)
    headlines = headline_differences(a, b, noise, probes)
    verdicts = compare_verdicts(a, b, claims_of)
    return (header(a, b) + lead(headlines, verdicts) + links(a, b, out_dir) + headline_section(headlines, noise)
            + host_section(a, b, probes) + latency_section(a, b, probes) + verdict_section(verdicts, a, b)
            + "<h2 id='provenance'>Provenance</h2>"
            + table(provenance_differences(a, b), "What differs between the runs (params, host, code, versions)"))


def write_comparison(path_a: str | Path, path_b: str | Path, claims_of: Callable = family_claims) -> Path:
    """A and B: results folders, `<exp>/<run id>` or run ids (report/runs.py find_run)."""
    path_a, path_b = find_run(str(path_a), "A"), find_run(str(path_b), "B")
    for path in (path_a, path_b):  # a `running` run whose driver is gone is compared as died
        settle(path, "make compare")
    a, b = load_run(path_a), load_run(path_b)
    out_dir = reports_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    body = page(a, b, out_dir, claims_of)
    title = html_lib.escape(f"{a.manifest['run_id']} (A) against {b.manifest['run_id']} (B)")
    out = out_dir / f"compare-{a.manifest['run_id']}-vs-{b.manifest['run_id']}.html"
    out.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>{STYLE}"
                   f"</head><body style='font-family: system-ui, sans-serif; margin: 24px'>{body}</body></html>")
    return out
