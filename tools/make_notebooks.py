"""Write the notebooks (notebooks/<name>.ipynb) from the cell sources below.

The notebook is generated so its cells stay thin and reviewed as code; `make notebooks`
regenerates it, executes it at the smoke scale, and keeps stored outputs only in the cells nbval
checks (marked NBVAL_CHECK_OUTPUT), which are deterministic at that scale.
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from enginebench.experiment import NBVAL_ONLY_TAG

ROOT = Path(__file__).resolve().parents[1]


def head(exp: str, exp_choices: str, modules: str) -> list:
    """The cells every notebook opens with: the parameters (papermill's contract: defaults are the
    smoke scale), imports, the run (its progress log hidden in the report) and the banner."""
    return [
        ("params", f"""exp = "{exp}"  # {exp_choices}
scale = "smoke"  # smoke (CI, seconds) | default (minutes on 2 cores) | paper (the post's own sizes)
target = "auto"  # auto | embedded | mongod
run_dir = ""  # a results folder to report instead of running the experiment"""),
        ("code", f"""from pathlib import Path

import polars as pl
from IPython.display import HTML, Image, Markdown, display

import enginebench
from enginebench.params import load_params
from enginebench.report import charts, html, repeats, resources, {modules}
from enginebench.report.prose import caveat
from enginebench.report.rundata import load_run, phase_summary

params = load_params(exp, scale)  # fails here, before anything starts, on a bad params file
print(f"{{params['title']}}: scale {{scale}}, {{len(params['systems'])}} systems")"""),
        ("run", """run_path = Path(run_dir) if run_dir else enginebench.run(exp, scale, target)
run = load_run(run_path)"""),
        ("code", """display(HTML(html.banner(run)))"""),
    ]


FOOT = [
    ("md", "## Repeats"),
    ("code", """display(Markdown(repeats.section(run)))
if len(repeats.group_runs(run)) > 1:
    display(HTML(html.table(repeats.spread_table(repeats.group_runs(run)), "Headline numbers over the repeated runs")))"""),
    ("code", """display(HTML(html.provenance(run)))"""),
]


