"""`make bench`: what the harness costs, and whose code the runner's CPU goes to.

1. linkbench_cached at its default scale (the post's two engines, WiredTiger and RocksDB): per
   system, for the load and for the request phase, the engine's share of the runner's CPU (perf,
   by the code each sample landed in: metrics/perfshare.py; with the C library and system calls
   the engine makes as the headline, its own frames beside it, and what it would be with no
   harness), the runner's CPU per operation and the operations per runner CPU-second. This is the
   figure docs/running.md quotes. Phases below 80% (the target is 85%) are listed with the harness
   functions their remaining CPU went to.
2. Every other family on every embedded engine of its smoke scale, with more work than a smoke
   run (FAMILY_WORK: several seconds per phase, so perf takes thousands of samples where a smoke
   phase ends before it attaches): the same figures for each phase. They show what the harness
   costs beside each engine, not how the engines compare.
3. Server targets: every family at smoke scale on the uri target against the stand-in server
   (enginebench/standin.py), through the Rust driver and through the legacy executor: per phase,
   requests/s, the client's CPU per request (the runner and the processes it runs beside the
   server, all their threads) and whose code the runner's CPU went to (the driver's, ours).
   LinkBench's request phase, the client figure docs/mongod.md quotes, runs for seconds
   (CLIENT_WORK).
   Without the stand-in's jar or java the table says it was not measured and why.
4. The sampler's own CPU, and the time from the command to the first loaded and measured op.
5. The emulated devices' read latency (resources/probe.py): random 4 KiB O_DIRECT reads on the
   scratch disk, uncapped and under each storage profile, p50/p99/p99.9 and the throttle slice.

Runs are real experiment runs (their folders stay under data/results/); the figures are printed
and written to data/results/bench/<stamp>-<host>.json. Measure on a quiet machine, and compare
runs of one sitting: a shared machine's speed drifts.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from .metrics import perfshare
from .metrics.sampler import Sampler
from .paths import results_dir, scratch_dir
from .resources import probe

LINKBENCH = ("linkbench_cached", "default")
FAMILIES = ("iibench_500m", "sysbench_cgroups", "tokumx_insert_10m", "tokumx_read", "flashback_replay")
# Each family's smoke systems and settings with the work of every phase raised to seconds on 2
# cores (the runs' --set, kept in their manifests): a few minutes for the five.
# The fractal systems' smoke cache (16 MB) is too small for this much work: iibench's 300,000 rows
# loaded at 20-100 docs/s for minutes, PerconaFT busy on both cores in its cache; with 256 MB, in
# 20 s. The bench measures whose code the CPU goes to, so each fractal system gets a cache that
# holds its work.
FRACTAL_CACHE = "options.cache_size_mb=256"
FAMILY_WORK = {
    "iibench_500m": ["workload.max_rows=300000", f"systems[tokumx].{FRACTAL_CACHE}"],
    "sysbench_cgroups": ["workload.docs_per_collection=20000", "phases.measure.duration_s=10",
                         f"systems[tokumx.s].{FRACTAL_CACHE}", f"systems[tokumxse.s].{FRACTAL_CACHE}"],
    "tokumx_insert_10m": ["workload.documents=400000", f"systems[tokumx].{FRACTAL_CACHE}"],
    "tokumx_read": ["workload.documents=200000", "phases.measure.duration_s=2", f"systems[tokumx].{FRACTAL_CACHE}"],
    # The replay keeps the recorded pace: 10 s of traffic at 2,000 operations/s.
    "flashback_replay": ["workload.users=2000", "workload.posts=200000", "workload.rate=2000",
                         "workload.duration_s=10"],
}


def _run(exp: str, scale: str, target: str = "embedded", sets: list[str] | None = None) -> Path:
    from .driver import run
    return run(exp, scale, target, sets=sets)


def phase_figures(run_dir: Path) -> list[dict]:
    """Per system and phase: engine share, runner CPU per op, ops per runner CPU-second."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    intervals = pl.read_parquet(run_dir / "intervals.parquet") if (run_dir / "intervals.parquet").is_file() else None
    rows = []
    for label, info in manifest["systems"].items():
        attribution = info.get("cpu_attribution") or {}
        for phase in info.get("phases") or []:
            name = phase["phase"]
            share = attribution.get(name) or {}
            row = {"experiment": manifest["experiment"], "scale": manifest["scale"], "system": label,
                   "engine": info.get("engine_reported"), "phase": name,
                   "runner": (info.get("runner") or {}).get("runner"),
                   "engine_share": share.get("engine"), "runner_share": share.get("runner"),
                   "libc_share": share.get("libc"), "kernel_share": share.get("kernel"),
                   "engine_with_calls": share.get("engine_with_calls"),
                   "harness_with_calls": share.get("harness_with_calls"),
                   "ceiling": share.get("ceiling"), "harness_top": share.get("harness_top"),
                   "perf_samples": share.get("samples"),
                   "perf_note": share.get("error") or attribution.get("unavailable")}
            if intervals is not None:
                part = intervals.filter((pl.col("system") == label) & (pl.col("phase") == name))
                ops = part["ops"].sum() if part.height else 0
                cpu_s = (part["cpu_user_s"] + part["cpu_sys_s"]).sum() if part.height else 0
                seconds = part["seconds"].sum() if part.height else 0
                row.update(ops=int(ops or 0), seconds=float(seconds or 0), runner_cpu_s=float(cpu_s or 0),
                           ops_per_s=(ops / seconds) if seconds else None,
                           runner_cpu_us_per_op=(cpu_s * 1e6 / ops) if ops else None,
                           ops_per_runner_cpu_s=(ops / cpu_s) if cpu_s else None)
            rows.append(row)
    return rows


