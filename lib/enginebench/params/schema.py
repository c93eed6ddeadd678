"""The schema of an experiment's params file (params/<exp>.yaml), checked before anything starts.

A file holds the experiment at the seed's own ("paper") scale, plus `scales:` with partial
overrides for `smoke` and `default`; every scale is validated in full. Unknown keys are errors,
not warnings: a misspelt knob must never silently fall back to a default.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..mongod.spec import MongodSpec

SCALES = ("smoke", "default", "paper")
ROLES = ("btree", "lsm", "mmap", "fractal", "memory")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecordStoreOptions(Strict):
    """Options of the record-store layer every embedded engine shares (op1 = with an oplog)."""
    oplog: bool = False
    oplog_size_mb: int = Field(1024, ge=1)


# Engine settings left unset (None) are those mongod or MongoRocks used, as the native runner
# applies them (lib/native/src/store/mongod_layout.rs names each setting's source); the run's
# manifest records every effective value.
class WiredTigerOptions(RecordStoreOptions):
    # The WiredTiger release: the one built from source, or Debian's older one beside it.
    version: Literal["11.3.1", "3.2.1"] = "11.3.1"
    table_type: Literal["btree", "lsm"] = "btree"
    cache_size_mb: int = Field(256, ge=1)
    block_compressor: Literal["none", "snappy", "zstd", "zlib"] = "snappy"
    log: bool = True
    checkpoint_s: int = Field(60, ge=1)            # mongod's --syncdelay
    journal_commit_ms: int | None = Field(None, ge=0)  # the journal flusher's period (3.2: 100 ms; 0: none)
    lsm_chunk_mb: int | None = Field(None, ge=1)       # LSM tables: 10 MB, or an eighth of a smaller cache
    index_prefix_compression: bool | None = None


class RocksDBOptions(RecordStoreOptions):
    cache_size_mb: int = Field(256, ge=1)
    compression: Literal["none", "snappy", "zlib", "zstd", "lz4"] = "snappy"
    # Memtables are memory outside the block cache: scaled-down runs under a memory limit
    # need them scaled down too (MongoRocks: 64 MB x 4).
    write_buffer_mb: int | None = Field(None, ge=1)
    max_write_buffers: int | None = Field(None, ge=2)
    max_background_compactions: int | None = Field(None, ge=1)
    max_background_flushes: int | None = Field(None, ge=1)
    block_size_kb: int | None = Field(None, ge=1)
    bloom_bits: int | None = Field(None, ge=0)
    statistics: bool = False  # RocksDB's tickers (block cache hits, stalls, ...): MongoRocks left them off


class LMDBOptions(RecordStoreOptions):
    map_size_gb: int = Field(64, ge=1)
    readahead: bool = False
    # The mmap stand-in emulates MMAPv1's locks: per collection (MongoDB 3.0), per database (2.6),
    # or none (LMDB's own: one writer, readers never wait).
    mmap_lock: Literal["collection", "database", "none"] = "collection"


ENGINE_OPTIONS = {"wiredtiger": WiredTigerOptions, "rocksdb": RocksDBOptions, "lmdb": LMDBOptions}


class System(Strict):
    label: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    role: Literal["btree", "lsm", "mmap", "fractal", "memory"]
    engine: Literal["wiredtiger", "rocksdb", "lmdb"]
    options: dict = Field(default_factory=dict)
    # False: load only, as the post's op0 setups appear only in its load table.
    measure_requests: bool = True
    # This system's memory limit, overriding resources.memory.limit_mb (a memory matrix is one
    # system per engine and memory size).
    memory_limit_mb: int | None = Field(None, ge=16)
    # How this system runs under TARGET=mongod (lib/enginebench/mongod/spec.py); what it leaves
    # out is derived from `engine` and `options` (README: "The mongod target").
    mongod: MongodSpec | None = None

    @model_validator(mode="after")
    def _check_options(self):
        # Validated against the engine's own option model, so an error names that engine's keys.
        model = ENGINE_OPTIONS[self.engine]
        try:
            self.options = model(**self.options).model_dump()
        except ValidationError as exc:
            problems = []
            for error in exc.errors():
                key = "options." + ".".join(str(p) for p in error["loc"])
                if error["type"] == "extra_forbidden":
                    problems.append(f"{key}: unknown key for engine {self.engine}; allowed keys: "
                                    + ", ".join(sorted(model.model_fields)))
                else:
                    problems.append(f"{key}: {error['msg']} (got {error.get('input')!r})")
            raise ValueError("; ".join(problems)) from None
        return self


class LinkBenchWorkload(Strict):
    name: Literal["linkbench"]
    maxid1: int = Field(ge=2)
    startid1: int = Field(1, ge=1)
    link_type_count: int = Field(2, ge=1)
    load_batch: int = Field(1024, ge=1)
    chunk_size: int = Field(2048, ge=1)
    seed: int = 1
    max_degree: int | None = Field(None, ge=1)
    # How ADD/UPDATE/DELETE_LINK keep the count rows: "linkbenchx", what the post ran against
    # MongoDB 3.x (separate round trips, counts that drift), or "exact", MySQL's transaction.
    counts: Literal["exact", "linkbenchx"] = "exact"

    @model_validator(mode="after")
    def _range(self):
        if self.maxid1 <= self.startid1:
            raise ValueError(f"maxid1 ({self.maxid1}) must be greater than startid1 ({self.startid1})")
        return self


class IIBenchWorkload(Strict):
    """The post's 24-argument command line, by name (spec A.5)."""
    name: Literal["iibench"]
    max_rows: int = Field(ge=1)
    writers: int = Field(10, ge=1, le=256)
    docs_per_insert: int = Field(10, ge=1)
    num_secondary_indexes: int = Field(3, ge=0, le=3)
    num_char_fields: int = Field(1, ge=0)
    length_char_fields: int = Field(1000, ge=0)
    percent_compressible: int = Field(50, ge=0, le=100)
    max_inserts_per_second: int | None = Field(None, ge=1)
    query_threads: int = Field(1, ge=0)
    query_limit: int = Field(4, ge=1)
    query_begin_docs: int = Field(100_000, ge=0)
    ms_between_queries: int = Field(0, ge=0)
    slow_threshold_s: float = Field(2.0, gt=0)
    interval_s: float = Field(10.0, gt=0)


