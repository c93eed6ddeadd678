"""Command line: `python -m enginebench params|run|experiment|reports|compare|bench|help ...`."""
from __future__ import annotations

import argparse
import json
import sys

from .params import SCALES, ParamsError, experiments, load_params
from .engines import defaults_json
from .settings import settings_page
from .run_paragraph import run_summary

ABORTED = 130  # as a shell reports a run stopped by Ctrl-C


SYSTEMS_HELP = "run only these systems (labels, comma-separated); the report says which did not run"
SET_HELP = ("set a params key by hand for this run, KEY=VALUE (repeatable): workload.maxid1=2001, settings=today, "
            "systems[wt.op1].options.version=3.2.1, systems[*].options.insert_group=64")


def _labels(text: str) -> list[str] | None:
    return [label.strip() for label in text.split(",") if label.strip()] or None


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="enginebench", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    p = sub.add_parser("params", help="print an experiment's resolved params")
    p.add_argument("exp")
    p.add_argument("--scale", default="default", choices=SCALES)
    p.add_argument("--set", dest="sets", action="append", default=[], help=SET_HELP)
    r = sub.add_parser("run", help="run an experiment headless")
    r.add_argument("exp")
    r.add_argument("--scale", default="default", choices=SCALES)
    r.add_argument("--target", default="auto")
    r.add_argument("--systems", type=_labels, default=None, help=SYSTEMS_HELP)
    r.add_argument("--set", dest="sets", action="append", default=[], help=SET_HELP)
    e = sub.add_parser("experiment", help="run an experiment and render its report into the run's folder")
    e.add_argument("exp")
    e.add_argument("--scale", default="default", choices=SCALES)
    e.add_argument("--target", default="auto")
    e.add_argument("--run-dir", default="", help="report this results folder instead of running")
    e.add_argument("--repeat", type=int, default=1, help="run n times; the report shows the spread")
    e.add_argument("--systems", type=_labels, default=None, help=SYSTEMS_HELP)
    e.add_argument("--set", dest="sets", action="append", default=[], help=SET_HELP)
    sub.add_parser("experiments", help="list the experiments")
    n = sub.add_parser("builds", help="the engine builds beyond setup's that experiments' systems name, one per line "
                                      "(tools/build_for.sh)")
    n.add_argument("exps", nargs="+", help="experiment names, or `all`")
    n.add_argument("--scale", default="default", choices=SCALES)
    n.add_argument("--set", dest="sets", action="append", default=[], help=SET_HELP)
    sub.add_parser("settings", help="the named settings 2015 / today per engine option, with sources (docs/settings.md)")
    sub.add_parser("help", help="the commands, variables and experiments with their questions and times")
    sub.add_parser("engine-options", help="each engine's options at their defaults, as JSON "
                                          "(lib/native/tests/data/engine_options.json)")
    sub.add_parser("reports", help="write reports/index.html over all runs")
    c = sub.add_parser("compare", help="compare two runs: what changed, against the noise of repeats and the host's speed")
    c.add_argument("a")
    c.add_argument("b")
    b = sub.add_parser("bench", help="measure the harness itself (client CPU, sampler cost, start-up)")
    b.add_argument("--linkbench-run", default=None,
                   help="take the LinkBench figures from this complete default-scale linkbench_cached run "
                        "(made by `make experiment`, perf attribution on) instead of making a new one")
    a = sub.add_parser("all", help="every experiment in turn, skipping those already run from this code, then the collection page")
    a.add_argument("--scale", default="smoke", choices=SCALES)
    a.add_argument("--target", default="auto")
    a.add_argument("--force", action="store_true", help="re-run experiments that already have a run of this code")
    a.add_argument("--experiments", default=None, help="only these experiments (comma-separated)")
    a.add_argument("--cluster", default="", help="a Dask scheduler's address, tcp://<host>:<port>: each experiment "
                                                 "runs whole on one of its hosts (docs/cluster.md)")
    a.add_argument("--repeat", type=int, default=1, help="with --cluster: runs of each experiment, on different hosts")
    a.add_argument("--shared", default="", help="with --cluster: a folder every host and this machine see; the "
                                                "run folders are written there and the page is made from it")
    sub.add_parser("server-cost", help="the stand-in server's CPU per operation of each experiment through the same "
                                       "client: what a server's layer would add to an embedded run (its reports say)")
    x = sub.add_parser("explain", help="run a claim's systems once per named factor and say which move its ratio")
    x.add_argument("exp")
    x.add_argument("claim", help="a claim id, or several (comma-separated): runs they share are made once")
    x.add_argument("--scale", default="default", choices=SCALES)
    x.add_argument("--target", default="embedded")
    x.add_argument("--repeat", type=int, default=1, help="runs per variant; their spread is the ratio's noise")
    x.add_argument("--factors", default="", help="comma-separated factor names: only these variants (and the base)")
    d = sub.add_parser("explain-differing", help="explain every claim whose verdict differs from the post and has "
                                                 "no answer yet, experiment by experiment")
    d.add_argument("--scale", default="default", choices=SCALES)
    d.add_argument("--target", default="embedded")
    d.add_argument("--repeat", type=int, default=1, help="runs per variant")
    d.add_argument("--experiments", default="", help="only these experiments (comma-separated)")
    d.add_argument("--again", action="store_true", help="also the claims that have an answer")
    d.add_argument("--plan", action="store_true", help="print the runs and their expected time; run nothing")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args) or 0
    except (ParamsError, RuntimeError, ValueError) as exc:
        print(f"enginebench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        # A run stopped by a signal (bench, explain): the driver kept what it measured, marked
        # aborted; one line says so, not a traceback. A plain Ctrl-C elsewhere stays Python's.
        from .driver import RunAborted
        if not isinstance(exc, RunAborted):
            raise
        print(f"enginebench: aborted: {exc}", file=sys.stderr)
        return ABORTED


def _experiment(args) -> int:
    from .driver import RunAborted, select_systems
    from .experiment import run_experiment
    from .targets import TARGETS
    if args.target not in TARGETS:
        raise ValueError(f"unknown target {args.target!r}; allowed: {', '.join(TARGETS)}")
    select_systems(load_params(args.exp, args.scale, args.sets), args.systems)  # fail fast, before anything starts
    try:
        report = run_experiment(args.exp, args.scale, args.target, args.run_dir, args.repeat, args.systems, args.sets)
    except RunAborted as exc:
        print(f"enginebench: aborted: {exc}", file=sys.stderr)
        return ABORTED
    print(run_summary(report.run_dir, report.page))
    manifest = json.loads((report.run_dir / "manifest.json").read_text())
    if manifest["status"] != "complete":
        print(f"enginebench: the run's status is {manifest['status']}; the report says what happened", file=sys.stderr)
        _say_why(manifest)
        return 1
    return 0


def _run(args) -> int:
    from .driver import RunAborted, run
    try:
        path = run(args.exp, args.scale, args.target, systems=args.systems, sets=args.sets)
    except RunAborted as exc:
        print(f"enginebench: aborted: {exc}", file=sys.stderr)
        return ABORTED
    manifest = json.loads((path / "manifest.json").read_text())
    print(run_summary(path, None))
    _say_why(manifest)
    return 0 if manifest["status"] == "complete" else 1


def _builds(args) -> list[str]:
    from .native import builds_needed
    names = experiments() if "all" in args.exps else args.exps
    return builds_needed(load_params(name, args.scale, args.sets) for name in names)


def _reports(_args) -> None:
    from .report.index import write_index
    print(f"index: {write_index()}")


def _compare(args) -> None:
    from .report.compare import write_comparison
    print(f"comparison: {write_comparison(args.a, args.b)}")


def _all(args) -> int:
    from .collection import run_all
    from .targets import TARGETS
    if args.target not in TARGETS:
        raise ValueError(f"unknown target {args.target!r}; allowed: {', '.join(TARGETS)}")
    if not args.cluster:
        if args.repeat != 1 or args.shared:
            raise ValueError("REPEAT and SHARED apply to make all on a cluster (CLUSTER=); locally, "
                             "make experiment EXP=<experiment> REPEAT=n")
        run_all(args.scale, args.target, args.force, args.experiments)
        return 0
    import os
    from pathlib import Path
    from .cluster.submit import run_on_cluster
    if args.shared:
        if not Path(args.shared).is_dir():
            raise ValueError(f"SHARED={args.shared}: not a folder on this machine; it must be the same folder on every host")
        # The shared folder is the collection's results folder: merged there, read from there.
        os.environ["ENGINEBENCH_RESULTS"] = str(Path(args.shared).resolve())
    try:
        _, ledger = run_on_cluster(args.cluster, args.scale, args.target, args.force, args.experiments, args.repeat,
                                   str(Path(args.shared).resolve()) if args.shared else None)
    except KeyboardInterrupt:  # the hosts' running units were stopped and the ledger says so
        print("enginebench: aborted: the collection was interrupted", file=sys.stderr)
        return ABORTED
    return 0 if all(u["status"] == "complete" for u in ledger["units"].values()) else 1


def _explain(args) -> None:
    from .explain import explain_claims
    only = [name.strip() for name in args.factors.split(",") if name.strip()] or None
    claims = [claim.strip() for claim in args.claim.split(",") if claim.strip()]
    for page in explain_claims(args.exp, claims, args.scale, args.target, args.repeat, only=only):
        print(f"explain: {page}")


def _explain_differing(args) -> None:
    from .explain_differing import explain_differing
    only = [name.strip() for name in args.experiments.split(",") if name.strip()] or None
    for page in explain_differing(args.scale, args.target, args.repeat, only, args.again, args.plan):
        print(f"explain: {page}")


def _bench(args) -> None:
    from .bench import main as bench
    bench(args.linkbench_run)


def _server_cost(_args) -> None:
    from .server_cost import measure, print_figures
    print_figures(measure())


def _help(_args) -> None:
    from .helptext import help_text
    print(help_text())


COMMANDS = {
    "params": lambda args: print(json.dumps(load_params(args.exp, args.scale, args.sets), indent=2)),
    "experiment": _experiment,
    "run": _run,
    "reports": _reports,
    "compare": _compare,
    "bench": _bench,
    "server-cost": _server_cost,
    "explain": _explain,
    "explain-differing": _explain_differing,
    "all": _all,
    "help": _help,
    "settings": lambda _args: print(settings_page(), end=""),
    "engine-options": lambda _args: print(defaults_json(), end=""),
    "experiments": lambda _args: print("\n".join(experiments())),
    "builds": lambda args: print("\n".join(_builds(args))),
}


def _say_why(manifest: dict) -> None:
    """Each system that did not complete, with its cause, last thing on the terminal."""
    for label, info in (manifest.get("systems") or {}).items():
        if info.get("status") != "complete":
            print(f"enginebench: {label} {info.get('status')}: {info.get('error')}", file=sys.stderr)
    if manifest.get("stopped"):
        print(f"enginebench: {manifest['stopped']}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
