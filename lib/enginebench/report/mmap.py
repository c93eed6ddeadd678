"""What the mmap stand-in emulated of MMAPv1, for the banner: LMDB's readers never wait, so the
lock the posts' MMAPv1 took (per database in 2.2-2.6, per collection in 3.0) is emulated in the
native runner, and a reader of its figures must know which granularity ran (docs/running.md: "What runs
natively")."""
from __future__ import annotations

import html

LOCK_MEANING = {
    "database": "one reader-writer lock per database (MMAPv1 of MongoDB 2.2 to 2.6)",
    "collection": "one reader-writer lock per collection under a shared lock on its database (MMAPv1 of 3.0)",
    "none": "no lock: LMDB's own concurrency, one writer at a time and readers that never wait",
}


def mmap_lock_lines(run) -> list[str]:
    """One banner line per lock granularity the run's LMDB systems ran with, naming them. A system
    under TARGET=mongod ran a real server and is left out; a native run that did not record its
    lock says so rather than guessing."""
    by_lock: dict[str, list[str]] = {}
    for system in run.systems:
        config = system.get("engine_config") or {}
        if system.get("engine") != "lmdb" or system.get("status") == "not run" or "server_process" in config:
            continue
        by_lock.setdefault(config.get("emulated_lock", "not recorded"), []).append(system["label"])
    lines = []
    for lock, labels in by_lock.items():
        meaning = LOCK_MEANING.get(lock, "the runner did not record it (a run made before it did)")
        lines.append(f"<b>Emulated lock</b> on the mmap stand-in ({html.escape(', '.join(labels))}): "
                     f"{html.escape(lock)}, {html.escape(meaning)}. The lock is emulated around each "
                     "operation (writers alone, readers shared); LMDB takes no such lock itself.")
    return lines
