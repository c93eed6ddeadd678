"""`make bench`: measures the harness, not the engines.

- client CPU per operation against each embedded engine (the workload generator's own cost,
  next to the engine-side CPU of the same operations);
- the operation rate one client core can generate (arguments only, no store);
- the sampler's own CPU at the default interval, as a share of one core;
- time from the command to the first loaded and the first measured operation (smoke scale).
Prints a table and writes it to data/results/bench/<stamp>-<host>.json.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from .metrics.sampler import Sampler
from .paths import results_dir
from .runner.phases import run_phase
from .runner.plan import request_loop
from .stores import open_embedded
from .workloads.linkbench import LinkBench, LinkBenchConfig

ENGINES = (("wiredtiger", {"table_type": "btree", "cache_size_mb": 256}),
           ("wiredtiger-lsm", {"table_type": "lsm", "cache_size_mb": 256}),
           ("rocksdb", {"cache_size_mb": 256}), ("lmdb", {"map_size_gb": 8}))
GRAPH = LinkBenchConfig(maxid1=50_001, max_degree=10_000)
SECONDS = 5.0


def client_cost(engine: str, options: dict) -> dict:
    """One requester thread against a loaded graph: client and op CPU per request."""
    with tempfile.TemporaryDirectory() as folder:
        store = open_embedded("wiredtiger" if engine.startswith("wiredtiger") else engine, folder, options)
        try:
            workload = LinkBench(GRAPH)
            workload.setup(store)
            abort = threading.Event()
            run_phase("load", workload.load_threads(1), store, lambda e: None, interval_s=60,
                      duration_s=None, abort=abort, max_errors=0)
            events = []
            run_phase("run", [request_loop(workload.requester(0, 1))], store, events.append,
                      interval_s=SECONDS, duration_s=SECONDS, abort=abort)
        finally:
            store.close()
    interval = next(e for e in events if e["event"] == "interval")
    ops = sum(o["count"] for o in interval["ops"].values())
    op_cpu = sum(o["cpu_ns"] for o in interval["ops"].values()) / 1e3
    client = max(0.0, interval["thread_cpu_ns"] / 1e3 - op_cpu)
    return {"engine": engine, "requests": ops, "ops_per_s": ops / SECONDS,
            "client_cpu_us_per_op": client / ops, "op_cpu_us_per_op": op_cpu / ops,
            "client_share": client / (client + op_cpu)}


def generator_rate() -> dict:
    """Requests one core can generate per second (arguments only, no store call)."""
    requester = LinkBench(LinkBenchConfig(maxid1=1_000_001)).requester(0, 1)
    count, start = 0, time.thread_time()
    while time.thread_time() - start < 2.0:
        requester.next()
        count += 1
    return {"generated_requests_per_core_s": count / (time.thread_time() - start)}


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
        events = [json.loads(line) for line in next(Path(folder).glob("linkbench_cached/*/wt.op1/events.jsonl")).read_text().splitlines()]
    first_load = next(e["t"] for e in events if e["event"] == "phase_start" and e["phase"] == "load")
    first_run = next(e["t"] for e in events if e["event"] == "phase_start" and e["phase"] == "run")
    return {"s_to_first_load_op": first_load - started, "s_to_first_measured_op": first_run - started}


def main() -> Path:
    rows = [client_cost(engine, options) for engine, options in ENGINES]
    harness = {**generator_rate(), **sampler_cost(), **time_to_first_op()}
    print(f"{'engine':16} {'req/s':>8} {'client us/op':>13} {'engine us/op':>13} {'client share':>13}")
    for r in rows:
        print(f"{r['engine']:16} {r['ops_per_s']:8.0f} {r['client_cpu_us_per_op']:13.1f} "
              f"{r['op_cpu_us_per_op']:13.1f} {r['client_share']:13.0%}")
    for r in rows:
        if r["client_cpu_us_per_op"] >= r["op_cpu_us_per_op"]:
            print(f"note: on {r['engine']} the LinkBench client spends more CPU per request than the engine "
                  f"({r['client_cpu_us_per_op']:.1f} vs {r['op_cpu_us_per_op']:.1f} us)")
    for key, value in harness.items():
        print(f"{key:32} {value:,.3f}")
    out_dir = results_dir() / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = out_dir / f"{stamp}-{socket.gethostname().split('.')[0]}.json"
    path.write_text(json.dumps({"client_cost": rows, "harness": harness, "graph": GRAPH.__dict__,
                                "seconds": SECONDS}, indent=2))
    print(f"written: {path}")
    return path
