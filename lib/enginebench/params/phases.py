"""`phases:`, the one declarative phase plan of every experiment family.

A params file says what runs and for how long: a load (its threads and reporting interval),
then, for the families that measure after loading, a quiesce, an optional cold start, the
measured phase (one per client count when `threads` is a list) and an optional rate sweep.
params/plan.py turns it into the steps the runners execute (lib/native/src/plan.rs).

Each family reads only some of these keys (its workload's `PHASES` says which): a key set in a
params file that its family does not read is an error, never a silent no-op.
"""
from __future__ import annotations

from typing import ClassVar, Literal, NamedTuple

from pydantic import Field, field_validator, model_validator

from .base import Strict, fields_set


class LoadPhase(Strict):
    threads: int = Field(1, ge=1, le=256)
    interval_s: float = Field(10, gt=0)
    # Start the measured phases from a copy of what an earlier run's load of the same kind left,
    # keeping one when there is none (loads.py): embedded engines, families that allow it.
    reuse: bool = False


class MeasurePhase(Strict):
    # One measured phase with this many client threads, or one per count of a list (a sweep
    # over clients, each phase named clients=<n>).
    threads: int | list[int] = 1
    interval_s: float = Field(60, gt=0)
    # None: until the workload's work is done (a replay that ends with its stream).
    duration_s: float | None = Field(None, gt=0)
    warmup_s: float = Field(0, ge=0)
    # Open loop: requests per second over all threads on a fixed schedule (LinkbenchX's
    # requestrate); latency is also measured from each request's intended start. None: closed loop.
    request_rate: float | None = Field(None, gt=0)
    # Measure until steady: end the phase at the first interval boundary where the steady-state
    # rule (metrics/steady.py) holds and at least min_duration_s have passed; duration_s is then
    # the most it may take (a phase that never settles runs all of it and says so).
    until_steady: bool = False
    min_duration_s: float | None = Field(None, gt=0)
    # The span of the post's measured time this phase stands for (the LinkBench post's 1-hour
    # intervals: 3600). Its checkpoints are then kept in proportion: every engine's checkpoint
    # interval (`checkpoint_s`) is multiplied by duration_s / stands_for_s (at least 1 s), so this
    # phase holds as many checkpoints as each of the post's spans did (params/checkpoints.py).
    # None: the intervals as the settings give them (the paper scale, where a phase's interval is
    # the post's own).
    stands_for_s: float | None = Field(None, gt=0)

    @field_validator("threads")
    @classmethod
    def _counts(cls, threads):
        counts = threads if isinstance(threads, list) else [threads]
        if not counts or any(n < 1 or n > 1024 for n in counts) or counts != sorted(set(counts)):
            raise ValueError(f"must be a count from 1 to 1024, or an increasing list of such counts (got {threads})")
        return threads

    @model_validator(mode="after")
    def _whole_intervals(self):
        if self.duration_s is not None and self.duration_s < self.interval_s:
            raise ValueError(f"duration_s ({self.duration_s:g}) must be at least interval_s ({self.interval_s:g})")
        return self

    @model_validator(mode="after")
    def _stands_for_a_span(self):
        if self.stands_for_s is not None and (self.duration_s is None or isinstance(self.threads, list)):
            raise ValueError("stands_for_s needs one measured phase of a fixed duration_s to scale checkpoints by "
                             f"(got duration_s {self.duration_s}, threads {self.threads})")
        return self

    @model_validator(mode="after")
    def _steady_needs_room(self):
        from ..metrics.steady import STEADY_MIN_INTERVALS
        if self.min_duration_s is not None and not self.until_steady:
            raise ValueError("min_duration_s applies only with until_steady: true")
        if not self.until_steady:
            return self
        least = STEADY_MIN_INTERVALS * self.interval_s
        if self.duration_s is None or self.duration_s < least:
            raise ValueError(f"until_steady needs duration_s (the most the phase may take) of at least "
                             f"{STEADY_MIN_INTERVALS} intervals ({least:g} s); got {self.duration_s}")
        if self.min_duration_s is not None and self.min_duration_s > self.duration_s:
            raise ValueError(f"min_duration_s ({self.min_duration_s:g}) must not exceed duration_s ({self.duration_s:g})")
        return self


