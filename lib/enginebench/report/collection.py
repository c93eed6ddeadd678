"""The collection page: every claim of data/reference/claims.csv, one row per claim and target,
grouped by study, with the post's figure beside ours, the verdict with its size and what it rests
on (scale, steadiness and host drift as the verdict says them, runs, target), linked to the run's
report. Its data ships beside it (reports/claims.json and reports/claims.csv: one row per claim
and run, every scale and target), read from each run's summary.json, the verdicts its own report
showed, so the page and the reports never disagree. It reads offline: the filters are a few lines
of inline script over the table.

A row comes from the newest complete run of the claim's experiment on one kind of target, at the
largest scale that has one; runs on different targets (the embedded engines, a mongod, a server
behind a URI) are never mixed in one row.

Runs from several hosts (`make all CLUSTER=...`, docs/cluster.md) each count: per claim, the data
has a row per host (its newest complete run there, the hardware it ran on) and a row over all of
them, judged as repeats are (report/repeats.py combine_claims: the same verdict on every host, or
inconclusive), with the spread of the ratio between hosts. The page shows the row over all hosts
and names each host's verdict beside it; a run on one host reads as it always did, its host named.
"""
from __future__ import annotations

import csv
import html
import json
import math
import os
import re
from pathlib import Path
from typing import Callable

import polars as pl

from ..paths import reference_dir, results_dir
from .claims import FAILS, HOLDS, NOT_EVALUATED, VERDICT_CLASSES
from .runs import host_of, runs_by_experiment, runs_of_the_params

# The five posts (data/reference/README.md names each source).
STUDIES = {
    "000": ("LinkBench", "MongoDB 3.2 vs Linkbench, 2015-11-04",
            "http://smalldatum.blogspot.com/2015/11/mongodb-32-vs-linkbench.html"),
    "001": ("iibench", "WiredTiger improvements from MongoDB 3.0 to 3.1, 2015-07-08", ""),
    "002": ("sysbench", "MongoDB sysbench-mongo benchmark, 2015",
            "https://benchmark-docs.readthedocs.io/en/latest/mongodb-sysbench-hppro2.html"),
    "003": ("Flashback", "MongoDB + RocksDB: Writing so Fast it Makes Your Head Spin, Parse, 2015", ""),
    "004": ("TokuMX", "TokuMX vs MongoDB, Severalnines, 2013-08-27", ""),
}
SCALE_ORDER = ("paper", "default", "smoke")
FIELDS = ("study", "claim_id", "claim", "experiment", "target", "scale", "run_id", "runs", "published_ratio",
          "measured_ratio", "verdict", "size", "reason", "from", "report", "why_it_differs", "explain_page",
          "host", "hardware", "hosts", "per_host", "host_spread")
# The `host` of a row judged over every host's run (the page's row when there are several).
ALL_HOSTS = "all hosts"


def _study(seed: str) -> tuple[str, str, str]:
    return STUDIES.get(seed[:3], (seed, seed, ""))


def _verdicts(run: Path) -> list[dict] | None:
    """The run's claim rows as its report showed them (summary.json); for a run made without a
    report (`python -m enginebench run`), the same rows computed the way the report computes them."""
    path = run / "summary.json"
    if path.is_file():
        return json.loads(path.read_text()).get("claims", [])
    from ..families import FAMILIES
    from . import repeats
    from .rundata import load_run
    from .summary import json_safe
    data = load_run(run)
    family = FAMILIES.get(data.manifest["params"].get("notebook"))
    if family is None:
        return None
    return json_safe(repeats.claims(data, family.report_module().claims_table).to_dicts())


def hardware(manifest: dict) -> str:
    """What a run's host was: CPU, its count, memory, and its speed probe at the run's start."""
    host = manifest.get("host") or {}
    parts = [host.get("cpu_model") or "CPU not recorded"]
    if host.get("logical_cpus"):
        parts.append(f"{host['logical_cpus']} CPUs")
    if host.get("memory_bytes"):
        parts.append(f"{host['memory_bytes'] / 2**30:.0f} GiB")
    probe = ((host.get("speed") or {}).get("start") or {}).get("docs_per_s")
    if probe:
        parts.append(f"probe {probe / 1000:.0f}k docs/s")
    return ", ".join(parts)


