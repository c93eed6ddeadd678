"""Room for a system's data: the size it is expected to reach, a refusal before it starts when
the device cannot hold that, and the cause named when a disk fills during a run.

The expected size is the documents the load leaves (the workload's own count per collection,
as the progress bar uses) times the mean BSON size of that collection's documents, measured by the
runner on the first documents each of the workload's loaders generates (lib/native/src/sample.rs;
a collection no sample reached, e.g. sysbench's 2nd to 16th, is sized at the mean of all sampled
documents), plus, for
a system with an oplog, the oplog's copy of them up to its size, plus the journal the engine
keeps whatever the data: WiredTiger's current log file and the one it preallocates (100 MB each,
its default file_max, which mongod leaves), RocksDB's write-ahead log of what its write buffers
hold (MongoRocks: 4 x 64 MB unless the params scale them). It leaves out index entries, page fill
and compression, so it is a floor: the README gives what the engines' files measured against it.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..engines import ENGINES
from ..metrics.sampler import dir_size

MB = 1 << 20
# How the engines and the OS word a full disk (WiredTiger and RocksDB pass on strerror's text).
NO_SPACE = re.compile(r"no space left on device|ENOSPC|os error 28", re.IGNORECASE)
# A device with less than this free after a failure is full, whatever the error said (a runner
# that went silent on a full disk said nothing).
FULL_BELOW = MB


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def data_estimate(described: dict) -> dict:
    """What the load leaves, in documents and BSON bytes (the same for every system of a run),
    from the runner's description of the workload (native.describe)."""
    expected = described["expected"]
    sizes = described["bytes_per_document"]
    overall = sum(sizes.values()) / len(sizes) if sizes else 0.0
    return {"documents": sum(expected.values()),
            "bytes": int(sum(n * sizes.get(collection, overall) for collection, n in expected.items())),
            "bytes_per_document": {c: round(b, 1) for c, b in sizes.items()}}


def expected_size(data: dict, system: dict) -> dict:
    """What this system's data is expected to reach after the load (at least), and how that was
    reckoned."""
    options = system.get("options") or {}
    oplog_mb = options.get("oplog_size_mb", 1024)
    oplog = min(data["bytes"], oplog_mb * MB) if options.get("oplog") else 0
    how = [f"{data['documents']:,} documents x their mean BSON size"]
    if oplog:
        how.append(f"the oplog's copy up to {oplog_mb} MB")
    journal, journal_how = ENGINES[system["engine"]].log_bytes(options, data["bytes"] + oplog)
    if journal:
        how.append(journal_how)
    return {**data, "bytes": data["bytes"] + oplog + journal,
            "how": ", plus ".join(how) + "; index entries, page fill and compression not counted"}


def free_bytes(path: Path) -> int:
    """Free bytes on the filesystem holding `path` (or its nearest existing parent), for this
    process: root may write into the blocks a filesystem reserves for it, others may not."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    stat = os.statvfs(path)
    return (stat.f_bfree if os.geteuid() == 0 else stat.f_bavail) * stat.f_frsize


def refusal(data_dir: Path, estimate: dict) -> str | None:
    """Why the system cannot start here, or None when its expected size fits."""
    free = free_bytes(data_dir)
    if free >= estimate["bytes"]:
        return None
    return (f"not enough space for this system's data: {data_dir} has {human(free)} free, and its data is "
            f"expected to reach {human(estimate['bytes'])} ({estimate['how']}); point ENGINEBENCH_DATA at a "
            "larger filesystem or run a smaller scale")


# How much of the end of a runner's log is read for the engine's own words on a full disk.
LOG_TAIL = 256 << 10


def _log_tail(log: Path | None) -> str:
    if log is None or not Path(log).is_file():
        return ""
    with open(log, "rb") as fh:
        fh.seek(max(0, Path(log).stat().st_size - LOG_TAIL))
        return fh.read().decode("utf-8", "replace")


def no_space_cause(error: str | None, data_dir: Path, log: Path | None = None) -> str | None:
    """'no space left on device: ...' when a failure came from a full disk: the runner's error
    says so, or the engine said so in the runner's log before it failed on something else
    (WiredTiger's checkpoint after a failed write ends in EINVAL, and it frees its preallocated
    log files on its way down), or the device holding the data has (almost) nothing left. Read
    before the data is deleted: the size is what this system's files reached."""
    free = free_bytes(data_dir)
    said = NO_SPACE.search(error or "") or NO_SPACE.search(_log_tail(log))
    if not said and free >= FULL_BELOW:
        return None
    size = dir_size(data_dir)[0] if Path(data_dir).exists() else 0
    return f"no space left on device: {data_dir} ({human(free)} free, this system's data reached {human(size)})"
