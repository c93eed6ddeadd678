"""A device latency probe: random 4 KiB O_DIRECT reads of a file, timed one by one.

It answers "what latency does a storage profile give one read?" without an engine in the way:
run inside the profile's cgroup (the caps apply to the process that submits the read), the
percentiles show the emulated device, and compared with the same probe without caps they show
what the emulation adds. `python -m enginebench.resources.probe FILE SECONDS THREADS` prints the
latencies as JSON (run by `measure_in_group`, which puts it in the group first).
"""
from __future__ import annotations

import json
import mmap
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

BLOCK = 4096
PERCENTILES = {"p50_ms": 50.0, "p99_ms": 99.0, "p999_ms": 99.9}


def latency_stats(latencies_s: list[float]) -> dict:
    """p50/p99/p99.9 and mean in ms; p99.9 needs 1000 samples to mean anything, so fewer give None."""
    if not latencies_s:
        raise ValueError("no latencies to summarise: the probe completed no read")
    ms = np.asarray(latencies_s) * 1000.0
    stats = {"reads": int(ms.size), "mean_ms": float(ms.mean()), "max_ms": float(ms.max())}
    for key, q in PERCENTILES.items():
        stats[key] = float(np.percentile(ms, q)) if ms.size >= round(100 / (100 - q)) else None
    return stats


def make_probe_file(path: Path, size_mb: int) -> Path:
    """A file of random bytes, written and synced before the probe so its reads find it on disk."""
    chunk = os.urandom(1 << 20)
    with open(path, "wb") as fh:
        for _ in range(size_mb):
            fh.write(chunk)
        fh.flush()
        os.fsync(fh.fileno())
    # Drop it from the page cache: O_DIRECT bypasses it anyway, but a filesystem without
    # O_DIRECT support would otherwise answer from memory (open fails then, which is reported).
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return path


def random_reads(path: str, seconds: float, threads: int, seed: int = 1) -> list[float]:
    """Each thread reads random aligned 4 KiB blocks for `seconds`; returns every read's latency."""
    blocks = os.path.getsize(path) // BLOCK
    if blocks < 1:
        raise ValueError(f"{path}: smaller than one {BLOCK}-byte block")
    latencies: list[float] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker(index: int) -> None:
        rng = random.Random(seed + index)
        buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT requires
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        mine = []
        try:
            while time.monotonic() < deadline:
                offset = rng.randrange(blocks) * BLOCK
                started = time.perf_counter()
                os.preadv(fd, [buf], offset)
                mine.append(time.perf_counter() - started)
        finally:
            os.close(fd)
        with lock:
            latencies.extend(mine)

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return latencies


def measure_in_group(path: Path, seconds: float, threads: int, preexec=None) -> dict:
    """Runs the probe in a child process (that `preexec` moves into a cgroup) and summarises it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-m", "enginebench.resources.probe", str(path), str(seconds),
                           str(threads)], capture_output=True, text=True, preexec_fn=preexec, env=env,
                          timeout=seconds + 60)
    if done.returncode != 0:
        raise RuntimeError(f"device probe on {path} failed: {done.stderr.strip()[-500:]}")
    stats = latency_stats(json.loads(done.stdout))
    stats.update(threads=threads, seconds=seconds, reads_per_s=stats["reads"] / seconds)
    return stats


def measure_profile(folder: Path, profile: str, scale: float = 1.0, seconds: float = 10.0,
                    threads: int = 4, size_mb: int = 64) -> dict:
    """The probe on `folder`'s disk, uncapped (profile "none") or in a group with the profile's
    caps and the slice the runs use (SystemResources, so it is set and put back the same way)."""
    from ..metrics.sampler import device_of
    from .profiles import ResourcePlan, SystemResources, cgroups_writable

    path = make_probe_file(folder / f"enginebench-probe-{os.getpid()}.bin", size_mb)
    try:
        if profile == "none":
            return {"profile": profile, "scale": scale, **measure_in_group(path, seconds, threads)}
        ok, why = cgroups_writable()
        if not ok:
            return {"profile": profile, "scale": scale, "note": f"not measured: cgroups are not writable ({why})"}
        plan = ResourcePlan(None, profile, None, "cgroup", scale)
        with SystemResources(plan, f"enginebench-probe-{profile}-{os.getpid()}", device_of(path)) as group:
            stats = measure_in_group(path, seconds, threads, group.preexec)
            report = group.report()
        return {"profile": profile, "scale": scale, "read_iops_cap": report["io_caps"]["read_iops"],
                "throttle_slice_ms": report.get("throttle_slice_ms"), **stats}
    finally:
        path.unlink(missing_ok=True)


if __name__ == "__main__":
    file_arg, seconds_arg, threads_arg = sys.argv[1:4]
    print(json.dumps(random_reads(file_arg, float(seconds_arg), int(threads_arg))))