LINKBENCH = [
    ("md", """# LinkBench: B-tree against LSM, re-run

Re-runs the LinkBench experiments of *MongoDB 3.2 vs Linkbench* (2015): a social-graph workload
loaded, then queried, on a b-tree engine (WiredTiger), an LSM (RocksDB) and the other engines the
params name. Every number below comes from the run this notebook started (or was pointed at), and
every claim of the post is evaluated against it. Parameters: `exp` (which LinkBench experiment),
`scale` (`smoke`, `default`, `paper`), `target` (`auto`, `embedded`, `mongod`), and `run_dir` to
report an existing run instead of starting one."""),
    *head("linkbench_cached", "linkbench_cached | linkbench_uncached_disk | linkbench_uncached_ssd",
          "linkbench as lb"),
    ("md", "## What ran\n\nEach system is one engine configuration: label as in the post (`wt` WiredTiger, `rx` RocksDB, `op1` = writes also go to an oplog, as on a replica-set member)."),
    ("code", """systems = [{"setup": s["label"], "role": s["role"], "engine": s["engine"], "version": s.get("version"),
            "status": s.get("status"), "transactions": s.get("transactions"), "error": s.get("error") or ""}
           for s in run.systems]
display(HTML(html.table(pl.DataFrame(systems), "Systems")))"""),
    ("check", """# NBVAL_CHECK_OUTPUT
# Documents after the load, against what the params and the degree model require.
for s in run.systems:
    verified = s.get("load_verified") or {}
    found, expected = verified.get("found", {}), verified.get("expected", {})
    print(s["label"], ", ".join(f"{c} {found.get(c)}/{expected.get(c)}" for c in expected),
          "ok" if verified.get("ok") else "MISMATCH")"""),
    ("check", """# NBVAL_CHECK_OUTPUT
# Count rows against visible links after the query phase: must be 0 where transactions ran.
for s in run.systems:
    consistency = s.get("consistency") or {}
    print(s["label"], "mismatches:", consistency.get("mismatches"))"""),
    ("md", """## Resources

What the resource profile enforced for each system: the memory limit on the runner process (the
engine's server) with the peak it reached, the emulated device's IOPS caps with the IOPS the
system's cgroup actually issued per interval, and how the database was evicted before the queries."""),
    ("code", """display(HTML(html.table(resources.resources_table(run), "Resources per system")))
held = resources.caps_held(run)
if held:
    display(Markdown("\\n".join(f"- {line}" for line in held)))
chart = resources.physical_limit_chart(run)
if chart is not None:
    display(Image(charts.to_png(chart)))"""),
    ("md", """## Load phase

The post's table (its hardware: 24 cores, 144 GB RAM, 2015 software) and ours, in its columns.
`ops` is documents inserted per second over all collections; per-op figures are per node inserted,
as the post normalised them. The post's `cpu/o` is vmstat's us+sy divided by ops, times 10^6; ours is
microseconds of server CPU per operation, and `client cpu/o` is what the workload generator itself
used (inside the same process for embedded engines)."""),
    ("code", """ours = lb.our_tables(run)
post = lb.post_tables(params["reference"]["config"])
display(HTML(html.side_by_side(html.table(post.get("load", pl.DataFrame()), "2015: load"),
                               html.table(ours.get("load", pl.DataFrame()), "measured: load"))))"""),
    ("nbval", """# NBVAL_CHECK_OUTPUT
# The schema of our load table (its values vary run to run; its columns must not).
print(ours["load"].schema if "load" in ours else "no load table")"""),
    ("md", "## Query phase\n\nThe post reported its 2nd and 12th hour; ours are the measured intervals of this scale."),
    ("code", """post_runs = [html.table(t, f"2015: {name}") for name, t in post.items() if name != "load"]
our_runs = [html.table(t, f"measured: {name}") for name, t in ours.items() if name != "load"]
display(HTML(html.side_by_side(*post_runs)))
display(HTML(html.side_by_side(*our_runs)))"""),
    ("code", """for phase, title in (("load", "Load: documents inserted per second, per interval"),
                     ("run", "Query phase: requests per second, per interval")):
    chart = charts.throughput_over_time(run, phase, title)
    if chart is not None:
        display(Image(charts.to_png(chart)))"""),
    ("code", """for phase, title in (("load", "Load: per-operation metrics (per node inserted)"),
                     ("run", "Query phase: per-operation metrics (per request)")):
    rows = [{"system": s["label"], **phase_summary(run.intervals, s["label"], phase)}
            for s in run.systems if phase_summary(run.intervals, s["label"], phase)]
    chart = charts.per_op_bars(pl.DataFrame(rows), title) if rows else None
    if chart is not None:
        display(Image(charts.to_png(chart)))"""),
    ("md", "## Response time\n\nPer operation type over the whole query phase, from HdrHistograms merged exactly across workers and intervals (milliseconds)."),
    ("code", """latency = lb.response_times(run)
display(HTML(html.table(latency, "Response time per operation (ms)")))
chart = charts.latency_bars(latency, "p50 and p99 per operation (ms, symlog scale)")
if chart is not None:
    display(Image(charts.to_png(chart)))"""),
    ("md", """## Latency against throughput

Not in the post: after the measured phase, open-loop phases at fixed arrival rates, fractions of
the throughput the closed loop reached (`phases.rate_sweep`). Latency is measured from each
request's intended start (what a user would wait) and as service time (what the engine took)."""),
    ("code", """from enginebench.report import sweep
curve = sweep.sweep_table(run)
if curve.is_empty():
    display(Markdown("No rate sweep in this run (`phases.rate_sweep` is not set at this scale, or the run stopped before it)."))
else:
    display(HTML(html.table(curve, "Open-loop points: offered and achieved requests/s, p50 and p99 latency (ms)")))
    display(Image(charts.to_png(sweep.sweep_chart(curve))))
    display(Markdown(sweep.sweep_finding(curve)))"""),
    ("md", "## Claims\n\nEach claim of the post for this experiment, its published ratio, our measured ratio and the verdict."),
    ("code", """claims = repeats.claims(run, lb.claims_table)  # combined over REPEAT=n runs
display(HTML(html.table(claims.select("id", "claim", "published_ratio", "measured_ratio", "expect", "verdict", "from", "reason"),
                        "Claims", classes={"holds": "eb-holds", "does not hold": "eb-fails", "not evaluated": "eb-na"})))"""),
    ("md", """### The same author's July 2015 runs

LinkBench on WiredTiger, RocksDB, TokuMX and mmapv1 (smalldatum.blogspot.com, July 2015), with other
versions on other hardware: what they give for the claims above that they bear on, beside the
November post's published ratio, then their queries per second in each of 12 one-hour intervals. A
second published reading of the claim, not part of its verdict."""),
    ("code", """from enginebench.report import linkbench_july
beside = linkbench_july.claims_beside(run.manifest["experiment"], params["reference"]["config"])
if not beside.is_empty():
    display(HTML(html.table(beside, "July 2015 runs, for the same claims")))
    display(HTML(html.table(linkbench_july.series(params["reference"]["config"]), "July 2015: queries/s per 1-hour interval")))"""),
    ("md", "## Findings"),
    ("code", """from enginebench.report.prose import linkbench_findings
display(Markdown(linkbench_findings(run, claims)))"""),
    *FOOT,
]