def _runs_per_target(runs: list[Path]) -> dict[tuple[str, str], dict[str, list[Path]]]:
    """(target kind, scale) -> {host: the runs of the experiment's own params a claim may read
    there (runs.runs_of_the_params)}."""
    groups: dict[tuple[str, str, str], list[Path]] = {}
    for run in runs:
        manifest = json.loads((run / "manifest.json").read_text())
        kind = (manifest.get("target") or {}).get("kind") or "embedded"
        groups.setdefault((kind, manifest.get("scale") or "", host_of(manifest)), []).append(run)
    chosen: dict[tuple[str, str], dict[str, list[Path]]] = {}
    for (kind, scale, host), group in sorted(groups.items()):
        candidates = runs_of_the_params(group)
        if candidates:
            chosen.setdefault((kind, scale), {})[host] = candidates
    return chosen


def _claim_verdict(candidates: list[Path], claim_id: str,
                   verdicts_of: Callable[[Path], list[dict] | None] | None = None) -> tuple[Path, dict] | None:
    """The claim's verdict from the first run that judged it, else from the first that names it
    at all (its 'not evaluated' and why): runs of a selection each judge only their systems' claims.
    `verdicts_of`: a run's claim rows (_verdicts by default; claim_rows passes one that reads each
    run once for all its claims)."""
    named = []
    for run in candidates:
        verdict = next((c for c in (verdicts_of or _verdicts)(run) or [] if c["id"] == claim_id), None)
        if verdict is None:
            continue
        if verdict["verdict"] != NOT_EVALUATED:
            return run, verdict
        named.append((run, verdict))
    return named[0] if named else None


def _spread(ratios: list[float]) -> str:
    """The ratio's range between hosts, with its coefficient of variation."""
    if len(ratios) < 2:
        return "one host measured a ratio" if ratios else "no host measured a ratio"
    mean = sum(ratios) / len(ratios)
    sd = math.sqrt(sum((r - mean) ** 2 for r in ratios) / (len(ratios) - 1))
    cv = f", CV {100 * sd / abs(mean):.0f}%" if mean else ""
    return f"ratio {min(ratios):.2f} to {max(ratios):.2f} between hosts{cv}"


def over_hosts(per_host: list[dict], verdicts: list[dict]) -> dict:
    """One claim's row over every host's run, judged as repeats are (repeats.combine_claims):
    the verdict every host gave, `inconclusive` where they disagree, `within noise` where the
    hosts' spread reaches the bound; each host's verdict and the spread between them named."""
    from .repeats import combine_claims
    from .trust import with_size
    # One frame, so every host's row has the same column types; the size is judged again over the hosts.
    table = pl.DataFrame(verdicts).drop("size", strict=False)
    combined = with_size(combine_claims([table.slice(i, 1) for i in range(table.height)])).row(0, named=True)
    ratios = [v["measured_ratio"] for v in verdicts
              if isinstance(v.get("measured_ratio"), (int, float)) and math.isfinite(v["measured_ratio"])]
    first = per_host[0]
    return {**first, "run_id": " ".join(r["run_id"] for r in per_host), "runs": sum(r["runs"] for r in per_host),
            "measured_ratio": combined.get("measured_ratio"), "verdict": combined["verdict"],
            "size": combined.get("size", ""), "reason": combined.get("reason", ""), "from": combined.get("from", ""),
            "report": "", "host": ALL_HOSTS, "hardware": "; ".join(f"{r['host']}: {r['hardware']}" for r in per_host),
            "hosts": len(per_host),
            "per_host": "; ".join(f"{r['host']}: {r['verdict']} at {_ratio(r['measured_ratio'])}" for r in per_host),
            "host_spread": _spread(ratios)}


