"""The `mongod:` block of a system in an experiment's params file.

Every key is optional: what a system leaves out is derived from its embedded engine and options
(see systems.py), and what it sets overrides that. Unknown keys are errors, and every literal
lists its allowed values, so a misspelt knob never falls back to a default silently. Whether the
chosen binary supports a key is checked later, against the binary itself (options.py).
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ENGINES = ("wiredTiger", "inMemory", "mmapv1", "rocksdb", "tokuft", "tokumx")
TOPOLOGIES = ("standalone", "replset", "sharded")

Engine = Literal["wiredTiger", "inMemory", "mmapv1", "rocksdb", "tokuft", "tokumx"]
Scalar = str | int | float | bool


class MongodSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    engine: Engine | None = None
    # A path to this system's mongod; several binaries in one experiment (3.0.7 beside 3.2.0)
    # are several systems with their own `binary`. None: MONGOD, then PATH.
    binary: str | None = None
    mongos: str | None = None          # sharded only; None: MONGOS, then next to mongod, then PATH
    topology: Literal["standalone", "replset", "sharded"] | None = None
    members: int = Field(1, ge=1, le=7)            # per replica set (and per shard)
    shards: int = Field(2, ge=1, le=16)
    config_members: int = Field(1, ge=1, le=3)
    oplog_size_mb: int | None = Field(None, ge=1)
    # A replica set whose secondary falls too far behind to catch up: stop the phase and record
    # the finding (the TokuMX post's MongoDB secondary went "RS102 too stale"), or keep going.
    on_stale_secondary: Literal["stop", "ignore"] = "stop"
    lag_sample_s: float = Field(1.0, gt=0, le=60)
    # The clients' write concern: w:1 by default, as the posts' servers had it (the server's own
    # default became w:"majority" in 5.0, which measures a different durability). Recorded in the
    # results (the store's engine_config). Applies under TARGET=mongod and TARGET=uri. 0 is for
    # the 2013 shell loops (TokuMX's tests), whose writes were unacknowledged: the rate is then
    # what the client sent, as the post measured it, and the report says so.
    write_concern: int | Literal["majority"] = Field(1)

    # -- engine cache and durability --------------------------------------------------------
    cache_size_mb: int | None = Field(None, ge=1)
    journal: bool | None = None
    journal_compressor: Literal["none", "snappy", "zlib", "zstd"] | None = None
    # wiredTiger: the collection block compressor; rocksdb/tokuft/tokumx: their compression.
    block_compressor: Literal["none", "snappy", "zlib", "zstd", "lz4", "lz4hc", "quicklz", "lzma"] | None = None
    index_prefix_compression: bool | None = None
    table_type: Literal["btree", "lsm"] | None = None       # wiredTiger tables (LSM via config strings)
    # wiredTiger: checkpoint interval; mmapv1: flush interval (--syncdelay / storage.syncPeriodSecs).
    syncdelay_s: int | None = Field(None, ge=0)
    checkpoint_period_s: int | None = Field(None, ge=1)     # TokuMX 2.x --checkpointPeriod

    # -- fractal-tree engines (tokuft, TokuMX) -------------------------------------------------
    fanout: int | None = Field(None, ge=4)
    read_page_size: int | None = Field(None, ge=512)
    fast_updates: bool | None = None
    log_flush_period_ms: int | None = Field(None, ge=0)
    directio: bool | None = None
    cleaner_period_s: int | None = Field(None, ge=0)
    cleaner_iterations: int | None = Field(None, ge=0)
    fs_redzone_pct: int | None = Field(None, ge=0, le=100)
    lock_timeout_ms: int | None = Field(None, ge=0)
    expire_oplog_days: int | None = Field(None, ge=0)
    expire_oplog_hours: int | None = Field(None, ge=0)

    # -- MongoDB 2.x mmap era ------------------------------------------------------------------
    nssize_mb: int | None = Field(None, ge=1)
    journal_commit_interval_ms: int | None = Field(None, ge=1, le=500)
    directory_per_db: bool | None = None

    # -- anything else ---------------------------------------------------------------------------
    # --setParameter name=value pairs, and further server options by their command-line name
    # (checked against the binary's --help before launch).
    set_parameters: dict[str, Scalar] = Field(default_factory=dict)
    extra_options: dict[str, Scalar] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _topology_keys(self):
        if isinstance(self.write_concern, int) and self.write_concern < 0:
            raise ValueError(f"write_concern: {self.write_concern} is not allowed; allowed values: 0 (unacknowledged, "
                             "as the 2013 shell loops wrote), an integer of at least 1, or 'majority'")
        if self.topology == "standalone" and self.members != 1:
            raise ValueError(f"members: {self.members} needs topology replset or sharded (a standalone has one "
                             "member)")
        return self

    def explicit(self) -> dict:
        """Only the keys the params set (defaults excluded): these override the derived ones."""
        return self.model_dump(exclude_unset=True)
