"""`workload:` of a sysbench params file: sysbench-mongodb's config.bash, by name (spec:
iibench_sysbench.md part B). The runner's workload (lib/native/src/workloads/sysbench.rs) reads
the same keys."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ...params.phases import PhaseUse, WorkloadParams, uses


class Params(WorkloadParams):
    """sysbench-mongodb's config.bash, by name (spec B.6); its loader and writer threads and its
    run time are `phases:` (load.threads, measure.threads, measure.duration_s)."""
    name: Literal["sysbench"] = "sysbench"
    collections: int = Field(16, ge=1)
    docs_per_collection: int = Field(10_000_000, ge=1)
    docs_per_insert: int = Field(1000, ge=1)
    range_size: int = Field(100, ge=1)
    point_selects: int = Field(10, ge=0)
    simple_ranges: int = Field(1, ge=0)
    sum_ranges: int = Field(1, ge=0)
    order_ranges: int = Field(1, ge=0)
    distinct_ranges: int = Field(1, ge=0)
    index_updates: int = Field(1, ge=0)
    non_index_updates: int = Field(1, ge=0)
    inserts: int = Field(1, ge=0)
    max_tps: int | None = Field(None, ge=1)
    seed: int = 1

    PHASES: ClassVar[PhaseUse] = uses(
        "load.threads", "load.interval_s", "quiesce_s", "quiesce_checkpoint", "cold_start", "measure.threads",
        "measure.interval_s", "measure.duration_s", "measure.stands_for_s", "max_errors",
        required=("load", "measure", "measure.duration_s"))

    @model_validator(mode="after")
    def _whole_batches(self):
        if self.docs_per_collection < self.docs_per_insert:
            raise ValueError(f"docs_per_collection ({self.docs_per_collection}) must be at least docs_per_insert "
                             f"({self.docs_per_insert}): only whole batches are loaded")
        return self