def claim_rows() -> list[dict]:
    """One row per claim and chosen run (every target and scale); a claim no run has judged gets
    one row saying so."""
    claims = pl.read_csv(reference_dir() / "claims.csv", infer_schema_length=0)
    by_experiment = runs_by_experiment(results_dir())
    read: dict[Path, list[dict] | None] = {}

    def verdicts_of(run: Path) -> list[dict] | None:  # each run's summary read once, not once a claim
        if run not in read:
            read[run] = _verdicts(run)
        return read[run]
    rows = []
    for claim in claims.iter_rows(named=True):
        study = _study(claim["seed"])[0]
        found = False
        for exp in re.split(r"[|+]", claim["experiment"]):
            for (kind, scale), by_host in sorted(_runs_per_target(by_experiment.get(exp, [])).items()):
                per_host, verdicts = [], []
                for host, candidates in by_host.items():
                    found_verdict = _claim_verdict(candidates, claim["id"], verdicts_of)
                    if found_verdict is None:
                        continue
                    run, verdict = found_verdict
                    manifest = json.loads((run / "manifest.json").read_text())
                    verdicts.append(verdict)
                    per_host.append({
                        "study": study, "claim_id": claim["id"], "claim": claim["claim"], "experiment": exp,
                        "target": kind, "scale": scale, "run_id": run.name,
                        "runs": (manifest.get("repeat") or {}).get("of", 1),
                        "published_ratio": verdict.get("published_ratio"),
                        "measured_ratio": verdict.get("measured_ratio"), "verdict": verdict["verdict"],
                        "size": verdict.get("size", ""), "reason": verdict.get("reason", ""),
                        "from": verdict.get("from", ""),
                        "report": str(run / "report.html") if (run / "report.html").is_file() else "",
                        "host": host, "hardware": hardware(manifest), "hosts": 1, "per_host": "", "host_spread": "",
                        **why_it_differs(exp, claim["id"], verdict, scale)})
                if not per_host:
                    continue
                found = True
                rows.extend(per_host)
                if len(per_host) > 1:
                    combined = over_hosts(per_host, verdicts)
                    rows.append({**combined, **why_it_differs(exp, claim["id"], combined, scale)})
        if not found:
            first = re.split(r"[|+]", claim["experiment"])[0]
            rows.append({"study": study, "claim_id": claim["id"], "claim": claim["claim"],
                         "experiment": claim["experiment"], "target": "", "scale": "", "run_id": "", "runs": 0,
                         "published_ratio": float(claim["reference_ratio"]) if claim["reference_ratio"] else None,
                         "measured_ratio": None, "verdict": "no run yet",
                         "size": "", "reason": f"no complete run: make experiment EXP={first}",
                         "from": "", "report": "", "why_it_differs": "", "explain_page": "",
                         "host": "", "hardware": "", "hosts": 0, "per_host": "", "host_spread": ""})
    return rows


def why_it_differs(exp: str, claim_id: str, verdict: dict, scale: str) -> dict:
    """For a verdict that differs from the post (explain.differs): `make explain`'s answer, with
    the scale it ran at when that is not the row's, or the command that would give one."""
    from ..explain import differs, read_answer
    if not differs(verdict):
        return {"why_it_differs": "", "explain_page": ""}
    answer = read_answer(exp, claim_id)
    if answer is None:
        return {"why_it_differs": f"not explained yet: make explain EXP={exp} CLAIM={claim_id}", "explain_page": ""}
    at = "" if answer.get("scale") == scale else (
        f" (explained at the {answer.get('scale')} scale, where the base read {answer['base'].get('verdict')} at "
        f"{_ratio(answer['base'].get('ratio'))})")
    return {"why_it_differs": answer["answer"] + at, "explain_page": answer["page"]}


def _ratio(value) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "no ratio"


def page_rows(rows: list[dict]) -> list[dict]:
    """The page's rows: per claim, experiment and target, the run at the largest scale (over all
    hosts where several ran it)."""
    several = {(r["claim_id"], r["experiment"], r["target"], r["scale"]) for r in rows if r.get("host") == ALL_HOSTS}
    best: dict[tuple, dict] = {}
    for row in rows:
        if (row["claim_id"], row["experiment"], row["target"], row["scale"]) in several and row["host"] != ALL_HOSTS:
            continue  # one host's row, named in the row over all of them
        key = (row["claim_id"], row["experiment"], row["target"])
        rank = SCALE_ORDER.index(row["scale"]) if row["scale"] in SCALE_ORDER else len(SCALE_ORDER)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, row)
    return [row for _, row in best.values()]


def study_lines(rows: list[dict]) -> list[str]:
    """'LinkBench: 5 of 16 judged, 4 hold' per study, over the page's rows."""
    lines = []
    for study in dict.fromkeys(r["study"] for r in rows):
        mine = [r for r in rows if r["study"] == study]
        judged = [r for r in mine if r["verdict"] in (HOLDS, FAILS)]
        holds = sum(r["verdict"] == HOLDS for r in judged)
        lines.append(f"{study}: {len(judged)} of {len(mine)} judged, {holds} hold")
    return lines


def _cell(value, numeric: bool = False) -> str:
    if value is None or value == "":
        return "<td></td>"
    if numeric:
        return f"<td>{value:.2f}</td>" if isinstance(value, (int, float)) else f"<td>{html.escape(str(value))}</td>"
    return f"<td class='text'>{html.escape(str(value))}</td>"


