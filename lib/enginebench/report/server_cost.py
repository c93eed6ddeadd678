"""How far a server's own layer would move each ratio of an embedded run.

An embedded run measures the engines alone. mongod added to every operation a cost of its own
(parsing, planning, locks, the network), the same whichever engine served it, so the posts'
ratios of rates and of CPU per operation sat nearer 1 than the engines' own. With a server's CPU
per operation `s` (the newest `make server-cost` of this host: the stand-in server's, an upper
bound on mongod's layer; server_cost.py), a claim's measured ratio R of systems a / b, and b's
own figure over the claim's phase:

- CPU per operation: b's own c_b, a's taken as R x c_b, so R becomes (R c_b + s) / (c_b + s);
- a rate: each operation takes 1/T of the host's time (T: the phase's rate, b's T_b, a's
  R x T_b) and the layer adds s/K more on K cores, so R becomes
  (1/T_b + s/K) / (1/(R T_b) + s/K): exact where the phase is bound by the CPU, and more than
  the layer would cost where the phase waits on its device or its locks.

Both lie between R and 1, and equal R where s is 0. Bytes and reads per operation, sizes, memory
and latency are left as measured: a server's layer reads and writes none of the data, and its
share of a latency percentile is not additive.
"""
from __future__ import annotations

import polars as pl

from .. import server_cost
from .rundata import RunData, phase_summary

# The claims' metrics this applies to (their first word), and how.
RATES = ("load.ops", "run.ops", "insert_rate", "ops_per_s")
CPU = ("load.cpu_per_op", "run.cpu_per_op")


def _kind(metric: str) -> str | None:
    word = metric.split()[0]
    return "rate" if word in RATES else "cpu" if word in CPU else None


def _phase(run: RunData, label: str, metric: str) -> str | None:
    """The phase a claim reads of a system: its load for a load metric (and iibench's insert
    rate, measured during the load); else its one measured phase, `run`."""
    phases = set(run.intervals.filter(pl.col("system") == label)["phase"].unique()) if not run.intervals.is_empty() else set()
    wanted = "load" if metric.startswith("load.") or metric.startswith("insert_rate") else "run"
    return wanted if wanted in phases else None


def _embedded(run: RunData) -> bool:
    """A server target's CPU is the server's already: nothing is left out."""
    return (run.manifest.get("target") or {}).get("kind", "embedded") == "embedded"


def diluted(kind: str, ratio: float, own_b: float, server: float, cores: int = 1) -> float:
    """The ratio with the layer added (module docstring): `own_b` is b's CPU per operation (us)
    for a CPU claim, its rate (per second) for a rate claim; `server` the layer's us per operation."""
    if kind == "cpu":
        return (ratio * own_b + server) / (own_b + server)
    layer_s = server / 1e6 / cores
    return (1 / own_b + layer_s) / (1 / (ratio * own_b) + layer_s)


def table(run: RunData, claims: pl.DataFrame, measured: dict | None) -> pl.DataFrame:
    """Per claim it applies to: the measured ratio, b's own figure, the server's per operation,
    and the ratio with that layer added."""
    if measured is None or claims.is_empty() or not _embedded(run):
        return pl.DataFrame()
    experiment, family = run.manifest["experiment"], run.manifest["params"]["workload"]["name"]
    cores = int((run.manifest.get("host") or {}).get("logical_cpus") or 1)
    rows = []
    for claim in claims.to_dicts():
        kind, ratio = _kind(claim.get("metric") or ""), claim.get("measured_ratio")
        labels = (claim.get("systems") or "").split(",")
        if kind is None or not ratio or len(labels) != 2:
            continue
        phase = _phase(run, labels[1], claim["metric"])
        summary = phase_summary(run.intervals, labels[1], phase) if phase else None
        own = (summary or {}).get("cpu_us_per_op" if kind == "cpu" else "ops_per_s")
        server = server_cost.figure(measured, experiment, family, phase, "op" if kind == "cpu" else "counted") \
            if phase else None
        if not own or server is None:
            continue
        rows.append({"id": claim["id"], "metric": claim["metric"], "published_ratio": claim.get("published_ratio"),
                     "measured_ratio": round(ratio, 2),
                     "against": labels[1], "its own": (f"{own:,.1f} us/op" if kind == "cpu" else f"{own:,.0f}/s"),
                     "server layer, us/op": round(server[0], 1), "measured on": server[1],
                     "ratio with the layer": round(diluted(kind, ratio, own, server[0], cores), 2)})
    return pl.DataFrame(rows, strict=False)


def sentence(run: RunData, measured: dict | None, found: pl.DataFrame) -> str:
    if not _embedded(run):
        return ""
    if measured is None:
        return ("**What a server's layer would add** is not estimated: no `make server-cost` has been run on this "
                "machine (it measures the stand-in server's CPU per operation through the same client).")
    if found.is_empty():
        return (f"**What a server's layer would add** is not estimated for these claims: none is a rate or CPU per "
                f"operation of a phase `make server-cost` measured for the {run.manifest['params']['workload']['name']} "
                f"family ({measured['path']}).")
    return ("**What a server's layer would add.** These engines ran embedded, without mongod's parsing, planning, "
            "locks and network, which cost both engines alike and pulled the posts' ratios toward 1. The stand-in "
            f"server's CPU per operation, measured through the same client on this host ({measured['host']}, "
            f"{measured['measured_at'][:10]}, smoke-scale systems with seconds of work per phase; {measured['server']}; "
            f"{measured['path']}), is an upper bound on that layer. Added to each operation, it would move each ratio "
            "toward 1 at most this far: a server's ratio lies between the measured one and this. Rates are "
            "converted as if the phase were bound by the CPU, which overstates the move where it waits on its "
            "device; bytes, sizes, memory and latencies are left as measured.")
