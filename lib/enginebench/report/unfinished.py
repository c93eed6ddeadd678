"""What is still valid of a system that did not finish: one paragraph every family's findings carry.

A runner killed in its query phase has already loaded its database and verified it; that load
is a whole measurement, and a reader should not have to dig it out of the tables, where the
system's rows are all tagged "(<status>: partial)" (html.mark_partial). What the system measured
after the load stays partial: the findings say so, and no claim reads it (claims use
RunData.complete_systems only).
"""
from __future__ import annotations

import re

import polars as pl

from .html import number
from .rundata import RunData, phase_summary, system_events

NOTHING_COMPLETED = "No system completed, so there is nothing to compare. The banner above says why."


def unfinished_systems(run: RunData) -> list[dict]:
    """The systems that started but did not complete (the ones html.mark_partial tags)."""
    return [s for s in run.systems if s.get("status") not in ("complete", "not run")]


def _phase_events(run: RunData, system: dict) -> tuple[list[str], dict[str, dict]]:
    """The phases the system started, in order, and those that ended (name -> phase_end event).
    events.jsonl has every event; the manifest (for a run whose folder lost it) only the ended
    phases and, for a failed system, its last events."""
    events = system_events(run, system["label"], "phase_start", "phase_end") or system.get("last_events") or []
    started = [e["phase"] for e in events if e.get("event") == "phase_start"]
    ended = {p["phase"]: p for p in system.get("phases") or []}
    ended.update({e["phase"]: e for e in events if e.get("event") == "phase_end"})
    return started, ended


def stopped_where(run: RunData, system: dict) -> str:
    """'in the run phase', 'after the load phase' or 'before its first phase'."""
    started, ended = _phase_events(run, system)
    aborted = next((name for name, end in ended.items() if end.get("aborted")), None)
    open_phase = next((name for name in reversed(started) if name not in ended), None)
    if aborted or open_phase:
        return f"in the {aborted or open_phase} phase"
    if ended:
        return f"after the {list(ended)[-1]} phase"
    return "before its first phase"


def short_cause(system: dict) -> str:
    """The signal that killed the runner when one did (supervision.exit_cause names it), else the
    error's first clause: the banner above carries the whole of it."""
    error = str(system.get("error") or "no reason recorded")
    killed = re.search(r"killed by (SIG[A-Z0-9]+)", error)
    return killed.group(1) if killed else error.split("; ")[0]


def valid_load(run: RunData, system: dict) -> dict | None:
    """The load's figures when the load ended whole and its verification found every document;
    None otherwise."""
    _, ended = _phase_events(run, system)
    load = ended.get("load")
    if load is None or load.get("aborted") or not (system.get("load_verified") or {}).get("ok"):
        return None
    return phase_summary(run.intervals, system["label"], "load")


def _partial_phases(run: RunData, label: str, without: set[str]) -> list[str]:
    if run.intervals.is_empty():
        return []
    mine = run.intervals.filter(pl.col("system") == label)
    return [p for p in mine["phase"].unique(maintain_order=True).to_list() if p not in without]


def system_line(run: RunData, system: dict) -> str:
    """One unfinished system: where and why it stopped, its load if valid, and what is partial."""
    label, status = system["label"], system.get("status")
    text = f"{label} {status} {stopped_where(run, system)} ({short_cause(system)})"
    load = valid_load(run, system)
    if load:
        text += (f"; its load completed and verified: {number(load['ops_per_s'])} docs/s over "
                 f"{number(load['seconds'])} s")
    elif (system.get("load_verified") or {}).get("ok") is False:
        text += "; its load ended but its verification found other counts than expected, so it is not valid"
    else:
        text += "; its load did not complete, so nothing it measured is valid"
    partial = _partial_phases(run, label, {"load"} if load else set())
    if partial:
        which = f"{partial[0]}-phase figures" if len(partial) == 1 else f"figures of the {', '.join(partial)} phases"
        text += f". Its {which} are partial: tagged \"({status}: partial)\" in the tables and used by no claim"
    return text + "."


def paragraphs(run: RunData) -> list[str]:
    """The findings' paragraph on the systems that did not finish; none when every one did."""
    systems = unfinished_systems(run)
    if not systems:
        return []
    return ["**Systems that did not finish.** " + " ".join(system_line(run, s) for s in systems)]


def nothing_completed(run: RunData) -> str:
    """The whole findings of a run in which no system completed: a valid load may still be named."""
    return "\n\n".join([NOTHING_COMPLETED, *paragraphs(run)])
