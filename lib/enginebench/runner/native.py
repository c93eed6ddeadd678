"""The embedded target's runner: lib/native, a compiled binary that holds the engine and runs
every operation loop on native threads (no interpreter on the hot path).

The driver writes the system's spec (system, data folder, workload params and the phase plan,
runner/plan.py `steps`) and starts `enginebench-runner run SPEC`; the runner reports the same
events, one JSON line each, as runner/child.py does for server targets.
"""
from __future__ import annotations

from ..paths import native_runner

# Families whose per-operation loops run in the native runner. A family not listed here still
# runs on the Python runner (runner/child.py) on every target, and its report says so.
NATIVE_WORKLOADS = ("linkbench", "iibench", "sysbench", "tokumx", "flashback")


def runs_natively(target_kind: str, workload: str) -> bool:
    return target_kind == "embedded" and workload in NATIVE_WORKLOADS


def command(spec_path) -> list[str]:
    return [str(native_runner()), "run", str(spec_path)]
