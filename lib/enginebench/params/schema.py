"""The schema of an experiment's params file (params/<exp>.yaml), checked before anything starts.

A file holds the experiment at the seed's own ("paper") scale, plus `scales:` with partial
overrides for `smoke` and `default`; every scale is validated in full. Unknown keys are errors,
not warnings: a misspelt knob must never silently fall back to a default.
"""
from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BeforeValidator, Field, ValidationError, field_validator, model_validator

from ..engines import ENGINES, NAMES as ENGINE_NAMES, mmap_lock_for
from ..families import FAMILIES
from ..mongod.spec import MongodSpec
from ..settings import SETTINGS, resolve as resolve_settings
from .base import Role, Strict
from .checkpoints import scale_systems
from .origins import did_you_mean
from .phases import Phases, check_use

# Each family's `workload:` model lives with its workload (families.py says where).
WORKLOAD_MODELS = {name: f.params_model for name, f in FAMILIES.items()}

SCALES = ("smoke", "default", "paper")




# `settings: 2015` in YAML (or --set settings=2015) reads as the number 2015: the name it means.
SettingName = Annotated[Literal[SETTINGS], BeforeValidator(lambda v: str(v) if isinstance(v, int) else v)]


class System(Strict):
    label: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    role: Role
    engine: Literal[ENGINE_NAMES]
    options: dict = Field(default_factory=dict)
    # `2015` or `today` (settings.py); unset: the experiment's `settings`.
    settings: SettingName | None = None
    # The options the params set by hand (they win over any setting), recorded in the manifest.
    explicit_options: list[str] = Field(default_factory=list)
    # False: load only, as the post's op0 setups appear only in its load table.
    measure_requests: bool = True
    # This system's memory limit, overriding resources.memory.limit_mb (a memory matrix is one
    # system per engine and memory size).
    memory_limit_mb: int | None = Field(None, ge=16)
    # Memory for the process's own needs outside the engine's cache (the runner, the engine's
    # buffers, handles and cursors), measured at a scale, added to memory_limit_mb for the cgroup.
    # A post's limits were so large that its server's own memory was a small share of them; at a
    # few hundred MB that share differs by engine and would decide what is left for the data.
    memory_own_mb: int = Field(0, ge=0)
    # How this system runs under TARGET=mongod (lib/enginebench/mongod/spec.py); what it leaves
    # out is derived from `engine` and `options` (docs/mongod.md: "The mongod target").
    mongod: MongodSpec | None = None
    # Set by the experiment, not by hand: the checkpoint interval the settings or the params gave
    # before a measured phase's `stands_for_s` scaled it (params/checkpoints.py).
    checkpoint_scaled_from_s: int | None = None

    @model_validator(mode="after")
    def _check_options(self):
        # Validated against the engine's own option model, so an error names that engine's keys.
        model = ENGINES[self.engine].options
        if not self.explicit_options:
            self.explicit_options = sorted(self.options)
        try:
            self.options = model(**self.options).model_dump()
        except ValidationError as exc:
            problems = []
            for error in exc.errors():
                key = "options." + ".".join(str(p) for p in error["loc"])
                if error["type"] == "extra_forbidden":
                    problems.append(f"{key}: unknown key for engine {self.engine};"
                                    f"{did_you_mean(error['loc'][-1], model.model_fields)} allowed keys: "
                                    + ", ".join(sorted(model.model_fields)))
                elif error["type"] == "literal_error":
                    problems.append(f"{key}: {error['input']!r} is not allowed for engine {self.engine}; "
                                    f"allowed values: {error['ctx']['expected']}")
                else:
                    problems.append(f"{key}: {error['msg']} (got {error.get('input')!r})")
            raise ValueError("; ".join(problems)) from None
        return self


class Metrics(Strict):
    sample_s: float = Field(1.0, gt=0, le=60)


class Memory(Strict):
    limit_mb: int | None = Field(None, ge=16)
    enforce: Literal["required", "best_effort"] = "best_effort"


class Storage(Strict):
    profile: Literal["none", "disk", "ssd"] = "none"
    # Multiplies the profile's caps. A scaled-down run on a slower stack keeps the post's
    # balance between what the device allows and what the server's CPU can do (1 = the device).
    scale: float = Field(1.0, gt=0, le=1)
    # False: the device caps start when the load is verified, as the posts loaded their databases
    # before measuring; the load then does not crawl at a slow device's random-read rate.
    during_load: bool = True


