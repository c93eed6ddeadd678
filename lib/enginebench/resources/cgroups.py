"""Per-run cgroups (v1 or v2, detected) that hold one system's server process.

Groups are created under the cgroup this process already lives in, named `enginebench-<run>-<sys>`,
and removed when the system finishes. A memory limit caps the server and the page cache it
faults in (the kernel charges both to the group), which is what "N GB left for the server and the
OS page cache" meant in the posts. IO caps go on the whole disk that holds the data directory.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PREFIX = "enginebench-"


class CgroupError(RuntimeError):
    pass


def version() -> int | None:
    """2 for the unified hierarchy, 1 for v1 with a memory controller, None without cgroups."""
    if (ROOT / "cgroup.controllers").exists():
        return 2
    if (ROOT / "memory").is_dir():
        return 1
    return None


def membership() -> str:
    """This process's /proc/self/cgroup (one line per hierarchy)."""
    return Path("/proc/self/cgroup").read_text()


def own_path(controller: str | None) -> Path:
    """The cgroup directory this process lives in, for a v1 controller or for v2 (None)."""
    for line in membership().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller is None and controllers == "":
            return ROOT / path.lstrip("/")
        if controller is not None and controller in controllers.split(","):
            return ROOT / controller / path.lstrip("/")
    raise CgroupError(f"this process is in no {controller or 'v2'} cgroup (/proc/self/cgroup)")


def whole_disk(major: int, minor: int) -> tuple[int, int]:
    """IO caps apply to a disk's request queue, so a partition maps to its disk."""
    sys_dev = Path(f"/sys/dev/block/{major}:{minor}")
    if (sys_dev / "partition").exists():
        disk = sys_dev.resolve().parent
        major, minor = (int(x) for x in (disk / "dev").read_text().split(":"))
    return major, minor


@dataclass
class IOCaps:
    read_iops: int | None = None
    write_iops: int | None = None
    read_bps: int | None = None
    write_bps: int | None = None


@dataclass
class Cgroup:
    """One system's group; `paths` are the directories created (one per v1 controller)."""
    name: str
    v: int
    paths: dict[str, Path] = field(default_factory=dict)

    # -- creation -------------------------------------------------------------------------
    @classmethod
    def create(cls, name: str, memory: bool, io: bool) -> "Cgroup":
        v = version()
        if v is None:
            raise CgroupError("no cgroup hierarchy is mounted at /sys/fs/cgroup")
        group = cls(name, v)
        _hold(name)
        try:
            if v == 1:
                for controller, wanted in (("memory", memory), ("blkio", io)):
                    if wanted:
                        path = own_path(controller) / name
                        path.mkdir()
                        group.paths[controller] = path
            else:
                parent = _prepare_v2_parent(({"memory"} if memory else set()) | ({"io"} if io else set()))
                path = parent / name
                path.mkdir()
                group.paths["unified"] = path
        except OSError as exc:
            group.remove()
            raise CgroupError(f"cannot create cgroup {name}: {exc}") from exc
        return group

    def _file(self, controller_v1: str, name: str) -> Path:
        return (self.paths["unified"] if self.v == 2 else self.paths[controller_v1]) / name

    # -- limits ---------------------------------------------------------------------------
    def limit_memory(self, limit_bytes: int) -> None:
        if self.v == 1:
            self._file("memory", "memory.limit_in_bytes").write_text(str(limit_bytes))
            swap = self._file("memory", "memory.memsw.limit_in_bytes")
            if swap.exists():  # without this the group could spill to swap instead of its limit
                swap.write_text(str(limit_bytes))
        else:
            self._file("memory", "memory.max").write_text(str(limit_bytes))
            swap = self._file("memory", "memory.swap.max")
            if swap.exists():
                swap.write_text("0")

    def limit_io(self, major: int, minor: int, caps: IOCaps) -> None:
        major, minor = whole_disk(major, minor)
        if self.v == 1:
            for attr, name in (("read_iops", "read_iops_device"), ("write_iops", "write_iops_device"),
                               ("read_bps", "read_bps_device"), ("write_bps", "write_bps_device")):
                value = getattr(caps, attr)
                if value:
                    self._file("blkio", f"blkio.throttle.{name}").write_text(f"{major}:{minor} {value}")
        else:
            parts = [f"{key}={value}" for key, value in (("riops", caps.read_iops), ("wiops", caps.write_iops),
                                                         ("rbps", caps.read_bps), ("wbps", caps.write_bps)) if value]
            self._file("io", "io.max").write_text(f"{major}:{minor} " + " ".join(parts))

    # -- membership and accounting --------------------------------------------------------
    def procs_files(self) -> list[Path]:
        return [p / "cgroup.procs" for p in self.paths.values()]

    def add_self(self) -> None:
        """Move the calling process in (used in the runner's preexec, before it allocates)."""
        for procs in self.procs_files():
            procs.write_text(str(os.getpid()))

    def memory_report(self) -> dict:
        """What was enforced and what happened: limit, peak usage, limit hits, OOM kills."""
        if self.v == 1 and "memory" in self.paths:
            def read(name):
                f = self._file("memory", name)
                return int(f.read_text()) if f.exists() else None
            oom = self._file("memory", "memory.oom_control")
            oom_kills = None
            if oom.exists():
                fields = dict(line.split() for line in oom.read_text().splitlines())
                oom_kills = int(fields["oom_kill"]) if "oom_kill" in fields else None
            return {"limit_bytes": read("memory.limit_in_bytes"), "peak_bytes": read("memory.max_usage_in_bytes"),
                    "failcnt": read("memory.failcnt"), "oom_kills": oom_kills}
        if self.v == 2:
            base = self.paths["unified"]
            events = dict(line.split() for line in (base / "memory.events").read_text().splitlines())
            peak = base / "memory.peak"
            limit = (base / "memory.max").read_text().strip()
            return {"limit_bytes": None if limit == "max" else int(limit),
                    "peak_bytes": int(peak.read_text()) if peak.exists() else None,
                    "failcnt": int(events.get("max", 0)), "oom_kills": int(events.get("oom_kill", 0))}
        return {}

    def io_report(self) -> dict:
        """Device IOs the group issued (v1 blkio.throttle.io_serviced / v2 io.stat), per device."""
        if self.v == 1 and "blkio" in self.paths:
            out = {}
            for line in self._file("blkio", "blkio.throttle.io_serviced").read_text().splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in ("Read", "Write"):
                    out.setdefault(parts[0], {})[parts[1].lower() + "s"] = int(parts[2])
            return out
        if self.v == 2 and (self.paths["unified"] / "io.stat").exists():
            out = {}
            for line in (self.paths["unified"] / "io.stat").read_text().splitlines():
                device, *pairs = line.split()
                stats = dict(p.split("=") for p in pairs)
                out[device] = {"reads": int(stats.get("rios", 0)), "writes": int(stats.get("wios", 0))}
            return out
        return {}

    # -- removal --------------------------------------------------------------------------
    def remove(self, wait_s: float = 10.0) -> None:
        """rmdir every directory; waits for exiting processes to leave first."""
        deadline = time.time() + wait_s
        for path in list(self.paths.values()):
            while path.exists():
                try:
                    path.rmdir()
                except OSError:
                    if time.time() > deadline:
                        raise CgroupError(f"cgroup {path} still has processes: "
                                          f"{(path / 'cgroup.procs').read_text().split()}")
                    time.sleep(0.05)
        self.paths.clear()
        _release(self.name)


