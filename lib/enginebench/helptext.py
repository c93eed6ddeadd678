"""`make help`: the commands, the variables and environment they read, and each experiment with
its question and the time its timed phases take at each scale.

The time is what the params fix: quiesces, warm-ups, measured phases and rate sweeps, summed over
the systems that run them (runner/plan.py's steps). Loads, verification and consistency checks
run until their work is done, so their time is not known before a run and is not included.
"""
from __future__ import annotations

import textwrap

from .params import SCALES, experiments, load_every_scale
from .params.plan import plan_steps

DEFAULT_SCALE = "default"  # the Makefile's SCALE ?= and the command line's --scale default

USAGE = f"""\
make experiment EXP=<name> [SCALE={'|'.join(SCALES)}] [TARGET=auto|embedded|mongod|uri] [REPEAT=n] [RUN=<folder>] [SYSTEMS=<labels>]
    SCALE defaults to {DEFAULT_SCALE}; smoke takes seconds, default minutes on 2 cores, paper the post's own sizes.
    SYSTEMS=wt.op1,rx.op1 runs only those systems; the report names the ones that did not run.
    RUN=data/results/<exp>/<run> re-renders that run's report and runs nothing.
make all [SCALE=...] [FORCE=1] [EXPERIMENTS=a,b] every experiment in turn (skipping those run from this code and params), then the collection page
    CLUSTER=tcp://<head>:8786 [REPEAT=n] [SHARED=<folder>] sends each experiment to a host of a Dask cluster (docs/cluster.md).
make explain EXP=<name> CLAIM=<id>  the claim's systems once per named factor: which move its ratio
make explain-differing [EXPERIMENTS=a,b] [PLAN=1]  make explain for every claim not explained yet (PLAN=1: the runs and their time)
make reports                  reports/index.html: every claim's verdict, and every run of each experiment and scale
make compare A=<run> B=<run>  what changed between two runs: headline ratios against noise, host speed, verdicts
make native [NEEDS=<experiments>|all]  the runner, with the engine releases those experiments' systems name beyond setup's
    (the posts' WiredTiger trees, PerconaFT's releases; make experiment/explain/all/bench build theirs first)
make test | test-uri | bench | setup | setup-legacy | standin | notebooks | clean
Environment:
    MONGOD=/path/to/mongod          the server TARGET=mongod starts (else the first mongod on PATH)
    ENGINEBENCH_URI=mongodb://...   the deployment TARGET=uri runs against
    EB_COMPILER_CACHE=0             compile every C and C++ object (else through ccache when installed)
"""


def timed_seconds(params: dict) -> tuple[float, bool]:
    """Seconds of the timed steps over every system, and whether a measured phase is open-ended
    (no duration: it runs until the workload's stream ends)."""
    total, open_ended = 0.0, False
    for system in params["systems"]:
        for step in plan_steps(params, system):
            if step["step"] == "quiesce":
                total += step["seconds"]
            elif step["step"] == "measure":
                open_ended |= step["duration_s"] is None
                total += step["duration_s"] or 0
            elif step["step"] == "rate_sweep":
                total += step["seconds"] * len(step["fractions"])
    return total, open_ended


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def scale_times(by_scale: dict[str, dict]) -> str:
    parts = []
    for scale in SCALES:
        seconds, open_ended = timed_seconds(by_scale[scale])
        timed = [duration(seconds)] if seconds else []
        # A family that measures its load (iibench, TokuMX inserts) has no timed phase at all.
        untimed = ["replay"] if open_ended else [] if seconds else ["load only"]
        parts.append(f"{scale} {' + '.join(timed + untimed)}")
    return ", ".join(parts)


def help_text() -> str:
    lines = [USAGE, "Experiments, with the time of their timed phases at each scale (quiesce, warm-up, measured",
             "and rate-sweep phases over every system; loads and replays run until their work is done and",
             "are not counted, so a run takes longer):"]
    for exp in experiments():
        by_scale = load_every_scale(exp)
        lines.append(f"  {exp}  [{scale_times(by_scale)}]")
        lines += textwrap.wrap(" ".join(by_scale[DEFAULT_SCALE]["question"].split()), width=100,
                               initial_indent="      ", subsequent_indent="      ")
    lines.append(collection_times())
    return "\n".join(lines)


def collection_times() -> str:
    """`make all`'s expected time per scale: the newest complete run of every experiment on this
    host, end to end (loads included), summed; an experiment never run here is counted apart."""
    from .collection import past_seconds
    parts = []
    for scale in SCALES:
        known = [past_seconds(exp, scale) for exp in experiments()]
        measured = [s for s in known if s is not None]
        missing = len(known) - len(measured)
        text = duration(sum(measured)) if measured else "not run here yet"
        parts.append(f"{scale} {text}" + (f" (+{missing} never run here)" if measured and missing else ""))
    return "make all, from this host's newest complete runs: " + ", ".join(parts)
