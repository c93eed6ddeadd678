"""TokuMX-versus-MongoDB report pieces: the post's numbers next to ours, insert rates with their
dips, throughput against client count, storage, the replicated run's outcome, and the claims.

How the claims are evaluated. The post compares TokuMX's fractal tree (role `fractal`: PerconaFT
at TokuMX's release, under TokuMX's layout) with MongoDB's MMAPv1 (role `mmap`: on the embedded
target LMDB stands in for it, and each verdict's detail says so). A claim is evaluated only when
complete systems of both its roles ran. tk.insert20m.stale is evaluated from the runs'
`stale_secondary` events, which only a replica set can produce.
"""
from __future__ import annotations

import re

import polars as pl

from ...paths import reference_dir
from ...params.plan import measured_steps
from ...report.claims import FAILS, HOLDS, Measured, NOT_EVALUATED, caveat, claim_line, evaluate, load_claims, role_note, verdict_summary
from ...report.runparams import load_interval_s
from ...report.rundata import RunData, merged_latency, system_events
from ...report import over_time, unfinished

MB, GB = 1 << 20, 1 << 30
STALE_CLAIM = "tk.insert20m.stale"


def kind(run: RunData) -> str:
    """insert | read_update | read."""
    return run.manifest["params"]["workload"]["experiment"]


def post_table(config: str) -> pl.DataFrame:
    """The post's published numbers for one experiment (tokumx_2013.csv), failures included."""
    ref = pl.read_csv(reference_dir() / "tokumx_2013.csv", infer_schema_length=0)
    return (ref.filter(pl.col("experiment") == config)
            .select("system", "metric", pl.col("value").fill_null("failed"), "unit", pl.col("note").fill_null("")))


def _phase_rows(run: RunData, label: str, phase: str) -> pl.DataFrame:
    if run.intervals.is_empty():
        return run.intervals
    return run.intervals.filter((pl.col("system") == label) & (pl.col("phase") == phase)).sort("interval")


# -- experiment 1: inserts over time ------------------------------------------------------------
WINDOW_S = 10.0  # the claims' "10-second rate"


def dips(rates: list[float], seconds: list[float], interval_s: float, window_s: float = WINDOW_S) -> dict:
    """The insert rate's dips: the mean over the whole load (documents / seconds), the lowest
    rate over `window_s` (consecutive intervals adding up to it), the lowest interval, and the
    intervals below half the mean. A last interval cut shorter than half an interval (the load
    ended in it) is left out of the minima and the dips: its rate is noise."""
    total_s = sum(seconds)
    mean = sum(r * s for r, s in zip(rates, seconds)) / total_s if total_s else None
    full = [(i, r, s) for i, (r, s) in enumerate(zip(rates, seconds)) if s >= 0.5 * interval_s]
    if mean is None or not full:
        return {"mean_rate": mean, "min_window_rate": None, "min_rate": None, "min_interval": None,
                "below_half": [], "intervals": len(full)}
    k = max(1, round(window_s / interval_s))
    windows = [sum(r * s for _, r, s in full[j:j + k]) / sum(s for _, _, s in full[j:j + k])
               for j in range(len(full) - k + 1)]
    low_i, low, _ = min(full, key=lambda p: p[1])
    return {"mean_rate": mean, "min_window_rate": min(windows) if windows else None, "min_rate": low,
            "min_interval": low_i, "below_half": [i for i, r, _ in full if r < mean / 2], "intervals": len(full)}


def insert_series(run: RunData) -> pl.DataFrame:
    """Per system and interval of the insert phase: rate, documents so far, writes, size, dip."""
    interval_s = load_interval_s(run.manifest)
    frames = []
    for s in run.systems:
        rows = _phase_rows(run, s["label"], "load")
        if rows.is_empty():
            continue
        rates = (rows["ops"] / rows["seconds"]).to_list()
        found = dips(rates, rows["seconds"].to_list(), interval_s)
        t0 = rows["t_start"].min()
        writes = rows["proc_write_bytes"] if "proc_write_bytes" in rows.columns else pl.Series([None] * rows.height)
        frames.append(pl.DataFrame({
            "system": [s["label"]] * rows.height, "interval": rows["interval"],
            "minutes": ((rows["t_end"] - t0) / 60), "insert_rate": rates,
            "docs_millions": rows["ops"].cum_sum() / 1e6,
            "write_mb_s": writes.cast(pl.Float64) / MB / rows["seconds"],
            "size_mb": rows["size_du_bytes"].cast(pl.Float64) / MB,
            "half_mean": [found["mean_rate"] / 2] * rows.height,
            "dip": [i in found["below_half"] for i in range(rows.height)]}))
    return pl.concat(frames) if frames else pl.DataFrame()


