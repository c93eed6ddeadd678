"""Workloads by name. Each exposes run_plan(store, phases, emit, abort) -> status."""
from __future__ import annotations

WORKLOADS = ("linkbench", "iibench", "sysbench", "tokumx", "flashback")


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
