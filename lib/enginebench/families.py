"""The experiment families, each in one record: the one place a family is named.

A family is a workload (its params model, what it reads of `phases:`, and its code), a report
module (its claims table and the tables only it has) and a notebook. The params schema, the workload registry, the reports
index and the notebook list are all built from FAMILIES, so adding a family means adding its
files and one line here (README: "Adding a family or an engine").
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from .paths import repo_root


@dataclass(frozen=True)
class Family:
    name: str
    workload: str  # module: its Params model and its workload class (server targets, traces)
    report: str    # module: claims_table(run) and the family's own tables

    @property
    def notebook(self) -> Path:
        return repo_root() / "notebooks" / f"{self.name}.ipynb"

    def report_module(self) -> ModuleType:
        return importlib.import_module(self.report)

    def workload_module(self) -> ModuleType:
        return importlib.import_module(self.workload)

    @property
    def params_model(self):
        """The family's `workload:` model (params/phases.py WorkloadParams)."""
        return self.workload_module().Params

    def phase_use(self, workload: dict):
        """What this family reads of `phases:` for these workload params."""
        return self.params_model.phase_use(workload)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("linkbench", "enginebench.workloads.linkbench", "enginebench.report.linkbench"),
    Family("iibench", "enginebench.workloads.iibench", "enginebench.report.iibench"),
    Family("sysbench", "enginebench.workloads.sysbench", "enginebench.report.sysbench"),
    Family("tokumx", "enginebench.workloads.tokumx", "enginebench.report.tokumx"),
    Family("flashback", "enginebench.flashback.workload", "enginebench.report.flashback"),
)}
NAMES = tuple(FAMILIES)


def family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown experiment family {name!r}; known: {', '.join(NAMES)}") from None
