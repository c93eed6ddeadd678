"""`workload:` of a LinkBench params file: LinkbenchX's properties, by name. The runner's
workload (lib/native/src/workloads/linkbench/) reads the same keys."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ...params.phases import PhaseUse, WorkloadParams, uses


class Params(WorkloadParams):
    """`workload:` of a LinkBench params file (LinkbenchX's properties, by name)."""
    name: Literal["linkbench"] = "linkbench"
    maxid1: int = Field(ge=2)
    startid1: int = Field(1, ge=1)
    link_type_count: int = Field(2, ge=1)
    load_batch: int = Field(1024, ge=1)
    chunk_size: int = Field(2048, ge=1)
    seed: int = 1
    # The CDF gives the top-ranked node 961,963 links whatever the graph size; on a tiny graph
    # that one node is most of the data. None keeps LinkBench's distribution as published.
    max_degree: int | None = Field(None, ge=1)
    # How ADD/UPDATE/DELETE_LINK and the load keep the count rows: "linkbenchx", what the post
    # ran against MongoDB 3.x (separate round trips, upserts, counts that drift: ~0.7 document
    # writes per request), or "exact", MySQL's single transaction (~0.4). The post's experiments
    # ran the first, so it is the default; operations.py names the source of each.
    counts: Literal["linkbenchx", "exact"] = "linkbenchx"

    PHASES: ClassVar[PhaseUse] = uses(
        "load.threads", "load.interval_s", "quiesce_s", "quiesce_checkpoint", "cold_start", "measure.threads",
        "measure.interval_s", "measure.duration_s", "measure.stands_for_s", "measure.warmup_s", "measure.request_rate",
        "measure.until_steady", "measure.min_duration_s", "rate_sweep.fractions", "rate_sweep.seconds", "max_errors",
        required=("load", "measure", "measure.duration_s"))

    @model_validator(mode="after")
    def _range(self):
        if self.maxid1 <= self.startid1:
            raise ValueError(f"maxid1 ({self.maxid1}) must be greater than startid1 ({self.startid1})")
        return self
