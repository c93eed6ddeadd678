"""The settings of a run, read from its manifest's resolved params: the one place the reports
know where `phases:` keeps them (runs from before `phases:` held timing keep it in `workload:`)."""
from __future__ import annotations


def _phases(manifest: dict) -> dict:
    return manifest["params"].get("phases") or {}


def load_interval_s(manifest: dict) -> float:
    """The load's reporting interval (the insert tests measure their load)."""
    load = _phases(manifest).get("load")
    return load["interval_s"] if load else manifest["params"]["workload"]["interval_s"]


def request_rate(manifest: dict) -> float | None:
    """The open-loop rate of the measured phase (None: closed loop)."""
    phases = _phases(manifest)
    return (phases.get("measure") or {}).get("request_rate", phases.get("request_rate"))
