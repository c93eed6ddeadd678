"""Resource profiles: what makes "cached", "uncached", "disk" and "SSD" mean the same on any box.

Memory: a cgroup memory limit on the server process (v1 or v2), else an mlock'ed memory hog that
leaves the requested amount free, as the LinkBench post did. Storage: read/write IOPS and
bandwidth caps through blkio (v1) or io.max (v2) on the disk that holds the data directory.
`enforce: required` refuses to start what cannot be enforced; `best_effort` runs and says so.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from ..metrics.sampler import Device
from .cgroups import Cgroup, CgroupError, IOCaps, remove_stale, version
from .slice import SLICE_UNDO, SliceSetting, disk_name, slice_ms

MB = 1 << 20

# The posts' devices. disk: six 10k-rpm SAS disks in hardware RAID 0, "~1200 IOPs" (seed 000),
# ~150 MB/s each sequentially. ssd: Intel DC S3700 datasheet: 75k random read / 36k random write
# 4 KiB IOPS, 500 MB/s read and 460 MB/s write sequential.
STORAGE_PROFILES: dict[str, IOCaps | None] = {
    "none": None,
    "disk": IOCaps(read_iops=1200, write_iops=1200, read_bps=900 * MB, write_bps=900 * MB),
    "ssd": IOCaps(read_iops=75_000, write_iops=36_000, read_bps=500 * MB, write_bps=460 * MB),
}


class ResourceError(RuntimeError):
    """A required limit cannot be enforced on this machine; nothing was started."""


def scaled_caps(profile: str, scale: float) -> IOCaps | None:
    caps = STORAGE_PROFILES[profile]
    if caps is None:
        return None
    return IOCaps(*(None if v is None else max(1, int(v * scale))
                    for v in (caps.read_iops, caps.write_iops, caps.read_bps, caps.write_bps)))


def cgroups_writable() -> tuple[bool, str]:
    """Can this process create (and remove) a group with the controllers we need?"""
    if version() is None:
        return False, "no cgroup hierarchy is mounted"
    try:
        probe = Cgroup.create(f"enginebench-probe-{os.getpid()}", memory=True, io=True)
        probe.remove()
        return True, f"cgroup v{version()}"
    except (CgroupError, OSError) as exc:
        return False, str(exc)


@dataclass
class ResourcePlan:
    """What a run will enforce, decided before anything starts."""
    memory_limit_mb: int | None
    storage_profile: str
    method_memory: str | None          # "cgroup" | "mlock-hog" | None
    method_io: str | None              # "cgroup" | None
    storage_scale: float = 1.0
    storage_during_load: bool = True
    memory_own_mb: int = 0             # of memory_limit_mb, the process's own (System.memory_own_mb)
    engine: str = ""
    not_enforced: list[str] = field(default_factory=list)

    def banner(self) -> list[str]:
        """What the run does not enforce and when its storage caps apply; the process's own memory
        is said over all systems at once (own_memory_lines)."""
        lines = [f"Not enforced: {item}." for item in self.not_enforced]
        if self.method_io and not self.storage_during_load:
            lines.append(f"The {self.storage_profile!r} storage caps apply from the end of each load "
                         "(resources.storage.during_load: false): loads ran at this machine's disk speed.")
        return lines

    def describe(self) -> dict:
        return asdict(self)


def own_memory_lines(system_plans: dict[str, ResourcePlan]) -> list[str]:
    """One line per engine whose systems' limits add their process's own memory: its figure, or,
    where it was measured per memory size, each figure with the systems it applies to."""
    by_engine: dict[str, dict[int, list[str]]] = {}
    for label, plan in system_plans.items():
        if plan.memory_own_mb and plan.memory_limit_mb is not None:
            by_engine.setdefault(plan.engine, {}).setdefault(plan.memory_own_mb, []).append(label)
    lines = []
    for engine, figures in by_engine.items():
        if len(figures) == 1:
            added = f"{next(iter(figures))} MB"
        else:
            added = ", ".join(f"{mb} MB ({', '.join(labels)})" for mb, labels in sorted(figures.items()))
        lines.append(f"The memory limits of {engine} systems add {added} to their memory for the engine's cache "
                     "and the data: the process's own memory, measured at this scale (memory_own_mb).")
    return lines


def plan_resources(params: dict, system: dict | None = None) -> ResourcePlan:
    """The plan for the run, or for one system (whose memory_limit_mb, if set, overrides the
    experiment's: that is how a memory matrix is written; its memory_own_mb is added to either)."""
    memory, storage = params["resources"]["memory"], params["resources"]["storage"]
    limit, profile = memory["limit_mb"], storage["profile"]
    own = (system or {}).get("memory_own_mb") or 0
    if system is not None and system.get("memory_limit_mb") is not None:
        limit = system["memory_limit_mb"]
    if own and limit is None:
        raise ResourceError(f"{params['params_file']}: system {system['label']}: memory_own_mb is set but no "
                            "memory limit applies to it (memory_limit_mb or resources.memory.limit_mb)")
    if own:
        limit += own
    ok, why = cgroups_writable() if (limit is not None or profile != "none") else (False, "")
    plan = ResourcePlan(limit, profile, None, None, storage.get("scale", 1.0), storage.get("during_load", True),
                        own, system["engine"] if system else "")
    if limit is not None:
        if ok:
            plan.method_memory = "cgroup"
        elif _can_mlock():
            plan.method_memory = "mlock-hog"
        else:
            plan.not_enforced.append(f"memory limit of {limit} MB (cgroups: {why}; mlock not permitted)")
    if profile != "none":
        if ok:
            plan.method_io = "cgroup"
        else:
            plan.not_enforced.append(f"storage profile {profile!r} (cgroups: {why})")
    if plan.not_enforced and memory["enforce"] == "required":
        raise ResourceError(f"{params['params_file']}: resources.memory.enforce is 'required' but this machine "
                            f"cannot enforce: {'; '.join(plan.not_enforced)}. Nothing was started. Run as root "
                            "on a machine with writable cgroups, or set enforce: best_effort.")
    return plan


def _can_mlock() -> bool:
    import resource
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return os.geteuid() == 0 or soft == resource.RLIM_INFINITY


class SystemResources:
    """The limits around one system's runner process, from creation to removal."""

    def __init__(self, plan: ResourcePlan, name: str, device: Device | None, undo_dir: Path | None = None):
        self.plan = plan
        self.name = name
        self.device = device
        self.cgroup: Cgroup | None = None
        self.hog: subprocess.Popen | None = None
        self.notes: list[str] = []
        # The throttle slice is per disk; its undo file lets the next run restore it if this one dies.
        self.slice = SliceSetting(disk_name(device.major, device.minor), undo_dir and undo_dir / SLICE_UNDO) \
            if device else None
        self.slice_in_force: tuple[float, str] | None = None

    def __enter__(self) -> "SystemResources":
        remove_stale()
        try:
            self._create()
        except BaseException:
            self.__exit__()  # a half-made setup (a group, a changed slice) is undone before raising
            raise
        return self

    def _create(self) -> None:
        want_memory = self.plan.method_memory == "cgroup"
        want_io = self.plan.method_io == "cgroup" and self.device is not None
        if self.plan.method_io == "cgroup" and self.device is None:
            self.notes.append("storage profile not enforced: the data directory is on no block device")
        if want_memory or want_io:
            self.cgroup = Cgroup.create(self.name, memory=want_memory, io=want_io)
            if want_memory:
                self.cgroup.limit_memory(self.plan.memory_limit_mb * MB)
            if want_io and self.plan.storage_during_load:
                self._apply_caps()
        if self.plan.method_memory == "mlock-hog":
            self._start_hog()

    def limit_storage(self) -> None:
        """Apply the storage profile's caps when the load ends (resources.storage.during_load:
        false): blkio/io limits can be written while the process runs."""
        if self._apply_caps():
            self.notes.append("storage caps applied when the load ended")

    def _apply_caps(self) -> bool:
        if self.cgroup is None or self.plan.method_io != "cgroup" or self.device is None:
            return False
        self.cgroup.limit_io(self.device.major, self.device.minor,
                             scaled_caps(self.plan.storage_profile, self.plan.storage_scale))
        # After the limit: the kernel keeps a disk's slice only once the disk has a limit.
        self.notes.append(self.slice.apply())
        self.slice_in_force = slice_ms(self.slice.disk)
        return True

    def _start_hog(self) -> None:
        free = psutil.virtual_memory().available
        size = free - self.plan.memory_limit_mb * MB
        if size <= 0:
            self.notes.append(f"memory hog not needed: only {free // MB} MB were available")
            return
        self.hog = subprocess.Popen([sys.executable, "-m", "enginebench.resources.hog", str(size)],
                                    stdout=subprocess.PIPE, text=True)
        line = self.hog.stdout.readline().strip()
        if not line.startswith("locked"):
            self.hog.kill()
            self.hog.wait()
            self.hog = None
            self.notes.append(f"memory hog failed ({line}); memory limit not enforced")
        else:
            self.notes.append(f"memory hog locked {size // MB} MB, leaving {self.plan.memory_limit_mb} MB")

    def preexec(self) -> None:
        """Runs in the runner process before exec: join the group before allocating anything."""
        if self.cgroup is not None:
            self.cgroup.add_self()

    def report(self) -> dict:
        caps = scaled_caps(self.plan.storage_profile, self.plan.storage_scale)
        out = {"memory_method": self.plan.method_memory, "memory_limit_mb": self.plan.memory_limit_mb,
               "storage_profile": self.plan.storage_profile, "storage_scale": self.plan.storage_scale,
               "io_method": self.plan.method_io if self.cgroup else None,
               "io_caps": asdict(caps) if caps else None, "notes": self.notes}
        if self.slice_in_force is not None:  # what sets the capped run's tail (report/emulation.py)
            out["throttle_slice_ms"], out["throttle_slice_source"] = self.slice_in_force
        if self.cgroup is not None:
            out["cgroup"] = {k: str(v) for k, v in self.cgroup.paths.items()}
            out["cgroup_version"] = self.cgroup.v
            try:
                out["memory"] = self.cgroup.memory_report()
                out["io"] = self.cgroup.io_report()
            except OSError as exc:  # what the system measured is kept; only these counters are lost
                out["counters_error"] = f"the group's counters could not be read: {exc}"
        return out

    def io_counters(self) -> dict:
        """The group's cumulative device IOs on the data disk (for the sampler)."""
        if self.cgroup is None or self.device is None or self.plan.method_io != "cgroup":
            return {}
        from .cgroups import whole_disk
        key = "{}:{}".format(*whole_disk(self.device.major, self.device.minor))
        stats = self.cgroup.io_report().get(key, {})
        return {"cg_reads": stats.get("reads", 0), "cg_writes": stats.get("writes", 0)}

    def __exit__(self, *exc) -> None:
        if self.hog is not None:
            self.hog.kill()
            self.hog.wait()
            self.hog = None
        try:
            if self.slice is not None:
                self.slice.restore()
        finally:
            if self.cgroup is not None:
                self.cgroup.remove()  # keeps the object: report() may still be read
