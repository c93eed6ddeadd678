"""The experiment families, each in one record: the one place a family is named.

A family is its package here, families/<name>/: its params model (params.py: its `workload:`
block and what it reads of `phases:`), its report module (report.py: its claims table and the
tables only it has) and its headline pairs beside the post's (pairs.py); its workload in the
native runner (lib/native/src/workloads/<name>) and its notebook. The params schema,
the reports index and the notebook list are all built from FAMILIES, so adding a family means
adding its files and one line here (docs/layout.md: "Adding a family or an engine").
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..paths import repo_root


@dataclass(frozen=True)
class Family:
    name: str
    # Its measured phases depend on nothing its load kept in memory, so they can start from a
    # copy of an earlier load (phases.load.reuse, loads.py).
    load_reusable: bool = False
    # Its measured phases insert more than one document per request, so the insert grouping
    # (documents per storage transaction) changes them, not only the load.
    measured_inserts_grouped: bool = True
    # The loads its claims read insert more than one document per call, so the grouping changes
    # them (TokuMX's insert tests insert one document per call, as the post's client did).
    load_inserts_grouped: bool = True
    # Its systems are independent of one another, so a repeated run may measure them in the
    # reverse order (REPEAT=n alternates, experiment.py): drift then cancels in the group's mean.
    # Flashback's later systems replay what its first one recorded.
    order_free: bool = True

    @property
    def notebook(self) -> Path:
        return repo_root() / "notebooks" / f"{self.name}.ipynb"

    def report_module(self) -> ModuleType:
        """claims_table(run) and the family's own tables."""
        return self._module("report")

    def params_module(self) -> ModuleType:
        return self._module("params")

    def pairs_module(self) -> ModuleType:
        """normalised_pairs(run): its headline metrics as the post's pairs beside ours."""
        return self._module("pairs")

    def _module(self, part: str) -> ModuleType:
        return importlib.import_module(f"{__name__}.{self.name}.{part}")

    @property
    def params_model(self):
        """The family's `workload:` model (params/phases.py WorkloadParams)."""
        return self.params_module().Params

    def phase_use(self, workload: dict):
        """What this family reads of `phases:` for these workload params."""
        return self.params_model.phase_use(workload)

    def runner_params(self, params: dict, system: dict, run_dir, system_dir) -> dict:
        """The workload params the native runner gets for this system: the `workload:` block
        without its name, unless the family says otherwise (flashback: each system's role)."""
        module = self.params_module()
        if hasattr(module, "runner_params"):
            return module.runner_params(params, system, run_dir, system_dir)
        return {k: v for k, v in params["workload"].items() if k != "name"}

    def always_runs(self, params: dict) -> list[str]:
        """The labels a run of any of these params' systems runs too (SYSTEMS=, an explain's
        variant): Flashback's recorder, whose capture the others replay. None for most families."""
        module = self.params_module()
        return module.always_runs(params) if hasattr(module, "always_runs") else []

    def claim_reads(self, params: dict, claim: dict, systems: list[dict]) -> list[dict]:
        """Of the systems that play a claim's roles, those its resolver reads: all of them, unless
        the family's report says otherwise, beside its resolver (Flashback: the first replayer of
        a role; sysbench: WiredTiger at its 60-s checkpoint, but for the checkpoint claim)."""
        module = self.report_module()
        return module.claim_reads(params, claim, systems) if hasattr(module, "claim_reads") else systems

    def systems_on_one_server(self, workload: dict) -> int:
        """How many of the params' systems a run on one server (TARGET=uri, uri_target.py) keeps:
        the first, unless its systems differ in more than their engines (Flashback's recorder)."""
        module = self.params_module()
        return module.systems_on_one_server(workload) if hasattr(module, "systems_on_one_server") else 1

    def describe_params(self, params: dict) -> dict:
        """The workload params that size a run before it starts (`enginebench-runner describe`)."""
        module = self.params_module()
        if hasattr(module, "describe_params"):
            return module.describe_params(params)
        return {k: v for k, v in params["workload"].items() if k != "name"}


FAMILIES: dict[str, Family] = {f.name: f for f in (
    # LinkBench's and sysbench's requests insert one document each (workloads/linkbench/ops.rs
    # add_link / add_node, workloads/sysbench.rs); LinkBench's requesters start from its params.
    Family("linkbench", load_reusable=True, measured_inserts_grouped=False),
    Family("iibench"),
    Family("sysbench", measured_inserts_grouped=False),
    Family("tokumx", measured_inserts_grouped=False, load_inserts_grouped=False),
    Family("flashback", order_free=False),
)}
NAMES = tuple(FAMILIES)


def family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown experiment family {name!r}; known: {', '.join(NAMES)}") from None
