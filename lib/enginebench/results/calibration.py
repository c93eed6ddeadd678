"""How fast this host's CPU was at the start and at the end of a run.

A shared virtual machine's speed drifts: on the 2-core VM this collection was built on, this
probe moved by a third within an hour with nothing else running, and LinkBench's load took 1.5
times as long in the evening as at noon. Without a figure for the host's speed at the time, such
a run reads as a regression of the engine or of the harness. The probe is a fixed piece of the
harness's own single-threaded work (encoding and decoding BSON documents of LinkBench's shape and hashing their keys), so its
rate moves with what the runner's client side and the embedded engines' Python calls can do.
It takes about a second and runs while nothing else of the run is running.
"""
from __future__ import annotations

import gc
import hashlib
import time

import bson

ROUNDS = 5
DOCS_PER_ROUND = 40_000


def _round() -> float:
    """Seconds for one fixed round of work."""
    doc = {"id1": 0, "link_type": 123456789, "id2": 0, "visibility": 1,
           "data": b"x" * 8, "time": 1_700_000_000_000, "version": 0}
    started = time.perf_counter()
    digest = hashlib.blake2b(digest_size=8)
    for i in range(DOCS_PER_ROUND):
        doc["id1"] = i
        doc["id2"] = i * 31
        raw = bson.encode(doc)
        back = bson.decode(raw)
        digest.update(raw[: back["visibility"] + 8])
    return time.perf_counter() - started


def calibrate() -> dict:
    """Documents per second through the probe, best of a few rounds (the best is the least
    disturbed by anything else on the host), with the spread of the rounds."""
    # Without the cyclic collector: its passes scale with the objects the calling process holds
    # (the driver holds far more than a fresh interpreter), which would measure the process.
    enabled = gc.isenabled()
    gc.disable()
    try:
        seconds = sorted(_round() for _ in range(ROUNDS))
    finally:
        if enabled:
            gc.enable()
    return {"probe": "bson encode+decode+hash, one thread", "docs_per_s": round(DOCS_PER_ROUND / seconds[0]),
            "slowest_docs_per_s": round(DOCS_PER_ROUND / seconds[-1]), "at": time.time()}


def drift(start: dict | None, end: dict | None) -> float | None:
    """The end's speed over the start's (0.8 = the host got 20% slower during the run)."""
    if not start or not end or not start.get("docs_per_s"):
        return None
    return end["docs_per_s"] / start["docs_per_s"]
