"""The native runner (lib/native, `enginebench-runner`): the workloads' one implementation, run
against the embedded engines it links or as the client of a server.

The driver writes a system's spec (system, data folder, workload params, the phase plan and, for a
server, how to reach it) and starts `enginebench-runner run SPEC`; the runner reports events, one
JSON line each, on stdout. `describe` tells, before anything runs, what a workload's load leaves.
"""
from __future__ import annotations

import functools
import json
import subprocess

from .paths import native_runner


def command(spec_path) -> list[str]:
    return [str(native_runner()), "run", str(spec_path)]


@functools.lru_cache(maxsize=32)
def _describe(name: str, workload_json: str, load_threads: int) -> str:
    done = subprocess.run([str(native_runner()), "describe", "--workload", workload_json,
                           "--load-threads", str(load_threads)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise ValueError(f"workload {name}: the runner cannot describe it: {done.stderr.strip()}")
    return done.stdout


def describe(name: str, workload: dict, load_threads: int) -> dict:
    """{"expected": documents per collection after the load, "bytes_per_document": mean BSON size
    per sampled collection, "sample_docs": n} (lib/native/src/sample.rs)."""
    text = json.dumps({"name": name, **{k: v for k, v in workload.items() if k != "name"}}, sort_keys=True)
    return json.loads(_describe(name, text, load_threads))
