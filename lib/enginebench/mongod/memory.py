"""A mongod deployment under a system's memory limit, checked before anything starts.

Every process of a launched deployment joins the system's cgroup (launch.py spawns them with its
preexec); the runner, their client, stays outside it. A params' memory limit (memory_limit_mb,
else resources.memory.limit_mb) is the memory for the engine's cache and the data; the embedded
runner's limit adds its own measured memory (memory_own_mb), which says nothing of mongod's. So
under TARGET=mongod:

  - the cache each data-bearing member actually gets is taken from its built settings, after the
    share of the params' cache (systems.share_cache) and the version's floor (options._gb: whole
    GB and at least 1 GB on 3.0/3.2, 0.25 GB from 3.4);
  - when the members' caches together exceed the params' memory for cache and data, the system
    is skipped with the reason: a larger limit would change what the experiment measures;
  - otherwise the limit becomes that memory plus the deployment's own: MONGOD_OWN_MB for each of
    its processes and the config servers' caches, and the system's memory_own_mb says so, so that
    the report's "memory for cache and data" is still the params' figure.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .binary import BinaryInfo
from .options import MB, Setting
from .topology import config_server_engine, process_count

# What mongod needs beside its engine's cache, per process. No mongod runs here to measure it, so
# the figure is the one MongoDB's own default cache sizing leaves outside the WiredTiger cache:
# (RAM - 1024 MB) x 0.6 at mongodb r3.2.0 (src/mongo/db/storage/wiredtiger/wiredtiger_init.cpp),
# max((RAM - 1024 MB) x 0.5, 256 MB) at r3.4.0 and r4.0.0 (wiredtiger_util.cpp). It is used for
# every process of a deployment (members, config servers, mongos) and every version.
MONGOD_OWN_MB = 1024
OWN_SOURCE = ("the 1024 MB that MongoDB's default WiredTiger cache sizing leaves outside the cache: (RAM - 1 GB) x "
              "0.6 in mongodb r3.2.0's wiredtiger_init.cpp, max((RAM - 1 GB) x 0.5, 256 MB) in r3.4.0's "
              "wiredtiger_util.cpp")
CACHE_GB = ("wiredTigerCacheSizeGB", "inMemorySizeGB", "rocksdbCacheSizeGB")
CACHE_BYTES = ("PerconaFTEngineCacheSize", "tokuftEngineCacheSize", "cacheSize")
ENGINES_WITH_A_CACHE = ("wiredTiger", "inMemory", "rocksdb", "tokuft", "tokumx")


class DoesNotFit(Exception):
    """The deployment's caches cannot be had within the params' memory; the system is skipped."""


@dataclass
class MemoryFit:
    budget_mb: int            # the params' memory for the engine's cache and the data
    members: int              # data-bearing mongod processes
    cache_mb: float           # the engine cache each of them gets (0: none of its own, mmapv1)
    processes: int            # every process in the cgroup
    config_cache_mb: float    # the config servers' caches together
    own_mb: int               # what the limit adds to the budget

    @property
    def limit_mb(self) -> int:
        return self.budget_mb + self.own_mb

    def describe(self) -> dict:
        return {**asdict(self), "limit_mb": self.limit_mb, "own_per_process_mb": MONGOD_OWN_MB,
                "own_source": OWN_SOURCE}


def cache_mb(settings: list[Setting]) -> float | None:
    """The engine cache the settings give one mongod, in MB; None when they set none."""
    for s in settings:
        if s.cli in CACHE_GB:
            return float(s.value) * 1024
        if s.cli in CACHE_BYTES:
            return int(s.value) / MB
    return None


def _config_cache_mb(spec: dict, info: BinaryInfo) -> float:
    """Config server replica sets (3.2+, not TokuMX) run WiredTiger with their own cache
    (topology.config_server_engine); mirrored ones (SCCC) run mmapv1, whose cache is the data's."""
    if spec.get("topology") != "sharded" or not info.at_least(3, 2) or info.flavour == "TokuMX":
        return 0.0
    return spec.get("config_members", 1) * (cache_mb(config_server_engine(info)) or 0.0)


def fit(spec: dict, info: BinaryInfo, settings: list[Setting], budget_mb: int, members: int) -> MemoryFit:
    """The deployment's memory under a limit whose memory for cache and data is `budget_mb`, or
    DoesNotFit with the reason (for the banner)."""
    engine = spec["engine"]
    per_member = cache_mb(settings)
    if per_member is None and engine in ENGINES_WITH_A_CACHE:
        raise DoesNotFit(f"it sets no {engine} cache size, so each mongod would size its cache from the host's "
                         f"memory, not from the {budget_mb} MB limit; set options.cache_size_mb or "
                         "mongod.cache_size_mb")
    per_member = per_member or 0.0
    if members * per_member > budget_mb:
        asked = spec.get("cache_size_mb")
        why = "" if asked is None or per_member <= asked else (
            f"; {info.flavour} {info.version} takes no smaller cache than {per_member:g} MB, where the params' "
            f"share is {asked} MB")
        plural = members > 1
        raise DoesNotFit(f"its {members} data-bearing mongod{'s need' if plural else ' needs'} {members} x "
                         f"{per_member:g} MB of {engine} cache, more than the {budget_mb} MB its params give the "
                         f"engine's cache and the data{why}; a larger limit would change what is measured")
    processes = process_count(spec)
    config = _config_cache_mb(spec, info)
    own = processes * MONGOD_OWN_MB + math.ceil(config)
    return MemoryFit(budget_mb, members, round(per_member, 1), processes, config, own)


def note(label: str, fitted: MemoryFit, where: str, runner_own_mb: int) -> str:
    """The banner line saying what the limit holds and where each figure comes from."""
    config = f" and {fitted.config_cache_mb:g} MB of config server cache" if fitted.config_cache_mb else ""
    runner = (f"; the runner's own {runner_own_mb} MB (memory_own_mb) is not added: it stays outside the limit"
              if runner_own_mb else "")
    cache = f"{fitted.members} x {fitted.cache_mb:g} MB of engine cache" if fitted.cache_mb else "no engine cache"
    return (f"system {label}: its mongod deployment runs in a {fitted.limit_mb} MB memory limit: {fitted.budget_mb} MB "
            f"for the engine's cache ({cache}) and the data ({where}), plus {fitted.processes} process"
            f"{'es' if fitted.processes > 1 else ''} x {MONGOD_OWN_MB} MB of mongod's own memory{config} "
            f"({OWN_SOURCE}){runner}.")
