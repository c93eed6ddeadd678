"""Small HTML pieces for reports: tables, the banner on top, and the provenance footer."""
from __future__ import annotations

import base64
import html
import json
import re
import urllib.parse
from datetime import datetime

import polars as pl

from ..results.calibration import END_PAUSE_S, SPEED_STEADY, drift, steady
from .engine_table import engine_configuration, split_settings
from .gaps import gap_lines
from .mmap import mmap_lock_lines
from .rundata import RunData
from .numbers import number

STYLE = """<style>
.eb-table {border-collapse: collapse; font: 13px/1.35 system-ui, sans-serif; margin: 4px 0 14px}
.eb-table caption {text-align: left; font-weight: 600; padding: 2px 0 6px}
.eb-table th, .eb-table td {border-bottom: 1px solid #ddd; padding: 3px 9px; text-align: right}
.eb-table th {background: #f4f4f4}
.eb-table td.text, .eb-table th.text {text-align: left}
.eb-banner {border-left: 4px solid #c60; background: #fff6ec; padding: 8px 12px; font: 14px system-ui, sans-serif}
.eb-ok {border-left-color: #2a7}
.eb-side {display: flex; gap: 28px; flex-wrap: wrap; align-items: flex-start}
.eb-holds {color: #176b3a; font-weight: 600} .eb-fails {color: #a3161b; font-weight: 600}
.eb-na {color: #666}
.eb-question, .eb-answer, .eb-scale {font: 15px/1.45 system-ui, sans-serif; margin: 6px 0; max-width: 62em}
.eb-answer {font-size: 16px; border-left: 4px solid #36c; padding-left: 10px}
.eb-toc {font: 14px system-ui, sans-serif; margin: 10px 0 16px}
.eb-toc ul {display: flex; flex-wrap: wrap; gap: 4px 18px; list-style: none; padding: 0; margin: 4px 0}
.eb-csv {font-weight: 400; font-size: 11px; margin-left: 8px; color: #36c}
</style>"""