# LinkBench's request phase on the uri target with seconds of work: through a smoke run's 2 s the
# stand-in's JVM is still warming up (about 190 requests/s against 480-650/s over 10 s), and a few
# hundred requests leave the client's fixed costs in the per-request figure (269 us through the
# driver in 2 s, 97-117 us over 10 s, in one sitting).
CLIENT_WORK = {"linkbench_cached": ["phases.measure.duration_s=10"]}

# The executors a server's commands can go through (mongod/legacy.py): the Rust driver for
# servers of wire version 8 and newer, pymongo 3 processes for older ones.
EXECUTORS = ("driver", "legacy")


def client_cost() -> list[dict]:
    """The client's cost on the uri target, per family at smoke scale, against the stand-in
    server started here, through each executor: per phase, requests/s, the client's CPU per
    request (the runner and the processes it runs beside a server: client_cpu_ns of the interval
    events) and whose code the runner's CPU went to (the driver's, ours, the C library's)."""
    from . import standin
    why = standin.missing()
    if why:
        return [{"note": f"not measured: the stand-in server cannot start here ({why})"}]
    rows = []
    for executor in EXECUTORS:
        for exp in ("linkbench_cached",) + FAMILIES:
            # A fresh server for each run: one run's leftovers in the stand-in's store cannot fail the next.
            with tempfile.TemporaryDirectory() as logs, standin.standin_server(Path(logs)) as (uri, _, _), \
                    _environment(ENGINEBENCH_URI=uri, ENGINEBENCH_EXECUTOR=executor):
                rows += client_figures(_run(exp, "smoke", "uri", sets=CLIENT_WORK.get(exp)), executor)
    return rows


