"""The throwaway family's claims: its one claim is the load rate of its b-tree over its LSM."""
from __future__ import annotations

import polars as pl

from ...report.claims import Measured, evaluate, load_claims
from ...report.rundata import RunData, phase_summary


def claims_table(run: RunData) -> pl.DataFrame:
    def resolve(claim: dict) -> Measured:
        systems = [run.complete_of_role(role) for role in (claim["numerator_role"], claim["denominator_role"])]
        if None in systems:
            return Measured(None, "", "needs a complete system of each role")
        summaries = [phase_summary(run.intervals, s["label"], "load") for s in systems]
        rates = [x["ops"] / x["seconds"] if x and x["seconds"] else None for x in summaries]
        if None in rates or not rates[1]:
            return Measured(None, "", "the load rate was not measured")
        return Measured(rates[0] / rates[1], " / ".join(f"{s['label']}={r:,.0f}" for s, r in zip(systems, rates)))
    return evaluate(load_claims(run.manifest["experiment"]), resolve)