class RateSweep(Strict):
    """After the closed-loop measured phase: one open-loop phase per fraction of the throughput it
    reached, for a latency-against-throughput curve."""
    fractions: list[float] = Field(min_length=1)
    seconds: float = Field(20, gt=0)

    @field_validator("fractions")
    @classmethod
    def _in_range(cls, fractions):
        bad = [f for f in fractions if not 0 < f <= 4]
        if bad:
            raise ValueError(f"fractions of the closed-loop throughput must be in (0, 4]; got {bad}")
        return fractions


class Phases(Strict):
    load: LoadPhase | None = None
    quiesce_s: float = Field(5, ge=0)
    # Whether the quiesce first makes everything durable (a WiredTiger checkpoint, RocksDB's
    # memtables flushed, mongod's fsync). False where the post went from load to queries without.
    quiesce_checkpoint: bool = True
    # Between load and measured phases: close the engine and evict its files from the page cache
    # (fadvise: only this system's files; drop_caches: the whole page cache, root only).
    cold_start: Literal["none", "fadvise", "drop_caches"] = "none"
    measure: MeasurePhase | None = None
    rate_sweep: RateSweep | None = None
    max_errors: int = Field(100, ge=0)
    # Server targets (mongod, uri): the client processes the workers of each phase are spread over,
    # so the interpreter lock of one Python process never caps the request rate (runner/clients.py).
    # None: one per core the runner may use. 1: the workers are threads of the runner itself.
    # Embedded engines ignore it (their runner is native).
    client_processes: int | None = Field(None, ge=1, le=64)

    @model_validator(mode="after")
    def _sweep_needs_closed_loop(self):
        if self.rate_sweep is not None and (self.measure is None or self.measure.request_rate is not None):
            raise ValueError("rate_sweep needs a closed-loop measured phase to scale from (measure without "
                             "request_rate)")
        return self


# Keys about how the runner runs, not what a family's plan is: every family takes them.
EVERY_FAMILY = frozenset({"client_processes", "load.reuse"})


class PhaseUse(NamedTuple):
    """What a family reads of `phases:`: the keys it may set, those it must, and whether its
    measured phase takes a list of client counts; `check`: its plan ends with a consistency check."""
    allowed: frozenset[str]
    required: frozenset[str] = frozenset()
    threads_list: bool = False
    check: bool = True


def uses(*keys: str, required: tuple[str, ...] = (), threads_list: bool = False, check: bool = True) -> PhaseUse:
    """A PhaseUse from dotted keys; a sub-key allows its block (`load.threads` allows `load`)."""
    allowed = set(keys) | {k.split(".")[0] for k in keys} | EVERY_FAMILY
    return PhaseUse(frozenset(allowed), frozenset(required), threads_list, check)


def check_use(phases: Phases, use: PhaseUse, family: str) -> list[str]:
    """The problems of a family's `phases:` block, each naming the key."""
    problems = []
    given = fields_set(phases)
    for key in sorted(given - use.allowed):
        problems.append(f"phases.{key}: not read by the {family} family; it reads "
                        + (", ".join(sorted(k for k in use.allowed if "." in k or k not in ("load", "measure")))
                           or "nothing"))
    for key in sorted(use.required - given):
        problems.append(f"phases.{key}: required by the {family} family")
    if phases.measure is not None and "measure.threads" in given:
        is_list = isinstance(phases.measure.threads, list)
        if is_list != use.threads_list:
            problems.append(f"phases.measure.threads: the {family} family takes "
                            + ("a list of client counts" if use.threads_list else "one thread count, not a list"))
    return problems


class WorkloadParams(Strict):
    """The base of every family's `workload:` model (in the family's workload module): what it
    reads of `phases:` (PHASES, or per experiment where that differs)."""
    PHASES: ClassVar[PhaseUse]

    @classmethod
    def phase_use(cls, workload: dict) -> PhaseUse:
        return cls.PHASES