def final_size(run: RunData, label: str) -> int | None:
    """`du` of the system's files at the end (the last sample, taken after the runner closed the
    engine, which is when the post ran `du -sh`)."""
    if run.samples.is_empty() or "size_du_bytes" not in run.samples.columns:
        return None
    sized = run.samples.filter((pl.col("system") == label) & pl.col("size_du_bytes").is_not_null())
    return int(sized.sort("t")["size_du_bytes"][-1]) if sized.height else None


def insert_figures(run: RunData, label: str) -> dict | None:
    rows = _phase_rows(run, label, "load")
    if rows.is_empty():
        return None
    interval_s = load_interval_s(run.manifest)
    found = dips((rows["ops"] / rows["seconds"]).to_list(), rows["seconds"].to_list(), interval_s)
    documents = int(rows["ops"].sum())
    size = final_size(run, label)
    return {**found, "documents": documents, "seconds": float(rows["seconds"].sum()), "size_bytes": size,
            "bytes_per_doc": size / documents if size and documents else None,
            "written_bytes": float(rows["proc_write_bytes"].sum()) if "proc_write_bytes" in rows.columns else None}


def insert_table(run: RunData) -> pl.DataFrame:
    interval_s = load_interval_s(run.manifest)
    rows = []
    for s in run.systems:
        f = insert_figures(run, s["label"])
        if f is None:
            continue
        rows.append({"setup": s["label"], "role": s["role"], "documents": f["documents"],
                     "inserts/s": None if f["mean_rate"] is None else round(f["mean_rate"]),
                     f"min {WINDOW_S:g}-s rate": None if f["min_window_rate"] is None else round(f["min_window_rate"]),
                     f"{interval_s:g}-s intervals below half the mean": f"{len(f['below_half'])} of {f['intervals']}",
                     "size (du, MB)": None if f["size_bytes"] is None else round(f["size_bytes"] / MB, 1),
                     "bytes/doc": None if f["bytes_per_doc"] is None else round(f["bytes_per_doc"]),
                     "written (MB)": None if f["written_bytes"] is None else round(f["written_bytes"] / MB),
                     "status": s.get("status") or ""})
    # Fixed dtypes: a column that is n/a for every system (a run shorter than 10 s) keeps its type.
    types = {"documents": pl.Int64, "inserts/s": pl.Int64, f"min {WINDOW_S:g}-s rate": pl.Int64,
             "size (du, MB)": pl.Float64, "bytes/doc": pl.Int64, "written (MB)": pl.Int64}
    return pl.DataFrame(rows, schema_overrides=types) if rows else pl.DataFrame()


def post_storage() -> pl.DataFrame:
    """The post's du after 10M documents, also per document, to compare across scales."""
    ref = post_table("insert_10m").filter(pl.col("metric") == "storage")
    return ref.select("system", pl.col("value").cast(pl.Float64).alias("size (GB)"),
                      (pl.col("value").cast(pl.Float64) * 1e9 / 10_000_000).round(0).alias("bytes/doc"))


# -- experiments 2 and 3: the client sweep --------------------------------------------------
def client_count(phase: str) -> int | None:
    match = re.fullmatch(r"clients=(\d+)", phase)
    return int(match.group(1)) if match else None