# Which groups a live driver still holds, machine-wide (another checkout's runs included): a
# group is empty between its runner's exit and its driver's last reading of its counters, and
# must not be taken for a dead run's then. One file per group, holding its driver's pid.
def _holders() -> Path:
    import tempfile
    return Path(tempfile.gettempdir()) / "enginebench-cgroups"


def _hold(name: str) -> None:
    _holders().mkdir(exist_ok=True)
    (_holders() / name).write_text(str(os.getpid()))


def _release(name: str) -> None:
    (_holders() / name).unlink(missing_ok=True)


def held_by_live_driver(name: str) -> bool:
    try:
        pid = int((_holders() / name).read_text())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _prepare_v2_parent(controllers: set[str]) -> Path:
    """In v2 a group with processes cannot also pass controllers down ("no internal processes"),
    so our own process moves into a leaf child first; then the controllers are enabled below."""
    parent = own_path(None)
    enabled = set((parent / "cgroup.subtree_control").read_text().split())
    missing = controllers - enabled
    if missing:
        procs = (parent / "cgroup.procs").read_text().split()
        if procs:
            leaf = parent / f"{PREFIX}home"
            leaf.mkdir(exist_ok=True)
            for pid in procs:
                try:
                    (leaf / "cgroup.procs").write_text(pid)
                except OSError:
                    pass  # kernel threads and exiting processes cannot move; fine
        (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in sorted(missing)))
    return parent


def _bases() -> list[Path]:
    """Where this process creates its groups (one folder per v1 controller, or the v2 one)."""
    v = version()
    bases = []
    if v == 1:
        for controller in ("memory", "blkio"):
            try:
                bases.append(own_path(controller))
            except CgroupError:
                pass
    elif v == 2:
        bases.append(own_path(None))
    return [base for base in bases if base.is_dir()]


def remove_stale(min_age_s: float = 120.0) -> list[str]:
    """Remove enginebench groups left by a run that was killed outright: empty, older than
    min_age_s (a concurrent run's group is empty for the moment before its runner joins), and
    held by no live driver (one is empty again after its runner exits, until it is read)."""
    removed = []
    for base in _bases():
        for group in base.glob(f"{PREFIX}*"):
            if group.name == f"{PREFIX}home" or held_by_live_driver(group.name):
                continue
            try:
                old = time.time() - group.stat().st_mtime > min_age_s
                if old and not (group / "cgroup.procs").read_text().split():
                    group.rmdir()
                    removed.append(str(group))
            except OSError:
                pass
    return removed


def remove_run(run_id: str, wait_s: float = 10.0) -> list[str]:
    """Remove the groups of a run known to be dead (its driver is gone), whatever their age.
    Their processes can only be that run's (its runner or its mongod): they are killed first,
    since nothing is left to stop them."""
    import signal
    removed = []
    for base in _bases():
        for group in base.glob(f"{PREFIX}{run_id}-*"):
            if held_by_live_driver(group.name):
                continue  # a live run's, whatever the name says: never kill what a driver still measures
            deadline = time.time() + wait_s
            while group.exists():
                try:
                    for pid in (group / "cgroup.procs").read_text().split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    group.rmdir()
                    _release(group.name)
                    removed.append(str(group))
                except OSError:
                    if time.time() > deadline:
                        break  # still busy: remove_stale takes it once it is empty
                    time.sleep(0.05)
    return removed
