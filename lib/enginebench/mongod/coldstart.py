"""Cold start between load and measured phases: nothing of the database stays in memory.

The engine is closed first (its own cache goes with it, and closing writes back dirty pages);
then the data files are evicted from the OS page cache, either file by file with
posix_fadvise(DONTNEED), which touches only this system's files, or with drop_caches (root only,
the whole machine). What was done is reported and ends up in the manifest.
"""
from __future__ import annotations

import os
import time
from pathlib import Path


def evict(data_dir: str, method: str) -> dict:
    started = time.time()
    files = [p for p in Path(data_dir).rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    os.sync()  # dirty pages cannot be dropped
    if method == "drop_caches":
        try:
            Path("/proc/sys/vm/drop_caches").write_text("1")
            return {"method": "drop_caches", "files": len(files), "bytes": total,
                    "seconds": time.time() - started}
        except OSError as exc:
            note = f"drop_caches not permitted ({exc}); used fadvise"
    else:
        note = None
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    out = {"method": "fadvise", "files": len(files), "bytes": total, "seconds": time.time() - started}
    if note:
        out["note"] = note
    return out