class SysbenchWorkload(Strict):
    """sysbench-mongodb's config.bash, by name (spec B.6)."""
    name: Literal["sysbench"]
    collections: int = Field(16, ge=1)
    docs_per_collection: int = Field(10_000_000, ge=1)
    docs_per_insert: int = Field(1000, ge=1)
    loader_threads: int = Field(8, ge=1)
    writer_threads: int = Field(64, ge=1, le=1024)
    run_seconds: float = Field(600, gt=0)
    interval_s: float = Field(10, gt=0)
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

    @model_validator(mode="after")
    def _whole_batches(self):
        if self.docs_per_collection < self.docs_per_insert:
            raise ValueError(f"docs_per_collection ({self.docs_per_collection}) must be at least docs_per_insert "
                             f"({self.docs_per_insert}): only whole batches are loaded")
        return self


class TokuMXWorkload(Strict):
    """The three experiments of the TokuMX post (seed 004): which one, and its sizes."""
    name: Literal["tokumx"]
    experiment: Literal["insert", "read_update", "read"]
    documents: int = Field(ge=1)            # inserted (insert) or loaded before the client sweep
    payload_chars: int = Field(200, ge=1)   # createRandomData(200)
    load_batch: int = Field(1000, ge=1)     # read_update/read only: documents per load call
    clients: list[int] | None = None        # read_update/read: one measured phase per count
    phase_s: float | None = Field(None, gt=0)
    interval_s: float = Field(10, gt=0)
    quiesce_s: float = Field(5, ge=0)
    seed: int = 1
    # Claims name roles (fractal, mmap); where no system has a role, the report may show the
    # comparison with another role standing in, apart from the verdicts (which stay "not evaluated").
    stand_in: dict[Literal["btree", "lsm", "mmap", "fractal", "memory"],
                   Literal["btree", "lsm", "mmap", "fractal", "memory"]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _per_experiment(self):
        sweep_keys = sorted({"clients", "phase_s", "load_batch"} & self.model_fields_set)
        if self.experiment == "insert" and sweep_keys:
            raise ValueError(f"{', '.join(sweep_keys)}: only for experiment read_update or read (the insert "
                             "experiment inserts one document per call, with one client)")
        if self.experiment != "insert":
            for key in ("clients", "phase_s"):
                if getattr(self, key) is None:
                    raise ValueError(f"{key}: required for experiment {self.experiment}")
            if not self.clients or any(c < 1 for c in self.clients) or self.clients != sorted(set(self.clients)):
                raise ValueError(f"clients: must be a non-empty, increasing list of counts of at least 1 "
                                 f"(got {self.clients})")
        same = sorted(k for k, v in self.stand_in.items() if k == v)
        if same:
            raise ValueError(f"stand_in: a role cannot stand in for itself ({', '.join(same)})")
        return self


class FlashbackWorkload(Strict):
    """Record the bundled application mix on the first system, replay it on the others (seed 003;
    lib/enginebench/flashback/). The first group of keys shapes the bundled workload, the second the
    replay, as Flashback's command line did."""
    name: Literal["flashback"]
    users: int = Field(2_000, ge=1)
    posts: int = Field(100_000, ge=1)
    post_bytes: int = Field(400, ge=1)
    capped_mb: float = Field(4.0, gt=0)
    event_bytes: int = Field(200, ge=1)
    rate: float = Field(200.0, gt=0)          # mean arrivals per second while recording
    duration_s: float = Field(60.0, gt=0)     # length of the recorded stream
    skew: float = Field(1.1, gt=0)
    seed: int = 1
    style: Literal["real", "stress"] = "real"
    speedup: float = Field(1.0, gt=0)         # real style: replay at this multiple of the original pace
    workers: int = Field(10, ge=1, le=256)    # Flashback's default
    op_filter: list[Literal["insert", "query", "getmore", "update", "remove", "count", "findandmodify",
                            "command"]] | None = None  # replay only these op types
    interval_s: float = Field(10.0, gt=0)
    capture_file: str | None = None           # replay this ops file on every system instead of recording

    @field_validator("capture_file")
    @classmethod
    def _capture_exists(cls, path):
        if path is not None:
            from pathlib import Path
            from ..paths import repo_root
            resolved = Path(path) if Path(path).is_absolute() else repo_root() / path
            if not resolved.is_file():
                raise ValueError(f"no ops file at {resolved}")
            return str(resolved)
        return path


class Phases(Strict):
    loaders: int = Field(1, ge=1, le=256)
    requesters: int = Field(1, ge=1, le=1024)
    load_interval_s: float = Field(10, gt=0)
    quiesce_s: float = Field(5, ge=0)
    # Between load and measured phases: close the engine and evict its files from the page cache
    # (fadvise: only this system's files; drop_caches: the whole page cache, root only).
    cold_start: Literal["none", "fadvise", "drop_caches"] = "none"
    warmup_s: float = Field(0, ge=0)
    interval_s: float = Field(60, gt=0)
    intervals: int = Field(1, ge=1)
    # Open loop: requests per second over all requesters on a fixed schedule (LinkbenchX's
    # requestrate); latency is also measured from each request's intended start. None: closed loop.
    request_rate: float | None = Field(None, gt=0)
    # After the closed-loop measured phase: one open-loop phase per fraction of the throughput it
    # reached, for a latency-against-throughput curve (each `rate_sweep_s` long).
    rate_sweep: list[float] | None = Field(None, min_length=1)
    rate_sweep_s: float = Field(20, gt=0)
    max_errors: int = Field(100, ge=0)

    @model_validator(mode="after")
    def _sweep(self):
        if self.rate_sweep is None:
            return self
        bad = [f for f in self.rate_sweep if not 0 < f <= 4]
        if bad:
            raise ValueError(f"rate_sweep: fractions of the closed-loop throughput must be in (0, 4]; got {bad}")
        if self.request_rate is not None:
            raise ValueError("rate_sweep needs a closed-loop measured phase to scale from; remove request_rate "
                             "or rate_sweep")
        return self


WORKLOAD_MODELS = {"linkbench": LinkBenchWorkload, "iibench": IIBenchWorkload, "sysbench": SysbenchWorkload,
                   "tokumx": TokuMXWorkload, "flashback": FlashbackWorkload}


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
    calls it hung and kills it (README: "When a run goes wrong" states the rule)."""
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
    notebook: Literal["linkbench", "iibench", "sysbench", "tokumx", "flashback"]
    title: str
    question: str
    seed: str
    reference: Reference
    workload: (LinkBenchWorkload | IIBenchWorkload | SysbenchWorkload | TokuMXWorkload
               | FlashbackWorkload) = Field(discriminator="name")
    # Required at the top level, which is the paper scale: a scale block that fills it in must
    # not hide that the paper scale has none (its phases would silently be the defaults).
    phases: Phases
    metrics: Metrics = Field(default_factory=Metrics)
    resources: Resources = Field(default_factory=Resources)
    supervision: Supervision = Field(default_factory=Supervision)
    systems: list[System] = Field(min_length=1)
    keep_data: bool = False

    @field_validator("systems")
    @classmethod
    def _unique_labels(cls, systems):
        labels = [s.label for s in systems]
        duplicates = sorted({l for l in labels if labels.count(l) > 1})
        if duplicates:
            raise ValueError(f"system labels must be unique; repeated: {', '.join(duplicates)}")
        return systems