def client_sweep_table(run: RunData, latency: bool = True) -> pl.DataFrame:
    """Per system and client count: the counted rate (updates/s or reads/s) over the phase, the
    findOne rate, and (with `latency`) the counted op's p50/p99 from HdrHistograms merged exactly."""
    counted = "UPDATE" if kind(run) == "read_update" else "FIND_ONE"
    unit = "updates/s" if counted == "UPDATE" else "reads/s"
    rows = []
    if run.intervals.is_empty():
        return pl.DataFrame()
    for s in run.systems:
        mine = run.intervals.filter(pl.col("system") == s["label"])
        for phase in mine["phase"].unique(maintain_order=True).to_list():
            clients = client_count(phase)
            if clients is None:
                continue
            here = mine.filter(pl.col("phase") == phase)
            seconds = float(here["seconds"].sum())
            ops = run.ops.filter((pl.col("system") == s["label"]) & (pl.col("phase") == phase))
            finds = int(ops.filter(pl.col("op") == "FIND_ONE")["count"].sum())
            row = {"setup": s["label"], "role": s["role"], "clients": clients,
                   unit: float(here["ops"].sum()) / seconds if seconds else None,
                   "findOne/s": finds / seconds if seconds else None}
            if latency:
                merged = next((e for e in merged_latency(run.ops, s["label"], phase) if e["op"] == counted), {})
                row.update({"p50 ms": merged.get("p50_ms"), "p99 ms": merged.get("p99_ms")})
            rows.append(row)
    return pl.DataFrame(rows)


def client_sweep_max(run: RunData) -> pl.DataFrame:
    """Each system's maximum over the client counts (the post's "max throughput")."""
    table = client_sweep_table(run, latency=False)
    if table.is_empty():
        return table
    unit = table.columns[3]
    best = table.sort(unit, descending=True).group_by("setup", maintain_order=True).first()
    order = {s["label"]: i for i, s in enumerate(run.systems)}
    return (best.select("setup", "role", pl.col(unit).round(0).alias(f"max {unit}"), pl.col("clients").alias("at clients"))
            .sort(pl.col("setup").replace_strict(order, default=99)))


def over_time_view(run: RunData) -> over_time.View:
    """The inserts (the load phase), or the client sweep's phases in the order they ran."""
    if kind(run) == "insert":
        return over_time.View(("load",), None, "the post counted every interval of the inserts, its sharp "
                              "drops included", per="document")
    phases = tuple(step["name"] for step in measured_steps(run.manifest["params"]["phases"]["measure"])
                   if step["name"] != "warmup")
    return over_time.View(phases, None, "each client count's rate is its whole phase's, as the post reported one "
                          "figure per count", per="update" if kind(run) == "read_update" else "read")


# -- the replicated run ---------------------------------------------------------------------
def replicated_systems(run: RunData) -> list[str]:
    """Systems whose params ask for a replica set of more than one member under TARGET=mongod."""
    return [s["label"] for s in run.systems
            if (s.get("mongod") or {}).get("topology") == "replset" and (s.get("mongod") or {}).get("members", 1) > 1]


def stale_findings(run: RunData) -> dict[str, dict]:
    return {s["label"]: events[0] for s in run.systems if (events := system_events(run, s["label"], "stale_secondary"))}


def replication_note(run: RunData) -> str:
    """What happened to the replicated part of the experiment, or why it did not run."""
    stale = stale_findings(run)
    wanted = replicated_systems(run)
    target = (run.manifest.get("target") or {}).get("kind")
    if stale:
        parts = []
        for label, e in stale.items():
            members = "; ".join(" ".join(str(m[k]) for k in ("member", "state", "message") if m.get(k))
                                for m in e.get("members") or [])
            lags = ", ".join(f"{k} {v:,.0f} s" for k, v in (e.get("max_lag_s") or {}).items())
            inserted = next((f["documents"] for f in [insert_figures(run, label)] if f), None)
            parts.append(f"**{label}**: a secondary fell too far behind its primary's oplog to catch up"
                         + (f" after {inserted:,} documents" if inserted is not None else "")
                         + "; the run stopped there, as the params ask (`on_stale_secondary: stop`)."
                         + (f" Member: {members}." if members else "")
                         + (f" Largest lag seen per secondary: {lags}." if lags else ""))
        return "**Replication: stale secondary.** " + " ".join(parts)
    if target != "mongod":
        return ("**Replication: did not run.** The post ran every experiment on the PRIMARY of a 3-member replica "
                f"set. This run used the {target or 'unknown'} target: the embedded engines have no replica set, "
                "so no secondary could fall behind; they keep the primary's oplog (every write also writes an oplog "
                "entry), so the primary's work is the post's. The replicated part needs TARGET=mongod"
                + (f" (the params ask for it on {', '.join(wanted)})." if wanted else "."))
    if not wanted:
        return "**Replication: did not run.** No system's params ask for a replica set of more than one member."
    return (f"**Replication.** {', '.join(wanted)} ran on a replica set; no secondary became too stale to catch up.")