IIBENCH = [
    ("md", """# iibench: inserts with secondary indexes, and queries while they run

Re-runs the insert benchmark of *WiredTiger improvements from MongoDB 3.0 to 3.1* (2015): writers
insert documents into a collection with three secondary indexes while one query worker runs short
range scans on those indexes, back to back. The post's claim: the LSM (RocksDB) inserts faster and
stalls less because it does no read-before-write for secondary indexes, while the b-tree
(WiredTiger) answers the range scans faster. Every number below comes from the run this notebook
started (or was pointed at)."""),
    *head("iibench_500m", "the iibench experiment", "iibench as ib"),
    ("code", """systems = [{"setup": s["label"], "role": s["role"], "engine": s["engine"], "version": s.get("version"),
            "status": s.get("status"), "error": s.get("error") or ""} for s in run.systems]
display(HTML(html.table(pl.DataFrame(systems), "Systems")))"""),
    ("check", """# NBVAL_CHECK_OUTPUT
# Documents and index entries after the load, against what the params require.
for s in run.systems:
    verified = s.get("load_verified") or {}
    found, expected = verified.get("found", {}), verified.get("expected", {})
    print(s["label"], ", ".join(f"{k} {found.get(k)}/{expected.get(k)}" for k in expected),
          "ok" if verified.get("ok") else "MISMATCH")"""),
    ("md", "## Resources"),
    ("code", """display(HTML(html.table(resources.resources_table(run), "Resources per system")))
held = resources.caps_held(run)
if held:
    display(Markdown("\\n".join(f"- {line}" for line in held)))"""),
    ("md", """## The post's table and ours

`irate`: documents inserted per second over the whole load; `Nslow`: insert calls that took at
least two seconds; `qrate`: queries per second while queries ran; `size`: the database at the end
(`du`). The post's database was 500M documents on 144 GB of RAM and PCIe flash."""),
    ("code", """display(HTML(html.side_by_side(html.table(ib.post_table(), "2015"), html.table(ib.our_table(run), "measured"))))"""),
    ("nbval", """# NBVAL_CHECK_OUTPUT
print(ib.our_table(run).schema)"""),
    ("md", "## Rates over time\n\nThe post showed both rates over the load; here against the number of documents inserted so far."),
    ("code", """series = ib.rate_series(run)
for column, title, axis in (("insert_rate", "Insert rate per interval", "documents inserted per second"),
                            ("query_rate", "Query rate per interval", "queries per second"),
                            ("slow", "Slow inserts (at least 2 s) per interval", "slow insert calls")):
    chart = ib.rate_chart(series, column, title, axis)
    if chart is not None:
        display(Image(charts.to_png(chart)))"""),
    ("md", "## Latency and per-operation metrics\n\nPer insert call (10 documents) and per query, from HdrHistograms merged across workers (milliseconds); then the load's IO and CPU per document inserted."),
    ("code", """display(HTML(html.table(ib.latency_table(run), "Response time per operation (ms)")))
display(HTML(html.table(ib.load_metrics(run), "Per document inserted")))"""),
    ("md", "## Claims"),
    ("code", """claims = repeats.claims(run, ib.claims_table)  # combined over REPEAT=n runs
display(HTML(html.table(claims.select("id", "claim", "published_ratio", "measured_ratio", "expect", "verdict", "from", "reason"),
                        "Claims", classes={"holds": "eb-holds", "does not hold": "eb-fails", "not evaluated": "eb-na"})))"""),
    ("md", "## Findings"),
    ("code", """display(Markdown(ib.findings(run, claims)))"""),
    *FOOT,
]

