"""`workload:` of a TokuMX params file: which of the post's three experiments (seed 004,
Severalnines 2013), and its sizes. The runner's workload (lib/native/src/workloads/tokumx.rs)
reads the same keys."""
from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ...params.phases import PhaseUse, WorkloadParams, uses


class Params(WorkloadParams):
    """The three experiments of the TokuMX post (seed 004): which one, and its sizes. The client
    counts and the time per count are `phases.measure` (threads: [1, 2, ...], duration_s)."""
    name: Literal["tokumx"] = "tokumx"
    experiment: Literal["insert", "read_update", "read"]
    documents: int = Field(ge=1)            # inserted (insert) or loaded before the client sweep
    payload_chars: int = Field(200, ge=1)   # createRandomData(200)
    load_batch: int = Field(1000, ge=1)     # read_update/read only: documents per load call
    seed: int = 1

    # insert: one client inserts, and the load is what is measured.
    INSERT_PHASES: ClassVar[PhaseUse] = uses("load.interval_s", required=("load",))
    PHASES: ClassVar[PhaseUse] = uses(
        "load.interval_s", "quiesce_s", "quiesce_checkpoint", "measure.threads", "measure.interval_s",
        "measure.duration_s", "max_errors", required=("load", "measure.threads", "measure.duration_s"), threads_list=True)

    @classmethod
    def phase_use(cls, workload: dict) -> PhaseUse:
        return cls.INSERT_PHASES if workload.get("experiment") == "insert" else cls.PHASES

    @model_validator(mode="after")
    def _per_experiment(self):
        # Resolved params carry every default and are validated again when the workload is built:
        # only a load_batch other than the default was set by hand.
        default = type(self).model_fields["load_batch"].default
        if self.experiment == "insert" and "load_batch" in self.model_fields_set and self.load_batch != default:
            raise ValueError("load_batch: only for experiment read_update or read (the insert experiment inserts "
                             "one document per call)")
        return self