def _cell(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if value != value:  # NaN
            return "n/a"
        return number(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return html.escape(str(value))


def _csv_link(df: pl.DataFrame, caption: str) -> str:
    """A link that downloads the table's values (unrounded) as CSV, carried in the page itself
    as a data: URI, so a mailed or offline page keeps it."""
    flat = df.with_columns(pl.col(c).map_elements(lambda v: json.dumps(v.to_list() if isinstance(v, pl.Series) else v,
                                                                 default=str), return_dtype=pl.Utf8)
                           for c, t in zip(df.columns, df.dtypes) if t.is_nested())
    name = re.sub(r"[^A-Za-z0-9]+", "-", caption).strip("-").lower() or "table"
    uri = "data:text/csv;charset=utf-8," + urllib.parse.quote(flat.write_csv(), safe=" ,.-_:/()+*")
    return f"<a class='eb-csv' download='{name}.csv' href='{uri}' title='the values of this table as CSV'>CSV</a>"


# The systems of the page's run that did not complete (label -> status), set by page.open_run: a
# table row that names one is tagged, so a killed system's partial figures never read as a whole run's.
PARTIAL: dict[str, str] = {}
SYSTEM_COLUMNS = ("setup", "system")


def mark_partial(systems: list[dict]) -> None:
    PARTIAL.clear()
    PARTIAL.update({s["label"]: s.get("status") for s in systems if s.get("status") not in ("complete", "not run")})


def _shown(column: str, value):
    if column in SYSTEM_COLUMNS and isinstance(value, str) and value in PARTIAL:
        return f"{value} ({PARTIAL[value]}: partial)"
    return value


def table(df: pl.DataFrame, caption: str = "", classes: dict[str, str] | None = None) -> str:
    """An HTML table with a CSV download link; text columns left-aligned. `classes` maps a cell
    value to a CSS class."""
    if df.is_empty():
        return f"<p><em>{html.escape(caption)}: no rows.</em></p>"
    text_cols = {c for c, t in zip(df.columns, df.dtypes) if t == pl.Utf8}
    head = "".join(f"<th{_class(['text'] if c in text_cols else [])}>{html.escape(c)}</th>" for c in df.columns)
    body = []
    for row in df.iter_rows():
        cells = []
        for c, v in zip(df.columns, row):
            css = ["text"] if c in text_cols else []
            if classes and isinstance(v, str) and v in classes:
                css.append(classes[v])
            cells.append(f"<td{_class(css)}>{_cell(_shown(c, v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{html.escape(caption)} {_csv_link(df, caption)}</caption>"
    return f"<table class='eb-table'>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _class(names: list[str]) -> str:
    return f" class='{' '.join(names)}'" if names else ""


def side_by_side(*parts: str) -> str:
    return STYLE + "<div class='eb-side'>" + "".join(f"<div>{p}</div>" for p in parts) + "</div>"


def causes(run: RunData) -> list[str]:
    """Why the run did not complete, first thing on the page: each system that failed, died or
    was stopped, with its cause (a full disk, a hung runner, a killed driver), and the run's own
    error."""
    m = run.manifest
    lines = []
    if m.get("status") == "died":
        died = m.get("died") or {}
        driver = died.get("driver") or {}
        lines.append(f"<b>The run died</b>: its driver (pid {driver.get('pid', 'unknown')}) ended without a word "
                     f"(killed outright, a crash or a reboot); {html.escape(str(died.get('found_by', 'a later run')))} "
                     f"found it gone at {html.escape(str(died.get('found_at', '?'))[:19])}. What was measured until "
                     f"then (last heard {html.escape(str(died.get('last_heard') or 'never')[:19])}) is kept below.")
    for s in run.systems:
        if s.get("status") not in ("complete", "not run"):
            lines.append(f"<b>{html.escape(s['label'])} {html.escape(str(s.get('status')))}: "
                         f"{html.escape(str(s.get('error') or 'no reason recorded'))}</b>")
    if m.get("error"):
        lines.append(f"<b>The run stopped on an error: {html.escape(m['error'])}.</b>")
    return lines


def banner(run: RunData) -> str:
    m = run.manifest
    lines = list(m.get("banner") or [])
    ran = [s["label"] for s in run.systems if s.get("status") == "complete"]
    not_run = [s["label"] for s in run.systems if s.get("status") == "not run"]
    lines.insert(0, f"Run {m['run_id']} of {m['experiment']} at scale {m['scale']}: status <b>{m['status']}</b>. "
                    f"Systems that completed: {', '.join(ran) or 'none'}.")
    lines[0:0] = causes(run)  # the cause on top
    if m.get("stopped"):
        lines.insert(len(causes(run)), f"<b>{html.escape(m['stopped'])}</b>")
    if not_run:
        lines.append(f"Not run: {html.escape(', '.join(not_run))}.")
    not_ok = [s for s in run.systems if s.get("status") != "complete"]
    from ..mongod.sharding import banner_lines as unspread_lines
    unspread = unspread_lines(run)  # a sharded load left on one shard: on top, after the causes
    top = len(causes(run)) + bool(m.get("stopped"))
    lines[top:top] = [f"<b>{html.escape(line)}</b>" for line in unspread]
    lines += gap_lines(run)  # what a mongod/uri server lacked, named (report/gaps.py)
    lines += mmap_lock_lines(run)  # which MMAPv1 lock the mmap stand-in emulated (report/mmap.py)
    host = m.get("host") or {}
    for reclaim in host.get("proactive_reclaim") or []:
        idle = reclaim.get("min_idle_s")
        lines.append(f"This host evicts page-cache pages idle for {f'{idle:g} s' if idle else 'a while'} on its own "
                     f"({html.escape(reclaim['mechanism'])}), whatever the free memory: data a run has not touched "
                     "that long is read again from the device: the OS page cache keeps only what the workload keeps touching.")
    speed = host.get("speed") or {}
    change = drift(speed.get("start"), speed.get("end"))
    if not steady(change):
        lines.append(f"<b>The host's speed changed during this run</b>: its probe read {change:.2f}x at the end "
                     "what it read at the start (see provenance). Figures measured late in the run (later "
                     "systems, higher client counts, later intervals) are not comparable with early ones; "
                     "repeat the run before drawing conclusions from them.")
    plan = m.get("resources") or {}
    memory = (f"{plan['memory_limit_mb']} MB ({plan.get('method_memory') or 'not enforced'})"
              if plan.get("memory_limit_mb") else "none")
    per_system = sorted({(s.get("resources") or {}).get("memory_limit_mb") for s in run.systems} - {None})
    if per_system and per_system != [plan.get("memory_limit_mb")]:
        # Systems with their own limits (sysbench's memory matrix): the experiment-wide one never applied.
        memory = (f"per system, {', '.join(str(mb) for mb in per_system)} MB "
                  f"({plan.get('method_memory') or 'not enforced'}; see the resources table)")
    storage = plan.get("storage_profile", "none")
    if storage != "none":
        scale = plan.get("storage_scale", 1.0)
        storage += (f" at {scale:g} of its caps" if scale != 1.0 else "") + f" ({plan.get('method_io') or 'not enforced'})"
    lines.append(f"Memory limit: {memory}; storage profile: {storage}.")
    plain = m["status"] == "complete" and not not_ok and not unspread
    css = "eb-banner eb-ok" if plain else "eb-banner"
    return STYLE + f"<div class='{css}'>" + "<br>".join(lines) + "</div>"


def speed_line(speed: dict | None) -> str:
    """The host's CPU speed probe at the start and the end of the run (results/calibration.py)."""
    if not speed or not speed.get("start"):
        return "not measured (run made before the probe existed)"
    start, end = speed["start"], speed.get("end")
    text = f"{start['docs_per_s']:,} docs/s at the start"
    if end:
        text += f", {end['docs_per_s']:,} at the end ({drift(start, end):.2f}x)"
        if len(end.get("readings") or []) > 1:
            text += (f" (best of {len(end['readings'])} end probes {END_PAUSE_S:g} s apart, taken again while "
                     f"outside {SPEED_STEADY[0]:g}-{SPEED_STEADY[1]:g}x: {', '.join(f'{r:,}' for r in end['readings'])})")
    before = speed.get("before") or {}
    if before:
        text += "; before each system: " + ", ".join(f"{label} {probe['docs_per_s']:,}" for label, probe in before.items())
    return text + f"; {start['probe']}. Compare runs of one host by it: a shared machine's speed drifts."


def order_line(manifest: dict) -> str:
    """The order the systems ran in, and in a repeated group why it alternates."""
    order = manifest.get("order") or {}
    if not order:
        return "as the params list them"
    text = f"{order.get('kind')}: {', '.join(order.get('systems') or [])}"
    repeat = manifest.get("repeat") or {}
    if repeat.get("of", 1) > 1:
        text += (f" (run {repeat.get('index')} of {repeat.get('of')}; the group alternates listed and reversed "
                 "orders where the family allows, so a steady drift of the host cancels in its mean)")
    return text


def runner_line(info: dict) -> str:
    """Which runner ran a system and whose code its CPU went to, per phase (metrics/perfshare.py)."""
    runner = info.get("runner") or {}
    text = f"{runner.get('runner', 'python')} runner {runner.get('version', '')}".replace("  ", " ").strip()
    attribution = info.get("cpu_attribution") or {}
    if "unavailable" in attribution:
        return f"{text}; CPU by code: not measured ({attribution['unavailable']})"
    parts = []
    for phase, share in attribution.items():
        if "error" in share:
            parts.append(f"{phase}: {share['error']}")
        else:
            # The engine with the C library and system calls it makes is the headline (what it
            # would cost a server); its own frames alone beside it, named.
            if share.get("engine_with_calls") is not None:
                engine = (f"engine {share['engine_with_calls']:.0%} with the calls it makes "
                          f"({share['engine']:.0%} strict, in its own code)")
            else:
                engine = f"engine {share['engine']:.0%} strict (no call chains recorded)"
            parts.append(f"{phase}: {engine}, runner {share['runner']:.0%}, "
                         f"libc {share['libc']:.0%}, kernel {share['kernel']:.0%}")
    return text + ("; CPU by code (perf): " + "; ".join(parts) if parts else "")


def provenance(run: RunData) -> str:
    m = run.manifest
    host = m.get("host", {})
    git = m.get("git", {})
    fs = host.get("data_filesystem", {})
    rows = [
        ("run folder", str(run.path)), ("status", m.get("status")),
        ("started / finished (UTC)", f"{m.get('started_at')} / {m.get('finished_at')}"),
        ("params", f"{m['params'].get('params_file')} (scale {m['scale']})"
                   + (f"; SYSTEMS={','.join(m['selection']['ran'])}, not run: {', '.join(m['selection']['not_run'])}"
                      if m.get("selection") else "")),
        ("code", f"git {git.get('sha') or 'unknown'}{' (uncommitted changes)' if git.get('dirty') else ''}"),
        ("host", f"{host.get('hostname')}: {host.get('cpu_model')}, {host.get('logical_cpus')} logical CPUs, "
                 f"{(host.get('memory_bytes') or 0) / 2**30:.1f} GiB RAM, Linux {host.get('kernel')}"),
        ("host speed (probe)", speed_line(host.get("speed"))),
        ("systems' order", order_line(m)),
        ("data filesystem", f"{fs.get('device')} ({fs.get('fstype')}) on {fs.get('mountpoint')}"),
        ("packages", ", ".join(f"{k} {v}" for k, v in (m.get("packages") or {}).items() if v)),
    ]
    for label, info in (m.get("systems") or {}).items():
        rows.append((f"system {label}", f"{info.get('version')}; device {info.get('device')}; "
                                        "settings: the engine configuration table below"))
        rows.append((f"runner of {label}", runner_line(info)))
    body = "".join(f"<tr><th class='text'>{html.escape(k)}</th><td class='text'>{html.escape(str(v))}</td></tr>" for k, v in rows)
    differing, shared = split_settings(engine_configuration(run))
    engines = table(differing, "Engine settings that differ between the systems, as the runner recorded them "
                               "(n/a: not a setting of that engine; each named setting's values and sources: "
                               "docs/settings.md)")
    if shared:
        engines += ("<p>Settings the systems share: " + "; ".join(html.escape(line) for line in shared)
                    + ". The run's manifest.json holds every recorded setting.</p>")
    return STYLE + f"<table class='eb-table'><caption>Provenance</caption>{body}</table>" + engines + run_files(run)


# Links to files of the run folder carry this class: the page is written beside them as
# <run>/report.html, and experiment.to_html points them at the run folder in reports/<exp>.html.
RUN_FILE_CLASS = "eb-runfile"


def run_files(run: RunData) -> str:
    """Links to the run's own data (its parquet tables and manifest), for analysis elsewhere."""
    files = sorted(p.name for p in run.path.glob("*.parquet")) + ["manifest.json", "summary.json"]
    links = " · ".join(f"<a class='{RUN_FILE_CLASS}' href='{html.escape(name)}'>{html.escape(name)}</a>"
                       for name in files)
    return (f"<p class='eb-files'>The run's data, in its folder {html.escape(str(run.path))}: {links} "
            "(summary.json: headline numbers and claim verdicts, machine-readable).</p>")


def png_img(png: bytes, alt: str) -> str:
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{base64.b64encode(png).decode()}' style='max-width:100%'>"


def stamp() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M")