SYSBENCH = [
    ("md", """# sysbench-mongodb under cgroup memory limits

Re-runs *MongoDB sysbench-mongo benchmark* (2015): sysbench's OLTP transaction (10 point selects,
four 100-document ranges, an index update, a non-index update, a delete and re-insert) on slow
storage, with the server's memory limited by cgroups to three sizes, measured every 10 seconds;
WiredTiger with its default 60 s checkpoint and with 900 s. Every number below comes from the run
this notebook started (or was pointed at)."""),
    *head("sysbench_cgroups", "the sysbench experiment", "sysbench as sb"),
    ("check", """# NBVAL_CHECK_OUTPUT
# Documents per collection after the load and after the run (delete + re-insert keeps them constant).
for s in run.systems:
    loaded, after = s.get("load_verified") or {}, s.get("consistency") or {}
    print(s["label"], "loaded ok" if loaded.get("ok") else "load MISMATCH", "| after run mismatches:", after.get("mismatches"))"""),
    ("md", "## Memory and storage per run\n\nThe memory limit each run had, the peak it reached, and the storage caps."),
    ("code", """display(HTML(html.table(resources.resources_table(run), "Resources per run")))"""),
    ("md", "## Throughput\n\nThe post's average over the 2nd hour; ours over the second half of each run (transactions per second)."),
    ("code", """display(HTML(html.side_by_side(html.table(sb.post_matrix(), "2015 (cache / total GiB)"),
                               html.table(sb.our_matrix(run), "measured"))))
chart = sb.throughput_chart(run)
if chart is not None:
    display(Image(charts.to_png(chart)))"""),
    ("code", """chart = sb.io_chart(run)
if chart is not None:
    display(Image(charts.to_png(chart)))"""),
    ("md", "## Claims"),
    ("code", """claims = repeats.claims(run, sb.claims_table)  # combined over REPEAT=n runs
display(HTML(html.table(claims.select("id", "claim", "published_ratio", "measured_ratio", "expect", "verdict", "from", "reason"),
                        "Claims", classes={"holds": "eb-holds", "does not hold": "eb-fails", "not evaluated": "eb-na"})))
lines = [f"- *{r['claim']}*: **{r['verdict']}**" + (f" (measured {r['measured_ratio']:.2f}x, " + (
             f"published {r['published_ratio']:.2f}x)" if r["published_ratio"] is not None else "the post gives no ratio)")
         if r["measured_ratio"] is not None else f" ({r['reason']})") for r in claims.iter_rows(named=True)]
display(Markdown("\\n".join(lines) + ("\\n\\n" + caveat(run) if caveat(run) else "")))"""),
    ("md", "## Findings"),
    ("code", """display(Markdown(sb.findings(run, claims)))"""),
    *FOOT,
]