@contextlib.contextmanager
def _environment(**values: str):
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def client_figures(run_dir: Path, executor: str) -> list[dict]:
    """Per system and phase of a server-target run: requests, requests/s, client CPU per request,
    and the perf shares of the runner's CPU."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    rows = []
    for label, info in manifest["systems"].items():
        if info.get("status") != "complete":  # what it measured is still shown, after this line
            rows.append({"note": f"{manifest['experiment']} {label}: {info.get('status')}: {info.get('error')}"})
        events = [json.loads(line) for line in (run_dir / label / "events.jsonl").read_text().splitlines()]
        attribution = info.get("cpu_attribution") or {}
        phases: dict[str, dict] = {}
        for e in events:
            if e.get("event") != "interval":
                continue
            phase = phases.setdefault(e["phase"], {"requests": 0, "seconds": 0.0, "cpu_ns": 0})
            phase["requests"] += sum(op["count"] for op in e["ops"].values())
            phase["seconds"] += e["t_end"] - e["t_start"]
            phase["cpu_ns"] += e.get("client_cpu_ns", 0)
        for name, p in phases.items():
            share = attribution.get(name) or {}
            rows.append({"experiment": manifest["experiment"], "system": label, "phase": name, "executor": executor,
                         "requests": p["requests"],
                         "requests_per_s": p["requests"] / p["seconds"] if p["seconds"] else None,
                         "client_cpu_us_per_request": p["cpu_ns"] / 1e3 / p["requests"] if p["requests"] else None,
                         **{f"{k}_share": share.get(k) for k in ("driver", "runner", "libc", "kernel")}})
    return rows


def print_clients(rows: list[dict]) -> None:
    # Shares: of the runner process's CPU (perf); the legacy executor's processes are not in them.
    print(f"{'experiment':18} {'system':10} {'phase':12} {'executor':>8} {'requests':>9} {'req/s':>9}"
          f" {'client us/req':>13} {'driver':>7} {'runner':>7} {'libc':>6} {'kernel':>7}")
    for r in rows:
        if "note" in r:
            print("  " + r["note"])
            continue
        print(f"{r['experiment'][:18]:18} {r['system'][:10]:10} {r['phase'][:12]:12} {r['executor']:>8}"
              f" {r['requests']:>9,} {_num(r['requests_per_s'], ',.0f'):>9}"
              f" {_num(r['client_cpu_us_per_request'], ',.1f'):>13} {_pct(r['driver_share']):>7}"
              f" {_pct(r['runner_share']):>7} {_pct(r['libc_share']):>6} {_pct(r['kernel_share']):>7}")


def sampler_cost(interval_s: float = 1.0, seconds: float = 10.0) -> dict:
    """The sampler's CPU, sampling a busy process with a data directory of many files."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with tempfile.TemporaryDirectory() as folder:
            for i in range(200):
                Path(folder, f"f{i}").write_bytes(b"x" * 4096)
            sampler = Sampler([busy.pid], folder, interval_s)
            sampler.start()
            time.sleep(seconds)
            sampler.stop()
    finally:
        busy.kill()
        busy.wait()
    return {"sampler_interval_s": interval_s, "sampler_samples": len(sampler.samples),
            "sampler_cpu_pct_of_core": 100 * sampler.cpu_s / seconds}


def time_to_first_op() -> dict:
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "ENGINEBENCH_RESULTS": folder, "ENGINEBENCH_DATA": str(Path(folder) / "data")}
        started = time.time()
        subprocess.run([sys.executable, "-m", "enginebench", "run", "linkbench_cached", "--scale", "smoke"],
                       env=env, check=True, capture_output=True)
        events = [json.loads(line) for line in
                  next(Path(folder).glob("linkbench_cached/*/wt.op1/events.jsonl")).read_text().splitlines()]
    first_load = next(e["t"] for e in events if e["event"] == "phase_start" and e["phase"] == "load")
    first_run = next(e["t"] for e in events if e["event"] == "phase_start" and e["phase"] == "run")
    return {"s_to_first_load_op": first_load - started, "s_to_first_measured_op": first_run - started}


# (profile, scale): the bare disk, the profiles, and the disk at linkbench_uncached_disk's default.
PROBED = (("none", 1.0), ("disk", 1.0), ("disk", 0.33), ("ssd", 1.0))


def device_latency(seconds: float = 10.0) -> list[dict]:
    folder = scratch_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return [probe.measure_profile(folder, profile, scale, seconds) for profile, scale in PROBED]


def print_device_latency(rows: list[dict]) -> None:
    print(f"{'profile':8} {'scale':>5} {'iops cap':>8} {'slice ms':>8} {'reads/s':>8} {'p50 ms':>7}"
          f" {'p99 ms':>7} {'p99.9 ms':>8}")
    for r in rows:
        if "note" in r:
            print(f"{r['profile']:8} {r['scale']:>5} {r['note']}")
            continue
        print(f"{r['profile']:8} {r['scale']:>5} {_num(r.get('read_iops_cap'), ',d'):>8}"
              f" {_num(r.get('throttle_slice_ms'), '.0f'):>8} {r['reads_per_s']:>8,.0f} {r['p50_ms']:>7.2f}"
              f" {r['p99_ms']:>7.2f} {_num(r.get('p999_ms'), '.2f'):>8}")


def _pct(x) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def _num(x, fmt: str) -> str:
    return "n/a" if x is None else format(x, fmt)


