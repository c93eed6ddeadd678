"""Whether a claim's measured ratio is further from the claim's bound than the noise of its
measurement: a verdict whose effect the noise could make or unmake reads `within noise`, not
`holds` or `does not hold`.

The noise is measured, never assumed:

- over repeated runs (`REPEAT=n`), from the runs themselves: the ratio is within noise when its
  mean (in logs) lies within two standard errors of the bound, the standard error being the
  standard deviation of the n runs' log ratios over the square root of n;
- for a single run, from this host: the systems of a run are measured one after another, so a
  ratio of two of them carries whatever the host's speed did between them. The speed probe at the
  run's start and end (results/calibration.py) measures that; a ratio on time (rates, latencies,
  CPU per operation) closer to its bound than the probe's change over the run is within noise.
  Claims on bytes and space do not move with the host's speed: a single run gives them no floor.
  A query phase's own swing adds to it: a system steady but swinging (metrics/steady.py) gives
  its claims two standard errors of the ratio from its intervals (the row's `swing`), so a
  within-noise verdict there reads "the host moved x and the intervals swing y".

The bound is the number the expectation compares with ("greater than 1.3": 1.3; "between 0.85
and 1.15": the nearer of the two; "lowest": 1), and distances are taken in logs, so 1.1x and
1/1.1x are equally far from parity.
"""
from __future__ import annotations

import math
import re

from ..results.calibration import drift
from .claims import FAILS, HOLDS, WITHIN_NOISE
from .rundata import RunData
from .trust import claim_drift, depends_on_time


def bounds(expect: str) -> list[float]:
    """The numbers an expectation compares the ratio with (claims.check_expectation's forms)."""
    text = expect.strip().lower()
    if text == "lowest":
        return [1.0]
    return [float(n) for n in re.findall(r"\d+(?:\.\d+)?", text)] if re.match(r"(greater|less|between)", text) else []


def margin(ratio: float, expect: str) -> float | None:
    """How far the ratio lies from the expectation's nearest bound, in natural-log units."""
    limits = [b for b in bounds(expect) if b > 0]
    if not limits or ratio is None or ratio <= 0 or not math.isfinite(ratio):
        return None
    return min(abs(math.log(ratio) - math.log(b)) for b in limits)


def host_floor(run: RunData, systems: str = "") -> float | None:
    """This host's measured variation over the claim: |log| of its speed probe's change between
    the claim's two systems, or around its one (the probes around each, trust.claim_drift) where
    the run has them, else between the run's start and end; None when the probe did not run."""
    pair = claim_drift(run, systems)
    if pair is not None:
        return abs(math.log(pair))
    speed = (run.manifest.get("host") or {}).get("speed") or {}
    change = drift(speed.get("start"), speed.get("end"))
    return abs(math.log(change)) if change else None


def repeat_band(ratios: list[float]) -> float | None:
    """Two standard errors of the mean log ratio over the runs; None with fewer than two runs."""
    logs = [math.log(r) for r in ratios if r and r > 0 and math.isfinite(r)]
    n = len(logs)
    if n < 2:
        return None
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    return 2 * sd / math.sqrt(n)


def _percent(log_units: float) -> str:
    return f"{(math.exp(log_units) - 1) * 100:.1f}%"


def single_run(run: RunData, row: dict) -> dict:
    """A single run's claim row, `within noise` when its ratio is closer to the bound than the
    host's speed moved over the run (claims on time) plus its intervals' swing (any claim whose
    systems' intervals were read); unchanged otherwise."""
    if row["verdict"] not in (HOLDS, FAILS):
        return row
    floor = host_floor(run, row.get("systems") or "") if depends_on_time(row["metric"]) else None
    swing = row.get("swing")
    swing = math.log1p(swing) if swing else None
    distance = margin(row["measured_ratio"], row["expect"])
    if distance is None or (floor is None and swing is None) or distance > (floor or 0) + (swing or 0):
        return row
    sources = []
    if floor is not None:
        if claim_drift(run, row.get("systems") or "") is None:
            between = "between the run's start and end (the systems ran one after another)"
        else:
            between = "while its two systems ran" if "," in row["systems"] else "while its system ran"
        sources.append(f"this host's speed probe moved {_percent(floor)} {between}")
    if swing is not None:
        sources.append(f"the systems' intervals swing the ratio by {_percent(swing)} (two standard errors)")
    return {**row, "verdict": WITHIN_NOISE,
            "reason": (f"the ratio {row['measured_ratio']:.3f} is {_percent(distance)} from the bound of "
                       f"'{row['expect']}', and " + " and ".join(sources) + f": {row['verdict']} by less than "
                       "the measurement's own variation; REPEAT=3 measures the run-to-run noise instead")}


def over_runs(row: dict, ratios: list[float]) -> dict:
    """A claim row combined over repeated runs that agreed on a verdict, `within noise` when the
    mean ratio is within two standard errors of the bound."""
    band, distance = repeat_band(ratios), margin(row["measured_ratio"], row["expect"])
    if row["verdict"] not in (HOLDS, FAILS) or band is None or distance is None or distance > band:
        return row
    return {**row, "verdict": WITHIN_NOISE,
            "reason": (f"the mean ratio {row['measured_ratio']:.3f} is {_percent(distance)} from the bound of "
                       f"'{row['expect']}', within two standard errors ({_percent(band)}) of the "
                       f"{len(ratios)} runs' ratios")}
