"""iibench report pieces: the post's table next to ours, rates over time, claims, findings."""
from __future__ import annotations

import math

import altair as alt
import polars as pl

from ...paths import reference_dir
from ...report import over_time, palette, unfinished
from ...report.claims import Measured, caveat, claim_line, evaluate, load_claims, release_note, verdict_summary
from ...report import latency
from ...report.rundata import RunData, phase_summary

MB = 1 << 20
QUERY_OPS = ("QUERY_PDC", "QUERY_MARKETSEGMENT", "QUERY_REGISTERSEGMENT")


def post_table() -> pl.DataFrame:
    ref = pl.read_csv(reference_dir() / "iibench_2015.csv")
    return ref.select(pl.col("insert_rate").alias("irate"), pl.col("n_slow").alias("Nslow"),
                      pl.col("query_rate").alias("qrate"), pl.format("{}g", "size_gb").alias("size"),
                      pl.col("server"))


def _load_ops(run: RunData, label: str) -> pl.DataFrame:
    """The system's per-interval op rows (counts, histograms) of the load phase."""
    if run.ops.is_empty():
        return run.ops
    return run.ops.filter((pl.col("system") == label) & (pl.col("phase") == "load"))


def system_figures(run: RunData, label: str) -> dict | None:
    """irate (docs/s over the load), Nslow, qrate (queries/s while queries ran), final size."""
    ops = _load_ops(run, label)
    if ops.is_empty():
        return None
    rows = run.intervals.filter((pl.col("system") == label) & (pl.col("phase") == "load")).sort("interval")
    seconds = rows["seconds"].sum()
    inserts = ops.filter(pl.col("op") == "INSERT")
    queries = ops.filter(pl.col("op").is_in(QUERY_OPS))
    query_intervals = queries["interval"].unique().to_list()
    query_seconds = rows.filter(pl.col("interval").is_in(query_intervals))["seconds"].sum()
    last = rows.row(-1, named=True)
    return {"irate": inserts["items"].sum() / seconds if seconds else None,
            "Nslow": _n_slow(run, label, inserts),
            "qrate": queries["count"].sum() / query_seconds if query_seconds else None,
            "size_bytes": last.get("size_du_bytes"), "documents": int(inserts["items"].sum())}


def _server_slow_ops(run: RunData, label: str) -> dict | None:
    slow = next((s.get("slow_ops") for s in run.systems if s["label"] == label), None)
    return slow if slow and slow.get("source") == "server" else None


def _n_slow(run: RunData, label: str, inserts: pl.DataFrame) -> int | None:
    """The server's count of slow inserts where it kept one (as the post's Nslow), else the
    client's count of slow insert calls."""
    server = _server_slow_ops(run, label)
    if server:
        return server["count"]
    return int(inserts["slow"].sum()) if "slow" in inserts.columns else None


# The post's command line passed a query limit of 4 (its 11th argument); its prose speaks of
# 10-document scans. The command line is what ran.
POST_QUERY_LIMIT = 4


def _slow_source(slow: dict | None, threshold: str) -> str:
    slow = slow or {}
    if slow.get("source") == "server":
        bound = " (its profile filled up, so a lower bound)" if slow.get("profile_full") else ""
        return (f"the server's count of inserts of at least {threshold} (its profiler, which records what its "
                f"slow-operation log does), as the post counted it{bound}.")
    why = slow.get("why") or "an embedded engine has no server"
    return (f"insert calls of at least {threshold} as the client timed each call ({why}); the post counted "
            "the server's log of slow operations.")


def method_lines(run: RunData) -> list[str]:
    """The first lines of the findings: where Nslow comes from, and the query limit."""
    workload = run.manifest["params"]["workload"]
    threshold = f"{workload.get('slow_threshold_s', 2.0):g} s"
    sources: dict[str, list[str]] = {}
    for s in run.systems:
        sources.setdefault(_slow_source(s.get("slow_ops"), threshold), []).append(s["label"])
    lines = [f"Nslow ({', '.join(labels)}): {text}" for text, labels in sources.items()]
    limit = workload.get("query_limit", POST_QUERY_LIMIT)
    same = "as in the post's command line" if limit == POST_QUERY_LIMIT else \
        f"not the post's command line's {POST_QUERY_LIMIT}"
    lines.append(f"Each query reads at most {limit} documents, {same} (its prose says 10-document scans; its "
                 f"command line passed {POST_QUERY_LIMIT}).")
    return lines


def our_table(run: RunData) -> pl.DataFrame:
    rows = []
    for s in run.systems:
        f = system_figures(run, s["label"])
        if not f:
            continue
        rows.append({"irate": None if f["irate"] is None else round(f["irate"]), "Nslow": f["Nslow"],
                     "qrate": None if f["qrate"] is None else round(f["qrate"]),
                     "size": None if f["size_bytes"] is None else f"{f['size_bytes'] / MB:.0f}m",
                     "server": f"{s['label']}: {s.get('version') or s['engine']}"})
    return pl.DataFrame(rows)


def rate_series(run: RunData) -> pl.DataFrame:
    """Per interval and system: insert and query rates, and documents inserted so far."""
    out = []
    for s in run.systems:
        ops = _load_ops(run, s["label"])
        rows = run.intervals.filter((pl.col("system") == s["label"]) & (pl.col("phase") == "load")).sort("interval")
        done = 0
        for row in rows.iter_rows(named=True):
            here = ops.filter(pl.col("interval") == row["interval"])
            inserted = here.filter(pl.col("op") == "INSERT")["items"].sum()
            queried = here.filter(pl.col("op").is_in(QUERY_OPS))["count"].sum()
            done += inserted
            out.append({"system": s["label"], "interval": row["interval"], "docs_millions": done / 1e6,
                        "insert_rate": inserted / row["seconds"], "query_rate": queried / row["seconds"],
                        "size_mb": (row.get("size_du_bytes") or 0) / MB,
                        "slow": int(here.filter(pl.col("op") == "INSERT")["slow"].sum())})
    return pl.DataFrame(out)