TOKUMX = [
    ("md", """# TokuMX against MongoDB: inserts, read + update, and reads, re-run

Re-runs the three experiments of *MongoDB vs TokuMX* (Severalnines, 2013) as four: one client
inserting 10M and 20M documents one per call into a collection with an index on x (rate over time,
its dips, disk writes, storage), and, on 1M documents that fit in memory, 1 to 6 clients doing
findOne + $set (updates/s) or exact-match reads (reads/s). The post compared TokuMX's fractal tree
with MongoDB's MMAPv1 on a 3-member replica set; which systems ran here, and what that means for
each claim, is stated below. Every number comes from the run this notebook started (or was pointed
at)."""),
    *head("tokumx_insert_10m", "tokumx_insert_10m | tokumx_insert_20m | tokumx_concurrency | tokumx_read",
          "tokumx as tk, tokumx_charts as tc"),
    ("code", """kind = tk.kind(run)  # insert | read_update | read
systems = [{"setup": s["label"], "role": s["role"], "engine": s["engine"] + (f" {s['options']['table_type']}" if s["options"].get("table_type") else ""),
            "version": s.get("version"), "status": s.get("status"), "error": s.get("error") or ""} for s in run.systems]
display(HTML(html.table(pl.DataFrame(systems), "Systems")))"""),
    ("check", """# NBVAL_CHECK_OUTPUT
# Documents and index entries after the load (and after the client sweep), against the params.
for s in run.systems:
    for name in ("load_verified", "consistency"):
        event = s.get(name) or {}
        if event:
            found, expected = event.get("found", {}), event.get("expected", {})
            print(s["label"], name, ", ".join(f"{k} {found.get(k)}/{expected.get(k)}" for k in expected),
                  "ok" if event.get("ok") else "MISMATCH")"""),
    ("check", """# NBVAL_CHECK_OUTPUT
# The phases each system ran: the inserts ("load"), or the load and one phase per client count.
for s in run.systems:
    print(s["label"], [p["phase"] for p in s.get("phases") or []])"""),
    ("md", """## Replication

The post's clients wrote to the PRIMARY of a 3-member replica set, and its MongoDB run of 20M
inserts failed when the secondaries fell too far behind to catch up. Whether a replica set ran
here, and what happened to it:"""),
    ("code", """display(Markdown(tk.replication_note(run)))"""),
    ("md", """## The post's numbers and ours

The post's (2 GB RAM, 4 cores, 2013 software; MongoDB = MMAPv1, TokuMX = fractal tree) beside
ours. Inserts: the average rate over the whole run, the slowest 10 seconds (consecutive intervals),
how many intervals fell below half the average, and `du` of the system's files at the end (data,
index, oplog and the engine's log files). Client sweeps: each system's maximum over the client
counts."""),
    ("code", """ours = tk.insert_table(run) if kind == "insert" else tk.sweep_max(run)
display(HTML(html.side_by_side(html.table(tk.post_table(params["reference"]["config"]), "2013"),
                               html.table(ours, "measured"))))"""),
    ("nbval", """# NBVAL_CHECK_OUTPUT
print(ours.schema)"""),
    ("md", """## Over time

Inserts: the rate per interval, with the intervals below half the mean marked (the post's "sharp
drops", which it traced to bursts of disk writes), then the MB/s the engine's process wrote.
Client sweeps: the rate per interval as clients were added, one count after another."""),
    ("code", """series = tk.insert_series(run) if kind == "insert" else pl.DataFrame()
interval_s = params["phases"]["load"]["interval_s"]
if kind == "insert":
    figures = [tc.insert_rate_chart(series, interval_s), tc.writes_chart(series)]
else:
    figures = [tc.sweep_over_time(run.intervals, "updates/s" if kind == "read_update" else "reads/s")]
for chart in figures:
    if chart is not None:
        display(Image(charts.to_png(chart)))"""),
    ("md", """## Storage (inserts) and throughput against clients (sweeps)

Inserts: bytes per document at the end, ours and the post's (its 10M-document `du`), so that runs
of different sizes compare. Sweeps: the counted rate (updates/s or reads/s) per client count, with
the findOne rate and the counted operation's latency."""),
    ("code", """if kind == "insert":
    chart = tc.storage_chart(ours)
else:
    sweep = tk.sweep_table(run)
    display(HTML(html.table(sweep, "Per client count")))
    chart = tc.sweep_chart(sweep)
if chart is not None:
    display(Image(charts.to_png(chart)))"""),
    ("md", """## Claims

A claim is evaluated only when complete systems of both roles it names ran: the post's are
`fractal` (TokuMX) and `mmap` (MongoDB MMAPv1; here LMDB's memory-mapped B+tree). No embedded
engine is a fractal tree, so on the embedded target those claims are *not evaluated*. The second
table repeats them with the stand-in role the params name (`workload.stand_in`), clearly labelled:
it is a comparison to read, not a verdict. tk.insert20m.stale is evaluated from the run's
stale-secondary findings, which only a replica set can produce."""),
    ("code", """claims = repeats.claims(run, tk.claims_table)  # combined over REPEAT=n runs
stand_ins = tk.claims_table(run, tk.stand_in_roles(run)) if tk.stand_in_roles(run) else pl.DataFrame()
verdicts = {"holds": "eb-holds", "does not hold": "eb-fails", "not evaluated": "eb-na"}
display(HTML(html.table(claims.select("id", "claim", "published_ratio", "measured_ratio", "expect", "verdict", "from", "reason"),
                        "Claims (verdicts)", classes=verdicts)))
if not stand_ins.is_empty():
    display(HTML(html.table(stand_ins.select("id", "published_ratio", "measured_ratio", "expect", "from", "reason"),
                            "Stand-in comparisons, not verdicts: " + ", ".join(
                                f"{lsm} standing in for {role}" for role, lsm in tk.stand_in_roles(run).items()))))"""),
    ("nbval", """# NBVAL_CHECK_OUTPUT
for row in claims.iter_rows(named=True):
    print(row["id"], "|", row["verdict"], "|", row["reason"])"""),
    ("md", "## Findings"),
    ("code", """display(Markdown(tk.findings(run, claims, stand_ins)))"""),
    *FOOT,
]