def _why_cell(row: dict) -> str:
    """The explain answer, linked to its page (reports/, beside this one)."""
    why = row.get("why_it_differs") or ""
    if not row.get("explain_page"):
        return _cell(why)
    return (f"<td class='text'>{html.escape(why)} <a href='{html.escape(row['explain_page'])}'>explain page</a>"
            "</td>")


def _select(name: str, values: list[str]) -> str:
    options = "".join(f"<option>{html.escape(v)}</option>" for v in values)
    return (f"<label>{name} <select data-filter='{name}' aria-label='filter by {name}'>"
            f"<option value=''>all</option>{options}</select></label> ")


FILTER_SCRIPT = """<script>
document.querySelectorAll('select[data-filter]').forEach(function (s) {
  s.addEventListener('change', function () {
    var wanted = {};
    document.querySelectorAll('select[data-filter]').forEach(function (f) { wanted[f.dataset.filter] = f.value; });
    document.querySelectorAll('#eb-claims tbody tr').forEach(function (tr) {
      var show = Object.keys(wanted).every(function (k) { return !wanted[k] || tr.dataset[k] === wanted[k]; });
      tr.style.display = show ? '' : 'none';
    });
  });
});
</script>"""


def hosts_text(row: dict) -> str:
    """Where the row's runs ran: the host and its hardware, or over several hosts each one's
    verdict, the spread between them and each one's hardware."""
    if row.get("host") == ALL_HOSTS:
        return f"over {row['hosts']} hosts, {row['host_spread']}: {row['per_host']}. Hardware: {row['hardware']}"
    return f"{row['host']}: {row['hardware']}" if row.get("host") else ""


def claims_section(rows: list[dict], out_dir: Path) -> str:
    shown = page_rows(rows)
    trust_of = lambda r: f"{r['scale'] or 'no run'}, {r['target'] or '-'}"  # noqa: E731
    body = []
    for r in shown:
        report = (f"<a href='{html.escape(os.path.relpath(r['report'], out_dir))}'>{html.escape(r['run_id'])}</a>"
                  if r["report"] else "")
        css = VERDICT_CLASSES.get(r["verdict"], "eb-na")
        body.append(
            f"<tr data-study='{html.escape(r['study'])}' data-verdict='{html.escape(r['verdict'])}' "
            f"data-trust='{html.escape(trust_of(r))}'>"
            + _cell(r["study"]) + _cell(r["claim_id"]) + _cell(r["claim"]) + _cell(r["published_ratio"], True)
            + _cell(r["measured_ratio"], True) + f"<td class='text {css}'>{html.escape(r['verdict'])}</td>"
            + _cell(r["size"]) + _cell(trust_of(r)) + _cell(r["runs"] or "") + _cell(hosts_text(r)) + _cell(r["reason"])
            + _why_cell(r) + f"<td class='text'>{report}</td></tr>")
    head = "".join(f"<th class='text'>{h}</th>" for h in ("study", "claim", "in the post's words", "published",
                                                         "ours", "verdict", "size", "scale, target", "runs",
                                                         "host, hardware",
                                                         "why (when no verdict)", "why it differs from the post",
                                                         "run"))
    filters = (_select("study", sorted({r["study"] for r in shown})) + _select("verdict", sorted({r["verdict"] for r in shown}))
               + _select("trust", sorted({trust_of(r) for r in shown})))
    summary = "".join(f"<li>{html.escape(line)}</li>" for line in study_lines(shown))
    return (f"<h2 id='claims'>Every claim</h2><ul>{summary}</ul><p>{filters}</p>"
            "<p>Data: <a href='claims.json'>claims.json</a>, <a href='claims.csv'>claims.csv</a> (one row per claim "
            "and run, every scale and target; where several hosts ran an experiment, a row per host and one over "
            f"all of them, host '{ALL_HOSTS}').</p>"
            f"<table class='eb-table' id='eb-claims'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            + FILTER_SCRIPT)


def write_data(rows: list[dict], out_dir: Path) -> None:
    (out_dir / "claims.json").write_text(json.dumps(rows, indent=1, default=str))
    with open(out_dir / "claims.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def collection_section(out_dir: Path) -> str:
    """The claims section of reports/index.html; its data written beside it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = claim_rows()
    write_data(rows, out_dir)
    return claims_section(rows, out_dir)


def write_collection() -> Path:
    """reports/index.html: every claim, then every run (report/index.py)."""
    from .index import write_index
    return write_index()

