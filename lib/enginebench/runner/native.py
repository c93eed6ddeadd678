"""The embedded target's runner: lib/native, a compiled binary that holds the engine and runs
every operation loop on native threads (no interpreter on the hot path).

The driver writes the system's spec (system, data folder, workload params and the phase plan,
runner/plan.py `steps`) and starts `enginebench-runner run SPEC`; the runner reports the same
events, one JSON line each, as runner/child.py does for server targets.
"""
from __future__ import annotations

from ..paths import native_runner


def runs_natively(target_kind: str) -> bool:
    """Every family runs natively on embedded engines (`enginebench-runner engines` lists them);
    server targets run the Python client (runner/child.py)."""
    return target_kind == "embedded"


def command(spec_path) -> list[str]:
    return [str(native_runner()), "run", str(spec_path)]