FLASHBACK = [
    ("md", """# Flashback: a recorded workload replayed against other engines

Re-runs *MongoDB + RocksDB: Writing so Fast it Makes Your Head Spin* (Parse, 2015): capture a
workload, replay it against several systems at its original pace (`-style=real`), and compare
latency per operation type (average and P99), latency against documents scanned, and inserts into
a capped collection. Parse replayed production traffic; here the first system runs the bundled
application mix live and captures it, and the other systems replay that capture (or every system
replays `workload.capture_file`). Every number below comes from the run this notebook started (or
was pointed at)."""),
    *head("flashback_replay", "the flashback experiment", "flashback as fb"),
    ("md", """## What ran

`flashback` says which system recorded and which replayed; `lag p99` is how late the replay
started its ops against the recorded schedule (99th percentile)."""),
    ("code", """display(HTML(html.table(fb.systems_table(run), "Systems")))"""),
    ("check", """# NBVAL_CHECK_OUTPUT
# The dataset each system loaded, against what the capture's header requires.
for s in run.systems:
    verified = s.get("load_verified") or {}
    found, expected = verified.get("found", {}), verified.get("expected", {})
    print(s["label"], ", ".join(f"{k} {found.get(k)}/{expected.get(k)}" for k in expected),
          "ok" if verified.get("ok") else "MISMATCH")"""),
    ("check", """# NBVAL_CHECK_OUTPUT
# Ops per type in the capture against ops replayed, per system (the stream is deterministic).
print("\\n".join(fb.check_lines(run)))"""),
    ("md", """## Latency per operation type

Per system and op type over the replay (the recorder: over its live run), from HdrHistograms
merged exactly across workers, in milliseconds. `insert.capped` is an insert into the capped
activity log. `sched_p99_ms` is the P99 from each op's scheduled start, so it includes the time an
op waited behind earlier ones; the other columns are service time, as the post's MongoDB logs
reported."""),
    ("code", """latency = fb.latency_table(run)
display(HTML(html.table(latency, "Latency per op type (ms)")))
chart = fb.latency_chart(latency)
if chart is not None:
    display(Image(charts.to_png(chart)))"""),
    ("nbval", """# NBVAL_CHECK_OUTPUT
print(latency.schema)"""),
    ("md", """## Latency against documents scanned

Each replayed query as a point (a sample of at most 2,500 per system is drawn). The line is fitted
by least squares to the median latency of each bin of documents scanned (bins doubling in width),
so it follows a typical query rather than the few a busy machine stalled; `r2 points` is the fit
over every query. The post: on RocksDB query latency grows linearly with the
documents scanned, while MMAPv1 2.6 clustered at 0-10 ms whatever the count."""),
    ("code", """points = fb.scans(run)
fitted = fb.fits(points)
if not fitted.is_empty():
    display(HTML(html.table(fitted.drop("slope_low"), "Least-squares line per system (queries)")))
chart = fb.scan_chart(points, fitted)
if chart is not None:
    display(Image(charts.to_png(chart)))"""),
    ("md", "## Capped collection\n\nInserts into the capped log (every one deletes the oldest events past the cap) beside ordinary inserts."),
    ("code", """display(HTML(html.table(fb.capped_table(run), "Capped-collection inserts (ms)")))"""),
    ("md", "## Claims\n\nThe post's findings (claims.csv, fb.*), evaluated on this run. `measured` is a ratio, except where `from` says it is in ms."),
    ("code", """claims = repeats.claims(run, fb.claims_table)  # combined over REPEAT=n runs
display(HTML(html.table(claims.select("id", "claim", "measured_ratio", "expect", "verdict", "from", "reason"),
                        "Claims", classes={"holds": "eb-holds", "does not hold": "eb-fails", "not evaluated": "eb-na"})))"""),
    ("md", "## Findings"),
    ("code", """display(Markdown(fb.findings(run, claims)))"""),
    *FOOT,
]

