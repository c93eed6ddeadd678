"""Starting a planned deployment, and stopping it so that nothing is left running.

Each process is started from an argv list, in its own session (a Ctrl-C at the terminal reaches
the driver, which then shuts the servers down in order, instead of reaching every mongod at
once), with the parent-death signal set (if the driver is killed outright, the servers get
SIGTERM, which mongod treats as a clean shutdown) and placed in the system's resource profile
before it execs (the same preexec hook the embedded runner uses). Shutdown: the `shutdown`
command, then SIGTERM, then SIGKILL after a grace period; signals are held meanwhile, because an
abandoned shutdown is how servers leak.

A cold start's restart (restart()) brings every process back on its own port: a replica set's
configuration on disk names its members by address, mongos's --configdb names the config
servers, and the runner's client holds the deployment's URI, so a process moved to another port
would not be found (a member missing from its own configuration never becomes primary). A port
still held after the shutdown is waited for, up to PORT_FREE_TIMEOUT_S, and then the restart stops
with the port and the process holding it named. A shutdown that had to end in SIGKILL is said so
in the cold start's record: the data files were not closed cleanly, and the restart's recovery
(journal replay, WiredTiger recovery from the last checkpoint) is then paid by the measured phase.
Only at the first start, before any replica set is initiated, does a process whose port was taken
between planning and binding move to a fresh one.
"""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import psutil

from ..children import die_with_parent
from . import wire
from .options import Setting
from .topology import HOST, DeploymentPlan, ProcessPlan, free_ports

READY_TIMEOUT_S = 180     # a large dbpath's recovery or journal preallocation on old versions
PRIMARY_TIMEOUT_S = 120
PORT_RETRIES = 3
# A server that could not bind its port: mongod exits with EXIT_NET_ERROR (48; src/mongo/util/
# exit_code.h) after logging "listen(): bind() failed errno:98 Address already in use for socket:
# ..." (2.x-4.2, src/mongo/util/net/listen.cpp), from 4.4 the structured line of
# `LOGV2_ERROR(20568, "Error setting up listener", "error"_attr = res)` whose error is the bind's
# SocketException (9001) with asio's text, "Address already in use" (mongodb/mongo
# src/mongo/db/mongod_main.cpp at 0045dc81dfadc33d60130dbb575a7a0a74305924, component CONTROL,
# context initandlisten; transport_layer_asio.cpp errorCodeToStatus).
EXIT_NET_ERROR = 48
ADDRESS_IN_USE = "Address already in use"
SHUTDOWN_GRACE_S = 60
TERM_GRACE_S = 30
# How long a restart waits for a process's own port to be free again (a socket the old process
# left, another program that took it meanwhile) before it stops, naming who holds it.
PORT_FREE_TIMEOUT_S = 60
UNCLEAN_NOTE = ("the shutdown ended in SIGKILL, so the data files were not closed cleanly: the restart recovers "
                "the dbpath (journal replay, WiredTiger recovery from its last checkpoint), and the measured "
                "phase after this cold start pays for that recovery")


class LaunchError(RuntimeError):
    """A server did not start or a deployment could not be initiated; everything started was stopped."""


@contextmanager
def held_signals():
    """SIGINT/SIGTERM wait until the block is done (only the main thread can hold them)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending = []
    previous = {s: signal.signal(s, lambda signum, _f: pending.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if pending:  # re-deliver what arrived, now that the servers are down
            signal.raise_signal(pending[0])


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def port_free(port: int) -> bool:
    """Whether a server could bind 127.0.0.1:port now. mongod sets SO_REUSEADDR on its listener
    (transport_layer_asio.cpp: `acceptor.set_option(GenericAcceptor::reuse_address(true))`), so a
    closed connection's TIME_WAIT does not hold the port and is not counted here either."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind((HOST, port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def port_holder(port: int) -> str:
    """Who holds a local TCP port, as far as this user may see: "pid 123 (name: command line)"."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError) as exc:
        return f"a process this user cannot see ({type(exc).__name__} listing the sockets)"
    holders = sorted({c.pid for c in connections if c.laddr and c.laddr.port == port and c.pid})
    if not holders:
        return "a process this user cannot see (no socket on that port with a pid this user may read)"
    out = []
    for pid in holders:
        try:
            proc = psutil.Process(pid)
            out.append(f"pid {pid} ({proc.name()}: {' '.join(proc.cmdline())[:120]})")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            out.append(f"pid {pid}")
    return ", ".join(out)


def wait_for_primary(name: str, members: list[str], timeout_s: float) -> str:
    """The address of the member that says it is primary (isMaster.ismaster), within timeout_s."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        for member in members:
            host, port = member.rsplit(":", 1)
            try:
                if wire.command(host, int(port), {"isMaster": 1}, check=False, timeout_s=5).get("ismaster"):
                    return member
            except (OSError, ConnectionError):
                continue   # a member restarting its networking during the election
        time.sleep(0.25)
    raise LaunchError(f"replica set {name} elected no primary within {timeout_s} s")