def rate_chart(series: pl.DataFrame, column: str, title: str, y_title: str) -> alt.Chart | None:
    if series.is_empty():
        return None
    return (alt.Chart(alt.Data(values=series.select("system", "docs_millions", column).to_dicts()), title=title)
            .mark_line(point=alt.OverlayMarkDef(size=12))
            .encode(x=alt.X("docs_millions:Q", title="documents inserted (millions)", scale=alt.Scale(zero=True)),
                    y=alt.Y(f"{column}:Q", title=y_title), color=palette.color("system", series["system"].to_list()))
            .properties(width=560, height=240))


# The load is the measured phase, and the post plotted it whole: its rate is expected to fall as
# the indexes outgrow memory, so there is no level for a window to settle at.
OVER_TIME = over_time.View(("load",), None, "the load is measured whole, as the post measured it, its rate "
                           "expected to fall as the indexes outgrow memory", per="document")


def latency_table(run: RunData) -> pl.DataFrame:
    return latency.latency_table(run, "load")


def load_metrics(run: RunData) -> pl.DataFrame:
    rows = []
    for s in run.systems:
        summary = phase_summary(run.intervals, s["label"], "load")
        if summary:
            rows.append({"setup": s["label"], "docs/s": round(summary["ops_per_s"]), "r/o": summary["r_per_op"],
                         "rKB/o": summary["rkb_per_op"], "wKB/o": summary["wkb_per_op"],
                         "cpu/o (us)": summary["cpu_us_per_op"], "client cpu/o (us)": summary["client_cpu_us_per_op"]})
    return pl.DataFrame(rows)


# -- claims ---------------------------------------------------------------------------------
METRICS = {"insert_rate": "irate", "query_rate": "qrate", "size_gb": "size_bytes", "n_slow": "Nslow"}


def _figure(value, key: str) -> str:
    if value is None:
        return "n/a"
    if key == "size_bytes":
        return f"{value / 2**30:.2f} GiB"
    return f"{value:,.0f}" + ("/s" if key in ("irate", "qrate") else "")


def resolver(run: RunData):
    def resolve(claim: dict) -> Measured:
        key = METRICS.get(claim["metric"])
        a, b = run.complete_of_role(claim["numerator_role"]), run.complete_of_role(claim["denominator_role"])
        if key is None:
            return Measured(None, "", f"metric {claim['metric']!r} has no resolver")
        if a is None or b is None:
            return Measured(None, "", f"needs complete systems of roles {claim['numerator_role']} and "
                                      f"{claim['denominator_role']}")
        va, vb = system_figures(run, a["label"])[key], system_figures(run, b["label"])[key]
        detail = f"{a['label']}={_figure(va, key)} / {b['label']}={_figure(vb, key)}" + release_note(claim, a, b)
        if va is None or vb is None:
            return Measured(None, detail, f"{claim['metric']} was not measured")
        if vb == 0:
            if va == 0:
                return Measured(None, detail, f"both are 0 at this scale ({claim['metric']}), so there is no ratio")
            return Measured(math.inf, detail)
        return Measured(va / vb, detail)
    return resolve


def claims_table(run: RunData) -> pl.DataFrame:
    return evaluate(load_claims(run.manifest["experiment"]), resolver(run))


def findings(run: RunData, claims: pl.DataFrame) -> str:
    series = rate_series(run)
    lines = method_lines(run)
    limit_mb = (run.manifest.get("resources") or {}).get("memory_limit_mb")
    for s in run.complete_systems:  # an unfinished system's partial load is named by unfinished.paragraphs
        mine = series.filter(pl.col("system") == s["label"]) if not series.is_empty() else series
        if mine.is_empty():
            continue
        if mine.height < 4:
            figures = system_figures(run, s["label"])
            lines.append(f"**{s['label']}** inserted at {figures['irate']:,.0f} docs/s; its load lasted "
                         f"{mine.height} interval(s), too few to see a trend.")
            continue
        rates = mine["insert_rate"].to_list()
        q = max(1, len(rates) // 5)
        early, late = sum(rates[:q]) / q, sum(rates[-q:]) / q
        change = late / early - 1 if early else 0
        text = (f"**{s['label']}** inserted at {early:,.0f} docs/s over the first fifth of the load and "
                f"{late:,.0f} docs/s over the last fifth ({change:+.0%}).")
        if limit_mb:
            past = mine.filter(pl.col("size_mb") > limit_mb)
            if past.is_empty():
                text += f" Its database never grew past the {limit_mb} MB memory limit."
            else:
                at = past.row(0, named=True)
                before = mine.filter(pl.col("interval") < at["interval"])["insert_rate"].mean()
                after = past["insert_rate"].mean()
                text += (f" Its files passed the {limit_mb} MB memory limit after {at['docs_millions']:.2f}M documents; "
                         f"the insert rate averaged {before or 0:,.0f} docs/s before and {after:,.0f} after.")
        text += " " + ("The rate declined as the data outgrew memory." if change < -0.1 else
                       "The rate did not decline by more than 10% over the load.")
        lines.append(text)
    lines += unfinished.paragraphs(run)
    lines.append(f"**Claims.** {verdict_summary(claims)}.")
    lines += [claim_line(row) for row in claims.iter_rows(named=True)]
    if caveat(run):
        lines.append(caveat(run))
    return "\n\n".join(lines)
