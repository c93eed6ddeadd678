"""OS metrics of the system under test, sampled from outside it.

Cumulative counters from /proc (through psutil) for the server processes, /proc/diskstats for the
device that holds the data directory, and the data directory's size (`du` and apparent). The
sampler runs in the parent process, never in the measured one, and each sample is one row.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

SECTOR = 512


@dataclass(frozen=True)
class Device:
    name: str          # e.g. vda, nvme0n1p2
    major: int
    minor: int


def device_of(path: str | Path) -> Device | None:
    """The block device holding `path`, or None (tmpfs, overlay without a backing device)."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    sys_link = Path(f"/sys/dev/block/{major}:{minor}")
    if not sys_link.exists():
        return None
    return Device(sys_link.resolve().name, major, minor)


def read_diskstats(device: Device) -> dict | None:
    with open("/proc/diskstats") as fh:
        for line in fh:
            fields = line.split()
            if int(fields[0]) == device.major and int(fields[1]) == device.minor:
                return {"dev_reads": int(fields[3]), "dev_read_bytes": int(fields[5]) * SECTOR,
                        "dev_writes": int(fields[7]), "dev_write_bytes": int(fields[9]) * SECTOR}
    return None


def dir_size(path: str | Path) -> tuple[int, int]:
    """(allocated bytes as `du` counts them, apparent bytes as `du --apparent-size`)."""
    used = apparent = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except FileNotFoundError:
                continue  # deleted while walking (compaction, checkpoint)
            used += st.st_blocks * 512
            apparent += st.st_size
    return used, apparent


_CUMULATIVE = ("cpu_user_s", "cpu_sys_s", "ctx_switches", "proc_read_bytes", "proc_write_bytes", "ctx_switch_threads")


def thread_ctx_switches(pid: int, per_thread: dict[int, int]) -> int:
    """A process's context switches, voluntary and involuntary, summed over its threads.

    /proc/<pid>/status (what psutil's num_ctx_switches reads) counts the main thread alone; an
    engine's work runs on its worker and background threads, so each thread's own status file is
    read. A thread keeps contributing its last count after it exits (`per_thread`, by thread id):
    only what a thread did between its last sample and its exit, or in a life shorter than one
    sampling interval, is missed."""
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            text = status.read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited while listed
        counts = [int(value) for name, _, value in (line.partition(":") for line in text.splitlines())
                  if name in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")]
        if counts:
            per_thread[int(status.parent.name)] = sum(counts)
    return sum(per_thread.values())


def process_counters(pids: list[int], last_seen: dict[int, dict] | None = None,
                     threads_seen: dict[int, dict[int, int]] | None = None) -> dict:
    """Summed counters of the server processes (CPU seconds, context switches of every thread,
    RSS, IO). `ctx_switch_threads`: how many threads' switches are in `ctx_switches` (a run
    without the column counted main threads only, and its switches per operation are void).

    A process that has exited keeps contributing its last cumulative counters (from
    `last_seen`), so a counter never drops when a server stops between two samples; a thread,
    likewise, from `threads_seen`.
    """
    out = dict(cpu_user_s=0.0, cpu_sys_s=0.0, ctx_switches=0, rss_bytes=0, proc_read_bytes=0,
               proc_write_bytes=0, threads=0, ctx_switch_threads=0)
    threads_seen = {} if threads_seen is None else threads_seen
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                cpu = proc.cpu_times()
                io = proc.io_counters()
                per_thread = threads_seen.setdefault(pid, {})
                one = {"cpu_user_s": cpu.user, "cpu_sys_s": cpu.system,
                       "ctx_switches": thread_ctx_switches(pid, per_thread), "rss_bytes": proc.memory_info().rss,
                       "proc_read_bytes": io.read_bytes, "proc_write_bytes": io.write_bytes,
                       "threads": proc.num_threads(), "ctx_switch_threads": len(per_thread)}
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            previous = (last_seen or {}).get(pid)
            if previous is None:
                continue
            one = {k: (previous[k] if k in _CUMULATIVE else 0) for k in previous}
        if last_seen is not None:
            last_seen[pid] = one
        for key, value in one.items():
            out[key] += value
    return out


class Sampler:
    """Samples every `interval_s` seconds in a thread; `samples` is the list of rows."""

    def __init__(self, pids: list[int], data_dir: str | Path, interval_s: float, *, size_every: int = 1,
                 extra=None):
        self.pids = pids
        self.data_dir = Path(data_dir)
        self.interval_s = interval_s
        self.device = device_of(self.data_dir)
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._wake = threading.Event()  # sample_now(): a sample before the next scheduled one
        self._thread: threading.Thread | None = None
        self._size_every = size_every
        self.cpu_s = 0.0  # the sampler's own CPU, reported by `make bench`
        self._last_seen: dict[int, dict] = {}
        self._threads_seen: dict[int, dict[int, int]] = {}
        self._extra = extra  # more cumulative counters per sample, e.g. the cgroup's device IOs

    def sample(self) -> dict:
        row = {"t": time.time()}
        row.update(process_counters(self.pids, self._last_seen, self._threads_seen))
        if self.device is not None:
            row.update(read_diskstats(self.device) or {})
        if self._extra is not None:
            try:
                row.update(self._extra())
            except OSError:
                pass  # the group is being removed as the system finishes
        if len(self.samples) % self._size_every == 0 and self.data_dir.exists():
            row["size_du_bytes"], row["size_apparent_bytes"] = dir_size(self.data_dir)
        return row

    def _loop(self) -> None:
        next_t = time.time()
        woken = False
        while not self._stop.is_set():
            cpu0 = time.thread_time()
            self.samples.append(self.sample())
            self.cpu_s += time.thread_time() - cpu0
            if not woken:  # an extra sample leaves the schedule as it was
                next_t += self.interval_s
            woken = self._wake.wait(max(0.0, next_t - time.time()))
            self._wake.clear()

    def sample_now(self) -> None:
        """One more sample as soon as the sampling thread can take it: at a phase's end, so its
        last interval has a reading from its end even when the phase was shorter than a period."""
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops sampling, then takes one last sample with the files' size: called once the
        runner has exited, it reads the size after the engine closed (PerconaFT's log, a gigabyte
        during a load, is trimmed by its closing checkpoint), which the periodic samples reach
        only when one happens to fall after the exit."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            row = self.sample()
            if "size_du_bytes" not in row and self.data_dir.exists():
                row["size_du_bytes"], row["size_apparent_bytes"] = dir_size(self.data_dir)
            self.samples.append(row)