NOTEBOOKS = {"linkbench": LINKBENCH, "iibench": IIBENCH, "sysbench": SYSBENCH, "tokumx": TOKUMX,
             "flashback": FLASHBACK}


def build(cells) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "enginebench", "display_name": "Python (enginebench)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, source in cells:
        if kind == "md":
            nb.cells.append(new_markdown_cell(source))
        else:
            cell = new_code_cell(source)
            if kind == "params":
                cell.metadata["tags"] = ["parameters"]
            elif kind == "run":
                cell.metadata["tags"] = ["hide-output"]
            elif kind == "nbval":
                cell.metadata["tags"] = [NBVAL_ONLY_TAG]
            nb.cells.append(cell)
    return nb


def keep_checked_outputs(path: Path) -> None:
    """Drop outputs of every cell nbval does not check, so the stored notebook holds only the
    deterministic reference outputs (and no timings, charts or host facts)."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if "NBVAL_CHECK_OUTPUT" not in cell.source:
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
        cell.metadata.pop("papermill", None)
    nb.metadata.pop("papermill", None)
    nbformat.write(nb, path)


if __name__ == "__main__":
    # tools/make_notebooks.py [--strip] [name ...]: all notebooks unless names are given.
    args = sys.argv[1:]
    strip = "--strip" in args
    names = [a for a in args if a != "--strip"] or list(NOTEBOOKS)
    unknown = [n for n in names if n not in NOTEBOOKS]
    if unknown:
        sys.exit(f"make_notebooks.py: unknown notebook(s) {', '.join(unknown)}; allowed: {', '.join(NOTEBOOKS)}")
    for name in names:
        path = ROOT / "notebooks" / f"{name}.ipynb"
        if strip:
            keep_checked_outputs(path)
        else:
            nbformat.write(build(NOTEBOOKS[name]), path)
