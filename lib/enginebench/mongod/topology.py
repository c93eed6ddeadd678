"""Deployment plans: which processes a system needs, on which ports, with which argv. No launch.

standalone   one mongod (the posts' op0: no oplog)
replset      N members of one replica set (op1 is N=1: every write also goes to the oplog)
sharded      a config server replica set, S shards (each a replica set of N members) and one
             mongos, as the TokuMX post's cluster (config servers, shard replica set, mongos)
Every process listens on 127.0.0.1 only, on a port that was free when planned; dbpaths live
under the run's scratch folder and logs in the system's results folder.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

from .binary import BinaryInfo
from .options import Setting, to_argv, to_yaml_dict

HOST = "127.0.0.1"


@dataclass
class ProcessPlan:
    name: str                     # rs0-0, cfg-0, mongos
    role: str                     # mongod | config | mongos
    binary: str
    port: int
    settings: list[Setting]
    dbpath: Path | None
    logpath: Path
    replset: str | None = None

    @property
    def argv(self) -> list[str]:
        return [self.binary, *to_argv(self.settings)]

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"


@dataclass
class DeploymentPlan:
    label: str
    topology: str
    processes: list[ProcessPlan]
    # replica set name -> member addresses, in the order they are initiated
    replsets: dict[str, list[str]] = field(default_factory=dict)
    shards: list[str] = field(default_factory=list)      # replica set names added to the cluster
    legacy_config: bool = False                          # pre-3.2 mirrored config servers

    @property
    def entry(self) -> ProcessPlan:
        """The process clients connect to: mongos, or the first member."""
        return next((p for p in self.processes if p.role == "mongos"), self.processes[0])

    @property
    def uri(self) -> str:
        entry = self.entry
        if entry.role == "mongos" or self.topology == "standalone":
            return f"mongodb://{entry.address}/"
        name = entry.replset
        return f"mongodb://{','.join(self.replsets[name])}/?replicaSet={name}"

    def describe(self) -> dict:
        return {"topology": self.topology, "uri": self.uri, "replsets": self.replsets, "shards": self.shards,
                "processes": [{"name": p.name, "role": p.role, "port": p.port, "argv": p.argv,
                               "dbpath": str(p.dbpath) if p.dbpath else None, "log": str(p.logpath),
                               "config": to_yaml_dict(p.settings)} for p in self.processes]}


def free_ports(n: int) -> list[int]:
    """n distinct ports free on 127.0.0.1 now: all sockets stay bound until every port is chosen,
    so the kernel cannot hand out the same one twice."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _server(info: BinaryInfo, name: str, port: int, dbpath: Path | None, logpath: Path) -> list[Setting]:
    out = []
    if dbpath is not None:
        out.append(Setting("dbpath", str(dbpath), "storage.dbPath"))
    out += [Setting("logpath", str(logpath), "systemLog.path"),
            Setting("logappend", True, "systemLog.logAppend")]
    return out


def _net(port: int) -> list[Setting]:
    return [Setting("port", port, "net.port"), Setting("bind_ip", HOST, "net.bindIp")]


def _replication(info: BinaryInfo, replset: str, oplog_size_mb: int | None) -> list[Setting]:
    out = [Setting("replSet", replset, "replication.replSetName")]
    # TokuMX trims its oplog by age (expireOplogDays/Hours), not by size.
    if oplog_size_mb is not None and info.flavour != "TokuMX":
        out.append(Setting("oplogSize", oplog_size_mb, "replication.oplogSizeMB"))
    return out


CONFIG_CACHE_MB = 256


def config_server_engine(info: BinaryInfo) -> list[Setting]:
    """Config server replica sets run wiredTiger, whatever the shards run (MongoDB 3.2 manual,
    "Change Sharded Cluster to WiredTiger": CSRS config servers already use WiredTiger;
    SERVER-34671: an mmapv1 CSRS member shuts down on 4.0), with a small cache of their own
    instead of the default (half the RAM): 0.25 GB, or 1 GB where 3.0/3.2 take whole GB only."""
    if "wiredTiger" not in info.engines:
        raise ValueError(f"{info.flavour} {info.version} ({info.path}) has no wiredTiger, which config server "
                         "replica sets need")
    gb = CONFIG_CACHE_MB / 1024 if info.at_least(3, 4) else 1
    return [Setting("storageEngine", "wiredTiger", "storage.engine"),
            Setting("wiredTigerCacheSizeGB", gb, "storage.wiredTiger.engineConfig.cacheSizeGB")]


