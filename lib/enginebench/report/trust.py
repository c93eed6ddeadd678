"""How far a run's verdicts can be trusted: the conditions its banner warns about, applied to the
claims table so that a verdict never contradicts the page it is on.

- A smoke run (seconds-long phases on a tiny database) checks the pipeline: its claims read
  `smoke: pipeline check, no verdict`.
- A host whose speed probe (results/calibration.py) moved beyond SPEED_STEADY between the start
  and the end of the run: claims on time (rates, latencies, CPU per operation) read `host
  drifted`; claims on bytes and space do not depend on the host's speed and keep their verdict.
- A run on TARGET=uri measured the one server at the URI in place of the post's engines
  (uri_target.py): every claim is `not evaluated`, saying so.
- A sharded system whose load left a collection off a shard measured fewer shards than it names
  (mongod/sharding.py): a claim comparing it is `not evaluated`, "not judged: <system>'s
  <collection> sat on one shard after the load".
- A query phase that never reached steady state gives `not steady`; that one is decided where
  the intervals are chosen (report/steady.py, used by the LinkBench resolver).
A claim that was not evaluated keeps its own reason: it had no verdict to withhold.
"""
from __future__ import annotations

import polars as pl

from ..results.calibration import SPEED_STEADY, drift, own_drift, pair_drift, steady
from .claims import HOST_DRIFTED, NOT_EVALUATED, SMOKE, WITHHELD, size_column
from .rundata import RunData

SMOKE_REASON = ("smoke scale: a tiny database and phases of seconds check that the pipeline runs end to end; "
                "the ratio is shown for that check and is no evidence for or against the claim")
# Metrics counting bytes or space rather than time: a host running faster or slower leaves them be.
VOLUME_METRICS = ("size", "wkb_per_op", "rss", "r_per_op")


def host_drift_reason(run: RunData, systems: str = "") -> str | None:
    """Why the run's timings are not comparable across it, or None when the host held its speed.
    For a claim on the systems `systems` names ("a,b": two compared; "a": a bound on one) of a
    run with a probe before each system, the drift that matters is the host's speed while one
    ran against while the other did, or for one system from just before it to just after; the
    start and end of the whole run otherwise."""
    speed = (run.manifest.get("host") or {}).get("speed") or {}
    change = claim_drift(run, systems)
    if change is not None:
        if steady(change):
            return None
        labels = systems.split(",")
        if len(labels) == 1:
            return (f"the host's speed probe read {change:.2f}x just after {labels[0]} ran what it read just before "
                    f"(outside {SPEED_STEADY[0]:g}-{SPEED_STEADY[1]:g}x), so its own phases ran on a changing machine")
        return (f"the host's speed probe read {change:.2f}x while {labels[0]} ran what it read while {labels[1]} ran "
                f"(outside {SPEED_STEADY[0]:g}-{SPEED_STEADY[1]:g}x), so the two were measured on different machines")
    change = drift(speed.get("start"), speed.get("end"))
    if steady(change):
        return None
    return (f"the host's speed probe read {change:.2f}x at the end what it read at the start (outside "
            f"{SPEED_STEADY[0]:g}-{SPEED_STEADY[1]:g}x), so systems measured later ran on a different machine")


def claim_drift(run: RunData, systems: str) -> float | None:
    """The host's speed while the claim's first system ran over while its second did; for a
    claim on one system, just after it over just before it. None without the probes."""
    labels = [label for label in (systems or "").split(",") if label]
    if len(labels) not in (1, 2):
        return None
    speed = (run.manifest.get("host") or {}).get("speed") or {}
    order = (run.manifest.get("order") or {}).get("systems") or []
    return own_drift(speed, order, labels[0]) if len(labels) == 1 else pair_drift(speed, order, *labels)


def depends_on_time(metric: str) -> bool:
    return not any(word in metric for word in VOLUME_METRICS)


def _withheld(row: dict, verdict: str, why: str) -> dict:
    earlier = f"; also {row['reason']}" if row["reason"] else ""
    return {**row, "verdict": verdict, "reason": why + earlier}


def one_server_reason(run: RunData) -> str | None:
    """TARGET=uri: the run measured the one server at the URI in place of the post's engines, so
    no claim about those engines is judged from it; None on any other target."""
    if (run.manifest.get("target") or {}).get("kind") != "uri":
        return None
    names = {f"{(info.get('engine_config') or {}).get('server_process') or 'a server'} (version "
             f"{info.get('version') or 'unknown'})" for info in (run.manifest.get("systems") or {}).values()}
    return (f"not comparable: this run measured one server, {', '.join(sorted(names)) or 'the one at the URI'}, in "
            "place of the post's engines, so it neither compares them nor stands for one of them")


def withhold(run: RunData, table: pl.DataFrame) -> pl.DataFrame:
    """The claims table with the verdicts this run cannot carry replaced, each with its reason."""
    smoke = run.manifest.get("scale") == "smoke"
    one_server = one_server_reason(run)
    from ..mongod.sharding import claim_roles, not_judged, run_unspread
    unspread = run_unspread(run)
    roles = claim_roles(run) if unspread else {}
    rows = []
    for row in table.iter_rows(named=True):
        unsharded = not_judged(run, roles.get(row["id"]), unspread) if unspread else None
        if one_server:
            row = {**row, "verdict": NOT_EVALUATED, "measured_ratio": None, "reason": one_server}
        elif row["verdict"] != NOT_EVALUATED and unsharded:
            row = {**row, "verdict": NOT_EVALUATED, "reason": unsharded}
        elif row["verdict"] != NOT_EVALUATED and smoke:
            row = _withheld(row, SMOKE, SMOKE_REASON)
        elif (row["verdict"] != NOT_EVALUATED and depends_on_time(row["metric"])
              and (drifted := host_drift_reason(run, row.get("systems") or ""))):
            row = _withheld(row, HOST_DRIFTED, drifted)
        rows.append(row)
    return pl.DataFrame(rows, schema=table.schema)


def with_size(table: pl.DataFrame) -> pl.DataFrame:
    """The size agreement as its own column, after the verdict (claims.size_column)."""
    sizes = [size_column(r["verdict"], r["published_ratio"], r["measured_ratio"], r.get("expect"))
             for r in table.iter_rows(named=True)]
    columns = list(table.columns)
    at = columns.index("verdict") + 1 if "verdict" in columns else len(columns)
    return table.with_columns(pl.Series("size", sizes, dtype=pl.Utf8)).select(
        columns[:at] + ["size"] + columns[at:])


def first_withheld(verdicts: list[str]) -> str | None:
    """The strongest reason among several runs' verdicts to give none (smoke, then drift, then
    steadiness), or None when every run had a verdict to give."""
    return next((v for v in WITHHELD if v in verdicts), None)
