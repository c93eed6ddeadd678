"""Workloads by family (families.py). Each family's workload module has `Params` (its
`workload:` block) and `build(params, context)` -> a Workload (workloads/base.py), which the
Python runner executes for server targets and which defines what the native runner must issue."""
from __future__ import annotations

from ..families import NAMES as WORKLOADS
from ..families import family


def build_workload(name: str, params: dict, context: dict | None = None):
    """A family's workload from its `workload:` params (without or with `name`); `context`: the
    run folder and the system's folder, for workloads that keep files (flashback)."""
    module = family(name).workload_module()
    return module.build(module.Params(**{k: v for k, v in params.items() if k != "name"}), context)


def runner_params(params: dict, system: dict, run_dir, system_dir) -> dict:
    """The workload params the native runner gets for this system (flashback: its role and files)."""
    if params["workload"]["name"] == "flashback":
        from ..flashback.native import prepare
        return prepare(params, system, run_dir, system_dir)
    return {k: v for k, v in params["workload"].items() if k != "name"}


__all__ = ["WORKLOADS", "build_workload", "runner_params"]