class Deployment:
    def __init__(self, plan: DeploymentPlan, preexec=None):
        self.plan = plan
        self.preexec = preexec
        self.procs: dict[str, subprocess.Popen] = {}
        self._stderr: dict = {}   # process name -> its current stderr file (closed when it is replaced)
        self.stopped = False
        self.events: list[dict] = []   # what start/stop did, for the system's results folder
        self.record_path: Path | None = None   # rewritten after start and after stop
        self._threads_seen: dict[int, dict[int, int]] = {}  # pid -> thread id -> its last switches

    # -- start ---------------------------------------------------------------------------------
    def _spawn(self, p: ProcessPlan) -> None:
        if p.dbpath is not None:
            p.dbpath.mkdir(parents=True, exist_ok=True)
        p.logpath.parent.mkdir(parents=True, exist_ok=True)
        previous = self._stderr.pop(p.name, None)
        if previous is not None:
            previous.close()
        stderr = self._stderr[p.name] = open(p.logpath.with_suffix(".stderr"), "a")

        def preexec():
            die_with_parent()
            if self.preexec is not None:
                self.preexec()
        self.procs[p.name] = subprocess.Popen(p.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                              stderr=stderr, preexec_fn=preexec, start_new_session=True)
        self.events.append({"event": "started", "process": p.name, "pid": self.procs[p.name].pid, "t": time.time()})

    def _address_in_use(self, p: ProcessPlan) -> bool:
        proc = self.procs[p.name]
        return proc.returncode == EXIT_NET_ERROR or any(
            ADDRESS_IN_USE in _log_tail(path, 40) for path in (p.logpath, p.logpath.with_suffix(".stderr")))

    def _respawn_on_a_fresh_port(self, p: ProcessPlan) -> None:
        """Ports were free when planned, not when bound (mongos binds last): take a new one,
        everywhere the plan names the old address, and start again."""
        old = p.address
        new_port = free_ports(1)[0]
        p.settings[:] = [Setting(s.cli, new_port, s.yaml, s.ini, s.yaml_value) if s.cli == "port" else s
                         for s in p.settings]
        p.port = new_port
        for members in self.plan.replsets.values():
            members[:] = [p.address if m == old else m for m in members]
        for q in self.plan.processes:   # mongos's --configdb names the config servers
            q.settings[:] = [Setting(s.cli, s.value.replace(old, p.address), s.yaml, s.ini, s.yaml_value)
                             if s.cli == "configdb" else s for s in q.settings]
        self.events.append({"event": "port_in_use", "process": p.name, "old": old, "new": p.address,
                            "t": time.time()})
        self._spawn(p)

    def _why_keep(self, p: ProcessPlan) -> str:
        if p.replset:
            return f"the replica set {p.replset}'s configuration on disk names {p.address}"
        if p.role == "config":
            return f"mongos's --configdb names {p.address}"
        return f"the runner's client connects to {p.address}"

    def _await_port(self, p: ProcessPlan, exited: int | None = None) -> None:
        """Waits until p's own port is free, up to PORT_FREE_TIMEOUT_S; LaunchError naming the port
        and its holder after that. A wait is recorded (event port_in_use, kept: true), and so is a
        process that could not bind the port (`exited`: its exit code) even when the port was free
        again by the time it was looked at."""
        free = port_free(p.port)
        if free and exited is None:
            return
        started = time.time()
        holder = port_holder(p.port) if not free else "a process that let it go before it could be named"
        event = {"event": "port_in_use", "process": p.name, "port": p.port, "held_by": holder, "kept": True}
        if exited is not None:
            event["exited"] = exited
        while not port_free(p.port):
            if time.time() - started >= PORT_FREE_TIMEOUT_S:
                self.events.append({**event, "freed": False, "waited_s": round(time.time() - started, 3),
                                    "t": time.time()})
                raise LaunchError(f"{p.name}'s port {p.port} is held by {port_holder(p.port)} "
                                  f"{PORT_FREE_TIMEOUT_S} s after the shutdown; the cold start's restart keeps "
                                  f"every process on its own port ({self._why_keep(p)}), so it stopped here")
            time.sleep(0.2)
        self.events.append({**event, "freed": True, "waited_s": round(time.time() - started, 3), "t": time.time()})

    def _wait_ready(self, p: ProcessPlan, retries: int = PORT_RETRIES, keep_port: bool = False) -> None:
        """Waits until p answers a ping. A process that could not bind its port is started again:
        on a fresh port at the first start, on its own port (once free) at a restart (keep_port)."""
        deadline = time.time() + READY_TIMEOUT_S
        proc = self.procs[p.name]
        while True:
            if proc.poll() is not None:
                if retries > 0 and self._address_in_use(p):
                    if keep_port:
                        self._await_port(p, exited=proc.returncode)
                        self._spawn(p)
                    else:
                        self._respawn_on_a_fresh_port(p)
                    return self._wait_ready(p, retries - 1, keep_port)
                raise LaunchError(f"{p.name} ({' '.join(p.argv)}) exited with code {proc.returncode}; its log "
                                  f"{p.logpath} ends:\n{_log_tail(p.logpath)}")
            try:
                wire.command(HOST, p.port, {"ping": 1}, timeout_s=2)
                return
            except (OSError, wire.CommandError):
                if time.time() > deadline:
                    raise LaunchError(f"{p.name} did not accept connections on {p.address} within "
                                      f"{READY_TIMEOUT_S} s; its log {p.logpath} ends:\n{_log_tail(p.logpath)}")
                time.sleep(0.2)

    def _initiate(self, name: str, members: list[str]) -> str:
        """Initiate through the first member and wait for a primary: under protocol version 1
        (3.2+) any member may win the election, so every member is asked. Returns its address."""
        host, port = members[0].split(":")
        config = {"_id": name, "members": [{"_id": i, "host": m} for i, m in enumerate(members)]}
        if name == "cfg":
            config["configsvr"] = True
        wire.command(host, int(port), {"replSetInitiate": config}, timeout_s=60)
        return wait_for_primary(name, members, PRIMARY_TIMEOUT_S)

    def _spawn_and_wait(self, p: ProcessPlan) -> None:
        self._spawn(p)
        self._wait_ready(p)

    def _start_mongods(self, keep_ports: bool = False) -> None:
        """Every mongod started at once, then each waited for (replica-set members find each
        other while the rest start). keep_ports: a restart, where each process's own port is
        waited for instead of moving it (the module's docstring)."""
        mongods = [p for p in self.plan.processes if p.role != "mongos"]
        for p in mongods:
            if keep_ports:
                self._await_port(p)
            self._spawn(p)
        for p in mongods:
            self._wait_ready(p, keep_port=keep_ports)

    def start(self) -> "Deployment":
        try:
            self._start_mongods()
            for name, members in self.plan.replsets.items():
                self._initiate(name, members)
            mongos = [p for p in self.plan.processes if p.role == "mongos"]
            for p in mongos:
                self._spawn_and_wait(p)
                for shard in self.plan.shards:
                    wire.command(HOST, p.port, {"addShard": f"{shard}/{','.join(self.plan.replsets[shard])}"},
                                 timeout_s=60)
        except BaseException:
            self.stop()
            raise
        return self

    def restart(self, data_dir: Path, method: str) -> dict:
        """A cold start: every process shut down (the engines' caches go with them and their dirty
        pages are written back), the data files evicted from the OS page cache, and the same
        processes started again on the same data and the same ports: no new replSetInitiate or
        addShard, only a wait for each replica set's primary. Returns what was done, with the
        processes whose shutdown ended in SIGKILL (`unclean_shutdown`, and a note: the measured
        phase pays for their recovery)."""
        from .coldstart import evict
        started = time.time()
        first = len(self.events)
        with held_signals():
            for p in reversed(self.plan.processes):
                self._shutdown(p)
        stopped = {e["process"]: e["how"] for e in self.events[first:] if e.get("event") == "stopped"}
        unclean = [name for name, how in stopped.items() if how == "SIGKILL"]
        for name in unclean:
            self.events.append({"event": "unclean_shutdown", "process": name, "how": "SIGKILL", "note": UNCLEAN_NOTE,
                                "t": time.time()})
        self._close_stderr()
        self.procs.clear()
        evicted = evict(str(data_dir), method)
        try:
            self._start_mongods(keep_ports=True)
            for name, members in self.plan.replsets.items():
                wait_for_primary(name, members, PRIMARY_TIMEOUT_S)
            for p in self.plan.processes:
                if p.role == "mongos":
                    self._await_port(p)
                    self._spawn(p)
                    self._wait_ready(p, keep_port=True)
        except BaseException:
            self.stop()
            raise
        done = {**evicted, "restarted": [p.name for p in self.plan.processes], "stopped": stopped,
                "seconds": time.time() - started}
        if unclean:
            done.update(unclean_shutdown=unclean, note=UNCLEAN_NOTE)
        waited = [e for e in self.events[first:] if e.get("event") == "port_in_use"]
        if waited:
            done["ports_waited"] = [{k: e[k] for k in ("process", "port", "held_by", "waited_s")} for e in waited]
        self.events.append({"event": "restarted_for_cold_start", **done, "t": time.time()})
        return done

    def _close_stderr(self) -> None:
        for handle in self._stderr.values():
            handle.close()
        self._stderr.clear()

    # -- what the sampler needs ----------------------------------------------------------------
    @property
    def pids(self) -> list[int]:
        return [proc.pid for proc in self.procs.values()]

    def process_counters(self) -> dict:
        """Per-process CPU, context switches, RSS and IO, as extra sampler columns (the sampler
        sums them over all pids itself)."""
        from ..metrics.sampler import thread_ctx_switches
        out = {}
        for name, proc in self.procs.items():
            try:
                ps = psutil.Process(proc.pid)
                with ps.oneshot():
                    cpu, io = ps.cpu_times(), ps.io_counters()
                    # every thread's (mongod serves each connection on a thread of its own)
                    switches = thread_ctx_switches(proc.pid, self._threads_seen.setdefault(proc.pid, {}))
                    out.update({f"{name}.cpu_user_s": cpu.user, f"{name}.cpu_sys_s": cpu.system,
                                f"{name}.ctx_switches": switches,
                                f"{name}.rss_bytes": ps.memory_info().rss,
                                f"{name}.read_bytes": io.read_bytes, f"{name}.write_bytes": io.write_bytes})
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                continue
        return out

    # -- stop ------------------------------------------------------------------------------------
    def _shutdown(self, p: ProcessPlan) -> None:
        proc = self.procs.get(p.name)
        if proc is None or proc.poll() is not None:
            return
        try:
            # force: a primary otherwise refuses while a secondary lags (which is what a stale
            # secondary test leaves behind); the measurement is over either way.
            wire.command(HOST, p.port, {"shutdown": 1, "force": True}, timeout_s=SHUTDOWN_GRACE_S)
        except (OSError, ConnectionError, wire.CommandError):
            pass  # the server closes the connection as it goes down; exit status tells the rest
        how = "shutdown"
        try:
            proc.wait(SHUTDOWN_GRACE_S)
        except subprocess.TimeoutExpired:
            how = "SIGTERM"
            proc.terminate()
            try:
                proc.wait(TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                how = "SIGKILL"
                proc.kill()
                proc.wait()
        self.events.append({"event": "stopped", "process": p.name, "how": how, "returncode": proc.returncode,
                            "t": time.time()})

    def stop(self) -> None:
        """Stop every process (mongos, then shards, then config servers). Idempotent."""
        if self.stopped:
            return
        with held_signals():
            for p in reversed(self.plan.processes):
                self._shutdown(p)
            self._close_stderr()
            self.stopped = True
            if self.record_path is not None:
                self.write_record(self.record_path)

    def leftovers(self) -> list[int]:
        return [proc.pid for proc in self.procs.values() if proc.poll() is None]

    def write_record(self, path: Path) -> None:
        path.write_text(json.dumps({**self.plan.describe(), "events": self.events}, indent=2, default=str))