def process_count(spec: dict) -> int:
    topology = spec.get("topology") or "standalone"
    if topology == "standalone":
        return 1
    if topology == "replset":
        return spec.get("members", 1)
    return spec.get("config_members", 1) + spec.get("shards", 2) * spec.get("members", 1) + 1


def plan_deployment(label: str, spec: dict, info: BinaryInfo, engine: list[Setting], data_dir: Path,
                    log_dir: Path, *, mongos: str | None = None, ports: list[int] | None = None) -> DeploymentPlan:
    """The processes of one system. `engine` are its engine settings (options.engine_settings);
    `ports` are taken in order (chosen free when None)."""
    topology = spec.get("topology") or "standalone"
    ports = list(ports) if ports is not None else free_ports(process_count(spec))
    if len(ports) < process_count(spec):
        raise ValueError(f"system {label}: {process_count(spec)} ports needed, {len(ports)} given")
    take = iter(ports)

    def mongod(name: str, role: str, replset: str | None, extra: list[Setting], engine_settings=engine):
        port = next(take)
        dbpath, logpath = data_dir / name, log_dir / f"{name}.log"
        settings = _server(info, name, port, dbpath, logpath) + engine_settings + _net(port) + extra
        return ProcessPlan(name, role, info.path, port, settings, dbpath, logpath, replset)

    plan = DeploymentPlan(label, topology, [])
    if topology == "standalone":
        plan.processes.append(mongod("mongod", "mongod", None, []))
        return plan
    members = spec.get("members", 1)
    if topology == "replset":
        repl = _replication(info, "rs0", spec.get("oplog_size_mb"))
        for i in range(members):
            plan.processes.append(mongod(f"rs0-{i}", "mongod", "rs0", repl))
        plan.replsets["rs0"] = [p.address for p in plan.processes]
        return plan

    # sharded: config servers first (mongos needs them), then the shards, then mongos.
    if mongos is None:
        raise ValueError(f"system {label}: topology sharded needs a mongos binary")
    configs = _config_servers(plan, label, spec, info, mongod)
    for s in range(spec.get("shards", 2)):
        name = f"sh{s}"
        extra = _replication(info, name, spec.get("oplog_size_mb")) + [
            Setting("shardsvr", True, "sharding.clusterRole", yaml_value="shardsvr")]
        shard = [mongod(f"{name}-{i}", "mongod", name, extra) for i in range(members)]
        plan.processes += shard
        plan.replsets[name] = [p.address for p in shard]
        plan.shards.append(name)
    port = next(take)
    configdb = f"cfg/{','.join(configs)}" if not plan.legacy_config else ",".join(configs)
    settings = ([Setting("logpath", str(log_dir / "mongos.log"), "systemLog.path"),
                 Setting("logappend", True, "systemLog.logAppend"),
                 Setting("configdb", configdb, "sharding.configDB")] + _net(port))
    plan.processes.append(ProcessPlan("mongos", "mongos", mongos, port, settings, None, log_dir / "mongos.log"))
    return plan


def _config_servers(plan: DeploymentPlan, label: str, spec: dict, info: BinaryInfo, mongod) -> list[str]:
    """Adds a sharded system's config servers to `plan`: a replica set from 3.2 (CSRS, on
    WiredTiger with a small cache), mirrored servers (SCCC) before it and on TokuMX; their addresses."""
    csrs = info.at_least(3, 2) and info.flavour != "TokuMX"
    plan.legacy_config = not csrs
    if not csrs and spec.get("config_members", 1) not in (1, 3):
        # Mirrored (SCCC) config servers: mongos takes one or three of them in --configdb.
        raise ValueError(f"system {label}: mongod.config_members: {spec.get('config_members')} is not allowed for "
                         f"{info.flavour} {info.version}'s mirrored config servers; allowed values: 1, 3")
    config_engine = config_server_engine(info) if csrs else []
    for i in range(spec.get("config_members", 1)):
        extra = [Setting("configsvr", True, "sharding.clusterRole", yaml_value="configsvr")]
        if csrs:
            extra = _replication(info, "cfg", None) + extra
        plan.processes.append(mongod(f"cfg-{i}", "config", "cfg" if csrs else None, extra, config_engine))
    configs = [p.address for p in plan.processes if p.role == "config"]
    if csrs:
        plan.replsets["cfg"] = configs
    return configs
