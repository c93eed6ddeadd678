"""`workload:` of an iibench params file: the insert benchmark's command line, by name (spec:
iibench_sysbench.md part A). The runner's workload (lib/native/src/workloads/iibench.rs) reads
the same keys."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ...params.phases import PhaseUse, WorkloadParams, uses


class Params(WorkloadParams):
    """The post's 24-argument command line, by name (spec A.5); its writer threads (arg 2) are
    `phases.load.threads`, its progress interval (arg 6) `phases.load.interval_s`."""
    name: Literal["iibench"] = "iibench"
    max_rows: int = Field(ge=1)
    docs_per_insert: int = Field(10, ge=1)
    num_secondary_indexes: int = Field(3, ge=0, le=3)
    num_char_fields: int = Field(1, ge=0)
    length_char_fields: int = Field(1000, ge=0)
    percent_compressible: int = Field(50, ge=0, le=100)
    max_inserts_per_second: int | None = Field(None, ge=1)  # None: unthrottled (the post's 999999)
    query_threads: int = Field(1, ge=0)
    query_limit: int = Field(4, ge=1)
    query_begin_docs: int = Field(100_000, ge=0)
    ms_between_queries: int = Field(0, ge=0)
    slow_threshold_s: float = Field(2.0, gt=0)

    # The load is what is measured: the writers insert while the query thread runs.
    PHASES: ClassVar[PhaseUse] = uses("load.threads", "load.interval_s", required=("load",), check=False)
