"""The phase plan: `phases:` of a params file turned into the steps the native runner executes
(lib/native/src/plan.rs documents each step): load, verify, quiesce, cold start, the measured
phases (one per client count), a rate sweep, the consistency check. A family leaves out what its
`phases:` leaves out (iibench and TokuMX's insert test measure their load, so their plan ends at
verify)."""
from __future__ import annotations


def plan_steps(params: dict, system: dict | None = None) -> list[dict]:
    """The steps for an experiment's resolved params; a system with `measure_requests: false`
    loads and stops (the post's load-only setups)."""
    from ..families import family

    phases = params["phases"]
    use = family(params["workload"]["name"]).phase_use(params["workload"])
    steps: list[dict] = []
    if phases.get("load"):
        steps += [{"step": "load", "threads": phases["load"]["threads"], "interval_s": phases["load"]["interval_s"]},
                  {"step": "verify"}]
    measure = phases.get("measure")
    if not measure or (system is not None and not system.get("measure_requests", True)):
        return steps
    steps.append({"step": "quiesce", "seconds": phases["quiesce_s"], "checkpoint": phases["quiesce_checkpoint"]})
    if phases.get("cold_start", "none") != "none":
        steps.append({"step": "cold_start", "method": phases["cold_start"]})
    steps += measured_steps(measure)
    if phases.get("rate_sweep"):
        sweep = phases["rate_sweep"]
        steps.append({"step": "rate_sweep", "of": "run", "fractions": sweep["fractions"],
                      "seconds": sweep["seconds"], "threads": measure["threads"]})
    if use.check:
        steps.append({"step": "check"})
    return steps


def load_threads(params: dict) -> int:
    return (params["phases"].get("load") or {}).get("threads", 1)


def measured_steps(measure: dict) -> list[dict]:
    """One measured phase ("run"), after its warm-up; or one per client count ("clients=<n>").
    A phase measured until steady carries the driver's `until_steady` (until_steady.py)."""
    rate, interval, duration = measure.get("request_rate"), measure["interval_s"], measure.get("duration_s")
    steady = {"until_steady": {"min_s": measure.get("min_duration_s") or 0}} if measure.get("until_steady") else {}
    if isinstance(measure["threads"], list):
        return [{"step": "measure", "name": f"clients={n}", "threads": n, "interval_s": interval,
                 "duration_s": duration, "rate_per_s": rate, **steady} for n in measure["threads"]]
    steps = []
    if measure.get("warmup_s"):
        steps.append({"step": "measure", "name": "warmup", "threads": measure["threads"],
                      "interval_s": measure["warmup_s"], "duration_s": measure["warmup_s"], "rate_per_s": rate})
    steps.append({"step": "measure", "name": "run", "threads": measure["threads"], "interval_s": interval,
                  "duration_s": duration, "rate_per_s": rate, **steady})
    return steps
