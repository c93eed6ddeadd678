"""How fast this host's CPU was at the start and at the end of a run.

A shared virtual machine's speed drifts: on the 2-core VM this collection was built on, this
probe moved by a third within an hour with nothing else running, and LinkBench's load took 1.5
times as long in the evening as at noon. Without a figure for the host's speed at the time, such
a run reads as a regression of the engine or of the harness. The probe is a fixed piece of the
harness's own single-threaded work (encoding and decoding BSON documents of LinkBench's shape and
hashing their keys), so its rate moves with what one core of this host can do. It takes about a
second and runs while nothing else of the run is running.
"""
from __future__ import annotations

import gc
import hashlib
import time

import bson

ROUNDS = 5
DOCS_PER_ROUND = 40_000
# Probe ratios (end / start) within which the host counts as steady over a run. The VM this was
# built on switches between two speeds about 1.6x apart, sometimes within one probe call.
SPEED_STEADY = (0.8, 1.25)
# The end's probe runs right after the last system's teardown: its data deleted, its cgroups'
# page cache freed by the kernel's own workers, which can hold a core for seconds (one end probe
# read 0.58x of the start; a minute later the host read 0.98x). A reading outside SPEED_STEADY
# is taken again after a pause, up to END_RETRIES times; every reading is kept.
END_RETRIES = 2
END_PAUSE_S = 5.0
# A smoke run is a pipeline check whose claims carry no verdict: its probes need only run and be
# recorded, so each takes one round and the end is not read again. (In `make test`, where two
# runs share the two cores, a drifted end read again after its pauses cost 12 s a run, and the
# probes were a quarter of the suite's time.)
QUICK = {"rounds": 1, "end_retries": 0}


def probe_settings(scale: str) -> dict:
    """The probe's rounds and end retries at a scale."""
    return QUICK if scale == "smoke" else {"rounds": ROUNDS, "end_retries": END_RETRIES}


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


def calibrate(rounds: int = ROUNDS) -> dict:
    """Documents per second through the probe, best of a few rounds (the best is the least
    disturbed by anything else on the host), with the spread of the rounds."""
    # Without the cyclic collector: its passes scale with the objects the calling process holds
    # (the driver holds far more than a fresh interpreter), which would measure the process.
    enabled = gc.isenabled()
    gc.disable()
    try:
        seconds = sorted(_round() for _ in range(rounds))
    finally:
        if enabled:
            gc.enable()
    return {"probe": "bson encode+decode+hash, one thread", "docs_per_s": round(DOCS_PER_ROUND / seconds[0]),
            "slowest_docs_per_s": round(DOCS_PER_ROUND / seconds[-1]), "rounds": rounds, "at": time.time()}


def calibrate_end(start: dict | None, pause_s: float = END_PAUSE_S, rounds: int = ROUNDS,
                  retries: int = END_RETRIES) -> dict:
    """The probe at a run's end: the best of its readings, as within one probe (the best is the
    least disturbed), with all of them in `readings`."""
    readings = [calibrate(rounds)]
    while len(readings) <= retries and not steady(drift(start, _best(readings))):
        time.sleep(pause_s)
        readings.append(calibrate(rounds))
    return {**_best(readings), "readings": [r["docs_per_s"] for r in readings]}


def _best(readings: list[dict]) -> dict:
    return max(readings, key=lambda r: r["docs_per_s"])


def steady(change: float | None) -> bool:
    """Whether an end/start probe ratio counts as the same host speed (None: not measured)."""
    return change is None or SPEED_STEADY[0] <= change <= SPEED_STEADY[1]


def drift(start: dict | None, end: dict | None) -> float | None:
    """The end's speed over the start's (0.8 = the host got 20% slower during the run)."""
    if not start or not end or not start.get("docs_per_s"):
        return None
    return end["docs_per_s"] / start["docs_per_s"]


def _probes_around(speed: dict, order: list[str], label: str) -> tuple[float, float] | None:
    """The probe just before a system and the one just after it (the next system's, or the
    run's end), in docs/s; None without both."""
    before = (speed.get("before") or {})
    if label not in before or label not in order:
        return None
    at = order.index(label)
    after = before.get(order[at + 1]) if at + 1 < len(order) else speed.get("end")
    if not after or not before[label].get("docs_per_s") or not after.get("docs_per_s"):
        return None
    return before[label]["docs_per_s"], after["docs_per_s"]


def system_speed(speed: dict, order: list[str], label: str) -> float | None:
    """The host's speed while one system ran: the geometric mean of the probes around it. None
    without them. A system read side by side from another run (explain.side_by_side) carries its
    own under `during`, worked out in that run."""
    if label in (speed.get("during") or {}):
        return speed["during"][label].get("docs_per_s")
    around = _probes_around(speed, order, label)
    return (around[0] * around[1]) ** 0.5 if around else None


def own_drift(speed: dict, order: list[str], label: str) -> float | None:
    """How much faster the host ran just after one system than just before it; None without the
    probes around it (`during`: as in system_speed)."""
    if label in (speed.get("during") or {}):
        return speed["during"][label].get("drift")
    around = _probes_around(speed, order, label)
    return around[1] / around[0] if around else None


def pair_drift(speed: dict, order: list[str], a: str, b: str) -> float | None:
    """How much faster the host ran while `a` ran than while `b` did (1.0: the same); None when
    the run has no probes around each system (runs made before they existed)."""
    speed_a, speed_b = system_speed(speed, order, a), system_speed(speed, order, b)
    return speed_a / speed_b if speed_a and speed_b else None
