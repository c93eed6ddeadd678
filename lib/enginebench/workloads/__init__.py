"""Workloads by name. Each exposes run_plan(store, phases, emit, abort) -> status."""
from __future__ import annotations

from ..families import NAMES as WORKLOADS


def plan_steps(params: dict) -> list[dict]:
    """The phase plan the runner executes for an experiment's resolved params (runner/plan.py
    explains the steps)."""
    workload, phases = params["workload"], params["phases"]
    name = workload["name"]
    if name == "linkbench":
        from ..runner.plan import steps
        return steps(phases)
    if name == "iibench":
        # The writers load while the query thread runs: one phase, then the counts.
        return [{"step": "load", "threads": workload["writers"], "interval_s": workload["interval_s"]},
                {"step": "verify"}]
    if name == "sysbench":
        plan = [{"step": "load", "threads": workload["loader_threads"], "interval_s": workload["interval_s"]},
                {"step": "verify"}, {"step": "quiesce", "seconds": phases["quiesce_s"]}]
        if phases.get("cold_start", "none") != "none":
            plan.append({"step": "cold_start", "method": phases["cold_start"]})
        return plan + [{"step": "measure", "name": "run", "threads": workload["writer_threads"],
                        "interval_s": workload["interval_s"], "duration_s": workload["run_seconds"]},
                       {"step": "check"}]
    if name == "tokumx":
        plan = [{"step": "load", "threads": 1, "interval_s": workload["interval_s"]}, {"step": "verify"}]
        if workload["experiment"] == "insert":
            return plan
        plan.append({"step": "quiesce", "seconds": workload["quiesce_s"]})
        plan += [{"step": "measure", "name": f"clients={n}", "threads": n, "interval_s": workload["interval_s"],
                  "duration_s": workload["phase_s"]} for n in workload["clients"]]
        return plan + [{"step": "check"}]
    if name == "flashback":
        from ..flashback.native import plan_steps as flashback_steps
        return flashback_steps(params)
    raise ValueError(f"no phase plan for workload {name!r}")


def runner_params(params: dict, system: dict, run_dir, system_dir) -> dict:
    """The workload params the runner gets for this system (flashback: its role and files)."""
    if params["workload"]["name"] == "flashback":
        from ..flashback.native import prepare
        return prepare(params, system, run_dir, system_dir)
    return {k: v for k, v in params["workload"].items() if k != "name"}


def build_workload(spec: dict):
    name = spec["name"]
    if name == "linkbench":
        from .linkbench import LinkBench, LinkBenchConfig
        return LinkBench(LinkBenchConfig(**spec["params"]))
    if name == "iibench":
        from .iibench import IIBench, IIBenchConfig
        return IIBench(IIBenchConfig(**spec["params"]))
    if name == "sysbench":
        from .sysbench import Sysbench, SysbenchConfig
        return Sysbench(SysbenchConfig(**spec["params"]))
    if name == "tokumx":
        from .tokumx import TokuMX, TokuMXConfig
        return TokuMX(TokuMXConfig(**spec["params"]))
    if name == "flashback":
        from ..flashback.workload import FlashbackConfig, FlashbackReplay
        return FlashbackReplay(FlashbackConfig.from_params(spec["params"]))
    raise ValueError(f"unknown workload {name!r}; allowed: {', '.join(WORKLOADS)}")