class Resources(Strict):
    memory: Memory = Field(default_factory=Memory)
    storage: Storage = Field(default_factory=Storage)


class Supervision(Strict):
    """How long the driver waits on a runner that reports nothing, or nothing done, before it
    calls it hung and kills it (docs/faults.md: "When a run goes wrong" states the rule)."""
    # Inside a phase: hung after this many of the phase's intervals without an event, or without
    # a completed operation...
    hung_intervals: float = Field(3, ge=1)
    # ...and never sooner than this: a load may legitimately report every few seconds and stall
    # for longer (a checkpoint on a slow device). Between phases: hung when this long without an
    # event while the runner uses no CPU and moves no data (plus a quiesce's own pause).
    hung_floor_s: float = Field(60, gt=0)
    # Between phases, a runner that keeps working without reporting (verifying or checking a
    # large database, closing it) is hung after this long.
    step_s: float = Field(3600, gt=0)
    # After a system fails (hung, a fatal engine error, no room for its data): go on with the
    # next system, or stop the run there.
    on_failure: Literal["next_system", "stop"] = "next_system"


class Reference(Strict):
    table: str
    config: str


class Experiment(Strict):
    experiment: str
    title: str
    question: str
    seed: str
    reference: Reference
    workload: Annotated[Union[tuple(WORKLOAD_MODELS.values())], Field(discriminator="name")]
    # Required at the top level, which is the paper scale: a scale block that fills it in must
    # not hide that the paper scale has none (its phases would silently be the defaults).
    phases: Phases
    metrics: Metrics = Field(default_factory=Metrics)
    resources: Resources = Field(default_factory=Resources)
    supervision: Supervision = Field(default_factory=Supervision)
    systems: list[System] = Field(min_length=1)
    keep_data: bool = False
    # Every system's settings unless it names its own (settings.py): the post's server and its
    # engines' 2015 defaults, or today's.
    settings: SettingName = "2015"
    # The post's own server options, per engine: part of the `2015` settings (e.g. the LinkBench
    # post's syncPeriodSecs 600 and journalCompressor none).
    post_settings: dict[Literal[ENGINE_NAMES], dict] = Field(default_factory=dict)

    @field_validator("systems")
    @classmethod
    def _unique_labels(cls, systems):
        labels = [s.label for s in systems]
        duplicates = sorted({l for l in labels if labels.count(l) > 1})
        if duplicates:
            raise ValueError(f"system labels must be unique; repeated: {', '.join(duplicates)}")
        return systems

    @model_validator(mode="after")
    def _settings(self):
        # Each system's options: its engine's defaults, its setting's values, the post's own
        # options (2015), and what the params set on it by hand, in that order.
        for system in self.systems:
            system.settings = system.settings or self.settings
            model = ENGINES[system.engine].options
            explicit = {k: system.options[k] for k in system.explicit_options if k in system.options}
            post = self.post_settings.get(system.engine)
            resolved = resolve_settings(system.engine, system.settings, explicit, model().model_dump(), post)
            system.options = model(**resolved).model_dump()
        return self

    @model_validator(mode="after")
    def _checkpoints_in_measured_time(self):
        scale_systems(self.phases.measure.model_dump() if self.phases.measure else None, self.systems)
        return self

    @model_validator(mode="after")
    def _mmap_lock_of_the_post(self):
        # A system's own mmap_lock wins; unset, it is the lock of the release the post ran, so
        # the manifest always records the granularity that ran.
        for system in self.systems:
            if system.engine == "lmdb" and system.options.get("mmap_lock") is None:
                system.options["mmap_lock"] = mmap_lock_for(self.workload.name)
        return self

    @model_validator(mode="after")
    def _phases_the_family_reads(self):
        family = FAMILIES[self.workload.name]
        problems = check_use(self.phases, family.phase_use(self.workload.model_dump()), family.name)
        if self.phases.load is not None and self.phases.load.reuse and not family.load_reusable:
            problems.append(f"phases.load.reuse: the {family.name} family's measured phases need what its load "
                            "kept in memory; a kept load is allowed for: "
                            + ", ".join(f.name for f in FAMILIES.values() if f.load_reusable))
        if problems:
            raise ValueError("; ".join(problems))
        return self