def print_table(rows: list[dict]) -> None:
    # "+calls", the headline: the engine with the C library and system calls it makes
    # (perfshare.engine_with_calls); "strict": its own frames alone; "harness": the runner's code
    # and the driver with theirs (perfshare.harness_with_calls); "no harness": +calls with no
    # harness at all, the most a cut of ours can bring it to (perfshare's ceiling).
    print(f"{'experiment':18} {'system':10} {'phase':12} {'+calls':>7} {'strict':>7} {'harness':>8}"
          f" {'no harness':>10} {'runner':>7} {'libc':>6} {'kernel':>7} {'ops/s':>9} {'cpu us/op':>10}"
          f" {'ops/cpu-s':>10}")
    for r in rows:
        print(f"{r['experiment'][:18]:18} {r['system'][:10]:10} {r['phase'][:12]:12}"
              f" {_pct(r.get('engine_with_calls')):>7} {_pct(r['engine_share']):>7}"
              f" {_pct(r.get('harness_with_calls')):>8} {_pct(r.get('ceiling')):>10}"
              f" {_pct(r['runner_share']):>7} {_pct(r['libc_share']):>6} {_pct(r['kernel_share']):>7}"
              f" {_num(r.get('ops_per_s'), ',.0f'):>9} {_num(r.get('runner_cpu_us_per_op'), '.1f'):>10}"
              f" {_num(r.get('ops_per_runner_cpu_s'), ',.0f'):>10}")
        if r.get("perf_note"):
            print(f"{'':42}perf: {r['perf_note']}")


# The engine's share (+calls) every LinkBench phase aims at, and the line below which a phase is
# listed with the harness functions its remaining CPU went to.
LINKBENCH_TARGET, LINKBENCH_LISTED_BELOW = 0.85, 0.80


def below_target(rows: list[dict]) -> list[dict]:
    """The phases whose engine share with calls is below LINKBENCH_LISTED_BELOW (or unmeasured)."""
    return [r for r in rows if (r.get("engine_with_calls") or 0) < LINKBENCH_LISTED_BELOW]


def print_below_target(rows: list[dict]) -> None:
    listed = below_target(rows)
    print(f"\nLinkBench phases below {LINKBENCH_LISTED_BELOW:.0%} (+calls; the target is {LINKBENCH_TARGET:.0%}):"
          + ("" if listed else " none"))
    for r in listed:
        top = "; ".join(f"{name[:90]} {share:.1%}" for name, share in r.get("harness_top") or [])
        print(f"  {r['system']} {r['phase']}: +calls {_pct(r.get('engine_with_calls'))}, harness"
              f" {_pct(r.get('harness_with_calls'))}: {top or 'no call chains recorded'}")


def linkbench_run(given: str | None) -> Path:
    """A new linkbench_cached default run, or the one given (a results folder, or <exp>/<run id>),
    checked to be one: the figures are only the headline's when they come from that experiment."""
    if given is None:
        return _run(*LINKBENCH)
    from .report.runs import find_run
    path = find_run(given, "LINKBENCH_RUN")
    manifest = json.loads((path / "manifest.json").read_text())
    found = (manifest.get("experiment"), manifest.get("scale"), manifest.get("status"))
    if found != (*LINKBENCH, "complete"):
        raise ValueError(f"{path / 'manifest.json'}: LINKBENCH_RUN must be a complete {LINKBENCH[0]} run at "
                         f"scale {LINKBENCH[1]}; this one is {found[0]} at scale {found[1]}, {found[2]}")
    return path


def main(given_linkbench_run: str | None = None) -> Path:
    ok, why = perfshare.available()
    if not ok:
        print(f"note: the engine's share of the runner's CPU is not measured: {why}")
    run_dir = linkbench_run(given_linkbench_run)
    print(f"linkbench_cached, default scale (docs/running.md's figures), run {run_dir}:")
    headline = phase_figures(run_dir)
    print_table(headline)
    print_below_target(headline)
    print("\nevery family on its smoke scale's engines, seconds of work per phase (FAMILY_WORK):")
    families = [row for exp in FAMILIES for row in phase_figures(_run(exp, "smoke", sets=FAMILY_WORK[exp]))]
    print_table(families)
    print("\nthe uri target (the stand-in server), the client's requests/s, CPU per request and whose"
          f" code it ran, through each executor (smoke scale, with CLIENT_WORK: {CLIENT_WORK}):")
    clients = client_cost()
    print_clients(clients)
    harness = {**sampler_cost(), **time_to_first_op()}
    for key, value in harness.items():
        print(f"{key:32} {value:,.3f}")
    print("\nthe emulated devices: random 4 KiB O_DIRECT reads, 4 threads, on the scratch disk:")
    devices = device_latency()
    print_device_latency(devices)
    out_dir = results_dir() / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = out_dir / f"{stamp}-{socket.gethostname().split('.')[0]}.json"
    path.write_text(json.dumps({"linkbench_run": str(run_dir), "linkbench_default": headline, "families": families, "family_work": FAMILY_WORK, "client_work": CLIENT_WORK, "clients": clients,
                                "harness": harness, "devices": devices, "perf": {"available": ok, "why_not": why}}, indent=2))
    print(f"written: {path}")
    return path
