"""`workload:` of the throwaway family echo (lib/tests/test_extending.py): N documents loaded,
then clients read them back by _id (lib/native/src/workloads/echo.rs)."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ...params.phases import PhaseUse, WorkloadParams, uses


class Params(WorkloadParams):
    name: Literal["echo"] = "echo"
    documents: int = Field(ge=1)

    PHASES: ClassVar[PhaseUse] = uses("load.interval_s", "measure.threads", "measure.interval_s",
                                      "measure.duration_s", required=("load", "measure.duration_s"))
