"""How an experiment's systems run under TARGET=mongod (and TARGET=uri), decided before anything starts.

Every system is written for the embedded engines (`engine`, `options`); under TARGET=mongod it
maps to the mongod engine of the same kind, and an optional `mongod:` block overrides any part:

  embedded engine / options          mongod
  wiredtiger, table_type btree       wiredTiger
  wiredtiger, table_type lsm         wiredTiger with LSM tables (collection and index config strings)
  rocksdb                            rocksdb (MongoRocks, Percona Server 3.x)
  lmdb (role mmap)                   mmapv1 (the mmap'ed B-tree of MongoDB <= 4.0)
  cache_size_mb                      the engine's cache size
  block_compressor / compression     the engine's collection compressor
  checkpoint_s                       --syncdelay (WiredTiger checkpoints every syncdelay seconds)
  log: false                         --nojournal
  oplog false / true, oplog_size_mb  standalone (op0) / 1-member replica set (op1), --oplogSize

A mapped engine the binary lacks (mmapv1 on MongoDB 4.2+, rocksdb on a MongoDB build) skips that
system with the reason on top of the report; an engine or option set explicitly under `mongod:`
that the binary lacks is an error naming the system, key and allowed values. A derived cache size
a version cannot take (3.0/3.2 want whole GB) is adjusted with a note; an explicit one is an error.
Under a memory limit, the caches the members really get must fit the params' memory for cache and
data, or the system is skipped; the limit then adds mongod's own memory, not the runner's (memory.py).
ENGINEBENCH_MONGOD_TOPOLOGY=standalone|replset|sharded overrides every system's topology (the
integration suite runs each experiment on all three).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..engines import ENGINES, WT_TAG_MONGOD
from .binary import BinaryError, BinaryInfo, find_mongod, find_mongos, identify, identify_mongos
from .legacy import NoClient, runner_python, wire_version
from .memory import DoesNotFit
from .memory import fit as fit_memory
from .memory import note as memory_note
from .options import OptionError, engine_settings, to_yaml_dict, version_line
from .sharding import split_points
from .spec import TOPOLOGIES

TOPOLOGY_ENV = "ENGINEBENCH_MONGOD_TOPOLOGY"


class SystemSkipped(Exception):
    """This system cannot run on its binary (for a reason the report states); others still run."""


# The embedded option each derived mongod key comes from (engines.py's mongod_settings), so that an
# error names the key the params file has: options.<key>.
ORIGIN = {"cache_size_mb": "cache_size_mb", "block_compressor": "block_compressor", "syncdelay_s": "checkpoint_s",
          "journal": "log", "journal_compressor": "journal_compressor", "table_type": "table_type",
          "oplog_size_mb": "oplog_size_mb"}
ORIGIN_BY_ENGINE = {("rocksdb", "block_compressor"): "compression", ("fractal", "block_compressor"): "compression"}


def implied_spec(system: dict) -> dict:
    """The mongod spec a system's embedded engine and options stand for."""
    options = system.get("options") or {}
    record = ENGINES[system["engine"]]
    # A record's mongod_settings may name the engine itself (the fractal tree: TokuMX or tokuft).
    spec: dict = {"engine": record.mongod_engine, **record.mongod_settings(options)}
    if options.get("oplog"):
        spec["topology"] = "replset"
        spec["oplog_size_mb"] = options.get("oplog_size_mb")
    else:
        spec["topology"] = "standalone"
    return spec


def resolve_spec(system: dict) -> dict:
    """Implied spec, overridden by the keys the `mongod:` block sets; `_explicit` names those."""
    spec = implied_spec(system)
    block = system.get("mongod") or {}
    explicit = {k: v for k, v in block.items() if v is not None and v != {}}
    defaults = {"members": 1, "shards": 2, "config_members": 1, "on_stale_secondary": "stop", "lag_sample_s": 1.0,
                "write_concern": 1}
    spec = {**defaults, **spec, **explicit}
    override = os.environ.get(TOPOLOGY_ENV)
    if override:
        if override not in TOPOLOGIES:
            raise OptionError(f"{TOPOLOGY_ENV}={override!r} is not allowed; allowed values: {', '.join(TOPOLOGIES)}")
        spec["topology"] = override
    # A derived engine/compressor/cache the binary lacks is adjusted or skipped; these were asked for.
    spec["_explicit"] = sorted(k for k in explicit if k not in defaults)
    spec["_origin"] = {k: f"options.{ORIGIN_BY_ENGINE.get((system['engine'], k), name)}" for k, name in ORIGIN.items()}
    return spec


def _public(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if not k.startswith("_")}