def stale_claim(run: RunData, claim: dict) -> dict:
    """tk.insert20m.stale from the stale_secondary events: holds when the mmap system's replica set
    lost a secondary that way, does not hold when it finished on a replica set without, else not
    evaluated, with the reason."""
    role = claim["numerator_role"]
    row = {"id": claim["id"], "claim": claim["claim"], "metric": claim["metric"], "published_ratio": None,
           "measured_ratio": None, "expect": claim["expect"], "verdict": NOT_EVALUATED, "from": "", "reason": ""}
    systems = [s for s in run.systems if s["role"] == role]
    stale = stale_findings(run)
    hit = next((s for s in systems if s["label"] in stale), None)
    target = (run.manifest.get("target") or {}).get("kind")
    if hit is not None:
        return {**row, "verdict": HOLDS, "from": f"{hit['label']}: stale_secondary event"}
    if not systems:
        return {**row, "reason": f"no system of role {role} ran"}
    if target != "mongod":
        return {**row, "reason": f"the {target or 'unknown'} target has no replica set, so no secondary could fall "
                                 "behind; the replicated part needs TARGET=mongod"}
    replicated = [s for s in systems if s["label"] in replicated_systems(run)]
    done = [s for s in replicated if s.get("status") == "complete"]
    if not done:
        return {**row, "reason": f"no {role} system completed on a replica set of more than one member"}
    return {**row, "verdict": FAILS, "from": f"{done[0]['label']}: all inserts done, no stale secondary"}


# -- claims ---------------------------------------------------------------------------------
def _value(run: RunData, label: str, metric: str) -> float | None:
    if metric == "insert_rate":
        return (insert_figures(run, label) or {}).get("mean_rate")
    if metric == "size_gb":
        return (insert_figures(run, label) or {}).get("size_bytes")
    if metric in ("max_update_rate", "max_read_rate"):
        best = client_sweep_max(run)
        best = best.filter(pl.col("setup") == label) if not best.is_empty() else best
        return float(best.row(0)[2]) if best.height else None
    return None


def resolver(run: RunData):
    """Ratios of a claim's metric between the first complete systems of its two roles."""

    def resolve(claim: dict) -> Measured:
        picked = []
        for role in (claim["numerator_role"], claim["denominator_role"]):
            system = run.complete_of_role(role)
            if system is None:
                return Measured(None, "", f"no complete system of role {role} ran")
            picked.append((system, role_note(system)))
        values = [_value(run, s["label"], claim["metric"]) for s, _ in picked]
        detail = " / ".join(f"{s['label']} ({s['role']}{note})={v:,.0f}" if v is not None else f"{s['label']}=n/a"
                            for (s, note), v in zip(picked, values))
        if None in values:
            return Measured(None, detail, f"{claim['metric']} was not measured in this experiment")
        if values[1] == 0:
            return Measured(None, detail, f"{claim['metric']} of {picked[1][0]['label']} is 0")
        return Measured(values[0] / values[1], detail)
    return resolve


def claims_table(run: RunData) -> pl.DataFrame:
    """The tk.* claims of this experiment."""
    claims = load_claims(run.manifest["experiment"])
    ratio_claims = claims.filter(pl.col("id") != STALE_CLAIM)
    table = evaluate(ratio_claims, resolver(run))
    stale = claims.filter(pl.col("id") == STALE_CLAIM)
    if stale.height:
        table = pl.concat([table, pl.DataFrame([stale_claim(run, stale.row(0, named=True))], schema=table.schema)])
    return table