def data_members(spec: dict) -> int:
    """The data-bearing mongod processes of a deployment (config servers and mongos excluded)."""
    topology = spec.get("topology") or "standalone"
    if topology == "standalone":
        return 1
    return spec.get("members", 1) * (spec.get("shards", 2) if topology == "sharded" else 1)


def share_cache(spec: dict, label: str, memory_limit_mb: int | None, notes: list[str]) -> None:
    """One resource profile holds the whole deployment, where the posts had one host per member:
    under a memory limit, each of N data-bearing members gets 1/N of the params' engine cache, so
    that together they hold what one host's engine held in the same memory (tokumx_concurrency's
    paper scale: 3 members x 1024 MB in one 2048 MB limit become 3 x 341 MB). Config servers get
    0.25 GB each (topology.config_server_engine). An explicit mongod.cache_size_mb is per member
    and is kept as it is."""
    members = data_members(spec)
    if memory_limit_mb is None or members < 2 or spec.get("cache_size_mb") is None \
            or "cache_size_mb" in spec["_explicit"]:
        return
    share = max(1, spec["cache_size_mb"] // members)
    notes.append(f"system {label}: its {members} data-bearing members share one {memory_limit_mb} MB memory limit, "
                 f"so each gets {share} MB of engine cache (1/{members} of {spec['cache_size_mb']} MB)")
    spec["cache_size_mb"] = share


LSM_REMOVED = (8, 1)   # WT-12751: WiredTiger at mongodb-8.1.0 has no LSM tables (no src/lsm)


def prepare_system(system: dict, params_file: str, memory_limit_mb: int | None = None,
                   limit_key: str = "memory_limit_mb") -> tuple[dict, list[str]]:
    """Check one system against its binary; returns (what the launch needs, notes for the banner).
    `memory_limit_mb` is the params' memory for the engine's cache and the data (`limit_key` names
    where it was set). Raises OptionError/BinaryError (the run does not start) or SystemSkipped."""
    label = system["label"]
    where = f"{params_file}: system {label}: "
    spec = resolve_spec(system)
    binary = find_mongod(spec.get("binary"), where=where)
    if binary is None:
        raise BinaryError(f"{where}no mongod binary: set mongod.binary, MONGOD=/path/to/mongod, or put mongod on "
                          "PATH")
    info = identify(binary)
    _engine_present(spec, info, label, binary)
    _release_present(system, info, label, binary)
    notes: list[str] = []
    share_cache(spec, label, memory_limit_mb, notes)
    try:
        settings = engine_settings(label, spec, info, notes)
    except OptionError as exc:
        raise OptionError(f"{params_file}: {exc}") from None
    fitted = _memory(spec, info, settings, label, memory_limit_mb, limit_key)
    mongos = find_mongos(binary, spec.get("mongos"), where=where) if spec["topology"] == "sharded" else None
    if mongos is not None:
        identify_mongos(mongos, info, where=where)
    try:
        client = runner_python(info, label)
    except NoClient as why:
        raise SystemSkipped(f"system {label} skipped: {why}") from None
    engine = spec["engine"]
    launch = {"spec": _public(spec), "explicit": spec["_explicit"], "binary": info.describe(), "mongos": mongos,
              "client": client, "version_line": version_line(info.default_engine if engine is None else engine, info),
              "wire_version": wire_version(info), "engine_config": to_yaml_dict(settings),
              "memory": fitted.describe() if fitted else None}
    if fitted:
        notes.append(memory_note(label, fitted, limit_key, system.get("memory_own_mb") or 0))
    return launch, notes


def _engine_present(spec: dict, info: BinaryInfo, label: str, binary: str) -> None:
    """A derived engine the binary lacks, or LSM tables on a WiredTiger without them: skipped."""
    engine = spec["engine"]
    if engine not in info.engines and "engine" not in spec["_explicit"]:
        raise SystemSkipped(f"system {label} skipped: its engine maps to {engine}, which {info.flavour} "
                            f"{info.version} ({binary}) does not have (it has: {', '.join(info.engines)})")
    if engine == "wiredTiger" and spec.get("table_type") == "lsm" and info.version_tuple[:2] >= LSM_REMOVED:
        raise SystemSkipped(f"system {label} skipped: it uses WiredTiger LSM tables, which {info.flavour} "
                            f"{info.version} ({binary}) no longer has (removed from WiredTiger in 8.1, WT-12751)")


def _release_present(system: dict, info: BinaryInfo, label: str, binary: str) -> None:
    """A system that names a WiredTiger release by hand (`options.version`) exists to measure that
    release; a server runs the WiredTiger it was built with, so the system runs only on the
    MongoDB release that shipped the named tree (engines.WT_TAG_MONGOD) and is skipped on any
    other, rather than measuring the server's own release under the tree's name. A release that
    `settings: 2015` derives from the post is not asked for by hand and does not skip."""
    options = system.get("options") or {}
    if system.get("engine") != "wiredtiger" or "version" not in (system.get("explicit_options") or []):
        return
    wanted = options.get("version")
    if WT_TAG_MONGOD.get(wanted) == info.version:
        return
    shipped = (f"the tree MongoDB {WT_TAG_MONGOD[wanted]} shipped" if wanted in WT_TAG_MONGOD
               else "a release the embedded runner links")
    raise SystemSkipped(f"system {label} skipped: it names WiredTiger {wanted} (options.version), {shipped}; "
                        f"{info.flavour} {info.version} ({binary}) runs its own WiredTiger")


def _memory(spec: dict, info: BinaryInfo, settings: list, label: str, limit_mb: int | None, limit_key: str):
    """The deployment's memory under the system's limit (memory.py), or SystemSkipped."""
    if limit_mb is None:
        return None
    try:
        return fit_memory(spec, info, settings, limit_mb, data_members(spec))
    except DoesNotFit as why:
        raise SystemSkipped(f"system {label} skipped: {why} ({limit_key}: {limit_mb})") from None


def _limit(params: dict, system: dict) -> tuple[int | None, str]:
    """The params' memory for the engine's cache and the data, and the key that set it."""
    if system.get("memory_limit_mb") is not None:
        return system["memory_limit_mb"], "memory_limit_mb"
    return ((params.get("resources") or {}).get("memory") or {}).get("limit_mb"), "resources.memory.limit_mb"


def prepare_systems(params: dict) -> tuple[list[dict], list[str]]:
    """The systems that will run on mongod (each with its `mongod_launch`), and banner lines.

    A system whose deployment fits its memory limit has its memory_own_mb in `params` set to the
    deployment's own memory (memory.py): the resource plan adds that to the limit (the embedded
    runner's own memory does not apply to mongod), and the report's memory for cache and data is
    still the params' figure."""
    ready, banner = [], []
    for system in params["systems"]:
        limit, limit_key = _limit(params, system)
        try:
            launch, notes = prepare_system(system, params.get("params_file", params["experiment"]), limit, limit_key)
        except SystemSkipped as why:
            banner.append(str(why) + ".")
            continue
        if launch["memory"] is not None:
            system["memory_own_mb"] = launch["memory"]["own_mb"]
        if launch["spec"]["topology"] == "sharded":  # chunks split and placed before the load
            launch["shard_splits"] = split_points(params["workload"], launch["spec"].get("shards", 2))
        banner += notes
        ready.append({**system, "mongod_launch": launch})
        banner.append(f"{system['label']}: {launch['binary']['flavour']} {launch['binary']['version']} "
                      f"({launch['binary']['path']}), engine {launch['spec']['engine']}, "
                      f"{launch['spec']['topology']}, commands through {launch['client']['executor']}, companion pymongo "
                      f"{launch['client']['client']}.")
    if not ready:
        raise OptionError(f"{params.get('params_file', params['experiment'])}: no system can run on the mongod "
                          "binaries found: " + " ".join(banner))
    return ready, banner


# -- one system's server, for the driver -----------------------------------------------------------------
@dataclass
class ServerHandle:
    uri: str
    client: dict                          # legacy.client_for: executor and interpreters
    database: str
    deployment: object | None = None      # launch.Deployment for TARGET=mongod; None for uri
    spec: dict | None = None
    splits: dict | None = None            # sharding.split_points, for the companion
    refusal_path: Path | None = None      # where the companion writes a refusal of the system's tables

    @property
    def python(self) -> str:
        return self.client["python"]

    def runner_spec(self, system: dict, keep_data: bool) -> dict:
        """The runner spec's `server` part (lib/native/src/executors/server/mod.rs ServerSpec)."""
        spec = self.spec or {}
        companion = [self.client["python"], "-m", "enginebench.mongod.companion"]
        if self.deployment is not None and spec.get("engine") == "wiredTiger" and spec.get("table_type") == "lsm":
            companion += ["--table-type", "lsm"]   # the launch asked for LSM tables: check the server made them
            if self.refusal_path is not None:
                companion += ["--refusal-file", str(self.refusal_path)]
        if self.splits:
            companion += ["--splits", json.dumps(self.splits)]
        out = {"uri": self.uri, "database": self.database, "executor": self.client["executor"],
               "companion": companion,
               "drop_database": self.deployment is None, "keep_data": keep_data,
               "write_concern": (system.get("mongod") or {}).get("write_concern", spec.get("write_concern"))}
        if self.client["executor"] == "legacy":
            out["legacy"] = [self.client["legacy_python"], "-m", "enginebench.mongod.legacy_executor"]
        if spec.get("on_stale_secondary", "stop") == "stop" and spec.get("members", 1) >= 2 and self.replsets:
            out["watch"] = {"replsets": self.replsets, "lag_sample_s": spec.get("lag_sample_s", 1.0)}
        return out

    @property
    def pids(self) -> list[int]:
        return self.deployment.pids if self.deployment is not None else []

    @property
    def replsets(self) -> dict[str, str]:
        """Replica set name -> URI of its members (for the runner's stale-secondary watch)."""
        if self.deployment is None:
            return {}
        return {name: f"mongodb://{','.join(members)}/?replicaSet={name}"
                for name, members in self.deployment.plan.replsets.items() if name != "cfg"}

    def counters(self) -> dict:
        return self.deployment.process_counters() if self.deployment is not None else {}

    def table_type_refusal(self) -> dict | None:
        """The server's refusal of the tables the system asked for (tabletype.py), as the companion
        wrote it down: {reason, server_code, server_said, version, collection}; None when none."""
        if self.refusal_path is None:
            return None
        from .tabletype import refusal_file
        return refusal_file(self.refusal_path)

    def stop(self) -> None:
        if self.deployment is not None:
            self.deployment.stop()


def start_mongod(system: dict, sys_dir: Path, data_dir: Path, preexec) -> ServerHandle:
    """Launch a prepared system's deployment inside its resource profile (preexec)."""
    from .launch import Deployment
    from .topology import plan_deployment

    launch = system["mongod_launch"]
    spec = launch["spec"]
    info: BinaryInfo = identify(launch["binary"]["path"])
    # The same settings prepare_system checked (and adjusted, with its notes, where allowed).
    settings = engine_settings(system["label"], {**spec, "_explicit": launch["explicit"]}, info, [])
    log_dir = sys_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    plan = plan_deployment(system["label"], spec, info, settings, data_dir, log_dir, mongos=launch["mongos"])
    deployment = Deployment(plan, preexec)
    deployment.record_path = sys_dir / "mongod.json"
    try:
        deployment.start()
    finally:
        deployment.write_record(deployment.record_path)
    return ServerHandle(with_write_concern(plan.uri, spec.get("write_concern", 1)), launch["client"],
                        "enginebench", deployment, spec, launch.get("shard_splits"),
                        refusal_path=sys_dir / "table_type_refused.json")


def open_server(system: dict, target: dict, sys_dir: Path, data_dir: Path, preexec) -> ServerHandle | None:
    """The server a system's runner talks to: None for embedded engines (the runner is the
    server), a launched deployment for mongod, the user's deployment for uri."""
    if target["kind"] == "mongod":
        return start_mongod(system, sys_dir, data_dir, preexec)
    if target["kind"] == "uri":
        uri = os.environ[target_uri_env()]
        w = (system.get("mongod") or {}).get("write_concern", 1)
        return ServerHandle(with_write_concern(uri, w), uri_client(uri, system["label"]), uri_database(system["label"]))
    return None


def with_write_concern(uri: str, w) -> str:
    """The URI with the system's write concern (w=...), which both pymongo generations read from
    it; a URI that already names a different w is an error, not silently overridden."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
    parts = urlsplit(uri)
    query = parse_qsl(parts.query, keep_blank_values=True)
    named = [v for k, v in query if k.lower() == "w"]
    if named and named[-1] != str(w):
        raise OptionError(f"the URI sets w={named[-1]} but the system's mongod.write_concern is {w!r}; allowed: make "
                          "them agree (mongod.write_concern defaults to 1)")
    if not named:
        query.append(("w", str(w)))
    path = parts.path or "/"
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode(query, safe=","), parts.fragment))


def target_uri_env() -> str:
    from ..targets import URI_ENV
    return URI_ENV


def uri_database(label: str) -> str:
    return "enginebench_" + re.sub(r"[^A-Za-z0-9_]", "_", label)


def uri_client(uri: str, label: str) -> dict:
    """How to reach an existing deployment, chosen by the wire version its handshake announces
    (the same rules as for a launched mongod: legacy.client_for)."""
    import sys

    from pymongo.uri_parser import parse_uri

    from . import wire
    from .legacy import client_for
    host, port = parse_uri(uri)["nodelist"][0]
    try:
        hello = wire.command(host, port, {"isMaster": 1}, timeout_s=5)
    except Exception:  # TLS or auth before the handshake: today's clients, and their error if any
        return {"python": sys.executable, "client": "current", "executor": "driver", "wire_version": None}
    try:
        return client_for(int(hello.get("maxWireVersion", 0)), f"TARGET=uri: system {label}")
    except Exception as why:
        raise OptionError(str(why)) from None


__all__ = ["prepare_systems", "start_mongod", "ServerHandle", "implied_spec", "resolve_spec", "SystemSkipped",
           "uri_database", "uri_client", "open_server"]