# -- findings -------------------------------------------------------------------------------
def _insert_findings(run: RunData) -> list[str]:
    interval_s = load_interval_s(run.manifest)
    series = insert_series(run)
    lines = []
    figures = {s["label"]: insert_figures(run, s["label"]) for s in run.systems}
    figures = {k: v for k, v in figures.items() if v and v["mean_rate"]}
    for label, f in figures.items():
        text = f"**{label}** inserted {f['documents']:,} documents at {f['mean_rate']:,.0f} docs/s on average"
        if f["min_rate"] is None:
            lines.append(text + "; its load was shorter than one interval, too short to see dips.")
            continue
        if f["min_window_rate"] is not None:
            text += (f"; its slowest {WINDOW_S:g} s ran at {f['min_window_rate']:,.0f} docs/s "
                     f"({f['min_window_rate'] / f['mean_rate']:.0%} of the mean)")
        text += (f"; its slowest {interval_s:g}-s interval at {f['min_rate']:,.0f} docs/s "
                 f"({f['min_rate'] / f['mean_rate']:.0%})")
        dips_here = f["below_half"]
        if dips_here:
            mine = series.filter(pl.col("system") == label)
            dip_w = mine.filter(pl.col("dip"))["write_mb_s"].mean()
            other_w = mine.filter(~pl.col("dip"))["write_mb_s"].mean()
            text += (f", and {len(dips_here)} of its {f['intervals']} intervals fell below half the mean")
            if dip_w is not None and other_w:
                text += (f"; the process wrote {dip_w:,.1f} MB/s during those dips against {other_w:,.1f} MB/s in the "
                         "other intervals" + (" (the dips came with bursts of writes, as the post saw MongoDB's)"
                                              if dip_w > 1.5 * other_w else ""))
            text += "."
        else:
            text += "; no interval fell below half the mean (steady, as the post saw TokuMX)."
        lines.append(text)
    sized = {k: v["bytes_per_doc"] for k, v in figures.items() if v.get("bytes_per_doc")}
    if len(sized) > 1:
        big, small = max(sized, key=sized.get), min(sized, key=sized.get)
        lines.append("**Storage.** Per document (data, index and oplog, by `du` at the end): "
                     + ", ".join(f"{k} {v:,.0f} bytes" for k, v in sorted(sized.items(), key=lambda kv: -kv[1]))
                     + f"; {big} needed {sized[big] / sized[small]:.2f}x the space of {small}. The post measured "
                     "960 bytes/doc for MongoDB and 470 for TokuMX (9.6 and 4.7 GB for 10M documents).")
    return lines


def _client_sweep_findings(run: RunData) -> list[str]:
    table = client_sweep_table(run, latency=False)
    if table.is_empty():
        return []
    unit = table.columns[3]
    lines = []
    for label in table["setup"].unique(maintain_order=True).to_list():
        mine = table.filter(pl.col("setup") == label).sort("clients")
        rates = dict(zip(mine["clients"].to_list(), mine[unit].to_list()))
        peak = max(rates, key=rates.get)
        first, last = min(rates), max(rates)
        text = f"**{label}** peaked at {rates[peak]:,.0f} {unit} with {peak} client(s)"
        if peak == first:
            text += ": more clients did not raise its rate"
        elif rates[first]:
            text += f", {rates[peak] / rates[first]:.2f}x its {rates[first]:,.0f} with {first}"
        if last != peak and rates[peak]:
            text += f"; at {last} clients it ran {rates[last]:,.0f} ({rates[last] / rates[peak] - 1:+.0%} from its peak)"
        lines.append(text + ".")
    cores = (run.manifest.get("host") or {}).get("logical_cpus")
    if cores:
        lines.append(f"This host has {cores} logical CPUs for the engine and all client threads together, and the "
                     "clients are threads of one Python process: scaling past a few clients is bounded by that, not "
                     "only by the engine's locking (the post's clients were separate shell processes on 3 machines).")
    return lines


def findings(run: RunData, claims: pl.DataFrame) -> str:
    done = run.complete_systems
    lines = [replication_note(run)] if kind(run) == "insert" else []
    if not done and not stale_findings(run):
        lines.append(unfinished.NOTHING_COMPLETED)
    lines += _insert_findings(run) if kind(run) == "insert" else _client_sweep_findings(run)
    lines += unfinished.paragraphs(run)
    lines.append(f"**Claims.** {verdict_summary(claims)}.")
    lines += [claim_line(row) for row in claims.iter_rows(named=True)]
    if caveat(run):
        lines.append(caveat(run))
    return "\n\n".join(lines)
