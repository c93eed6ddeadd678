"""`make experiment` at smoke scale, and the report page opened in headless Chromium: it renders
offline, with no console errors, every chart image decoded, and the sections a reader needs."""
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
from io import StringIO

import polars as pl
import pytest

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
IMAGE_PROBE = """<script>window.addEventListener('load', () => {
  const imgs = [...document.images];
  document.title = 'IMAGES ' + imgs.length + ' ' + imgs.filter(i => i.complete && i.naturalWidth > 0).length;
});</script>"""


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "headless Chromium is needed (Debian package chromium; `make setup` installs it)"
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    base = tmp_path_factory.mktemp("report")
    env = {**os.environ, "ENGINEBENCH_RESULTS": str(base / "results"), "ENGINEBENCH_DATA": str(base / "data"),
           "ENGINEBENCH_REPORTS": str(base / "reports")}
    out = subprocess.run([sys.executable, "-m", "enginebench", "experiment", "linkbench_cached", "--scale", "smoke"],
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    page = base / "reports" / "linkbench_cached.html"
    assert page.exists()
    runs = list((base / "results" / "linkbench_cached").iterdir())
    assert len(runs) == 1 and (runs[0] / "report.html").exists(), "the report is kept with its run"
    return page


def test_page_has_no_remote_resources(report):
    text = report.read_text()
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=[\"']https?://", text)


def test_page_renders_in_chromium(report, tmp_path):
    probe = tmp_path / "probe.html"
    probe.write_text(report.read_text().replace("</body>", IMAGE_PROBE + "</body>"))
    shot = tmp_path / "report.png"
    run = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                          "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
                          "--window-size=1300,4000", f"--screenshot={shot}", probe.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert shot.exists() and shot.read_bytes()[:4] == b"\x89PNG", run.stderr[-2000:]
    console_errors = [l for l in run.stderr.splitlines() if "CONSOLE" in l and ("Uncaught" in l or "rror" in l)]
    assert not console_errors, console_errors
    dom = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile2'}",
                          "--virtual-time-budget=10000", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    match = re.search(r"<title>IMAGES (\d+) (\d+)</title>", dom)
    assert match, "the page did not finish loading"
    total, decoded = map(int, match.groups())
    assert total >= 5 and decoded == total, f"{decoded} of {total} chart images decoded"
    for heading in ("Load phase", "Query phase", "Response time", "Claims", "Findings", "Provenance"):
        assert heading in dom, heading
    assert "wt.op1" in dom and "rx.op1" in dom
    # A smoke run checks the pipeline: its claims carry no verdict, in the table and the findings.
    assert "smoke: pipeline check, no verdict" in dom
    assert not re.search(r"<td class='text eb-holds'>|<td class=\"text eb-holds\">", dom)


def test_every_table_has_a_csv_link_with_its_rows(report):
    text = report.read_text()
    tables = re.findall(r"<table class=[\"']eb-table[\"']>(.*?)</table>", text, re.S)
    with_data = [t for t in tables if "<thead>" in t]  # the provenance table is key/value text
    assert with_data and all("data:text/csv" in t for t in with_data)
    for table in with_data:
        href = re.search(r"href=[\"']data:text/csv;charset=utf-8,([^\"']*)", table).group(1)
        assert pl.read_csv(StringIO(urllib.parse.unquote(href))).height == table.count("<tr>") - 1  # less the header


def test_charts_are_svg_with_alt_text_and_the_page_is_light(report):
    text = report.read_text()
    images = re.findall(r"<img class=[\"']eb-chart[\"'] alt=[\"']([^\"']+)[\"'] src=[\"']data:image/(svg|png)", text)
    assert len(images) >= 5 and all(len(alt) > 40 for alt, _ in images)
    assert "No description has been provided" not in text
    assert len(text.encode()) < 600_000, "charts as PNG and the lab style sheets made 2.3 MB"


def test_summary_and_run_file_links(report):
    run = next((report.parent.parent / "results" / "linkbench_cached").iterdir())
    summary = json.loads((run / "summary.json").read_text())
    assert summary["run_id"] == run.name and summary["status"] == "complete"
    wt = summary["systems"]["wt.op1"]["phases"]
    assert wt["run"]["ops_per_s"] > 0 and wt["run"]["latency_ms"]["GET_LINKS_LIST"]["p99_ms"] > 0
    verdicts = [c["verdict"] for c in summary["claims"]]
    assert verdicts and "smoke: pipeline check, no verdict" in verdicts and sum(summary["verdicts"].values()) == len(verdicts)
    for page in (report, run / "report.html"):
        links = re.findall(r"class=[\"']eb-runfile[\"'] href=[\"']([^\"']+)", page.read_text())
        assert "intervals.parquet" in " ".join(links)
        assert all((page.parent / link).resolve().exists() for link in links), links


def _csv_tables(text: str) -> list[pl.DataFrame]:
    found = re.findall(r"href=[\"']data:text/csv;charset=utf-8,([^\"']*)", text)
    return [pl.read_csv(StringIO(urllib.parse.unquote(href))) for href in found]


def test_each_headline_figure_reads_the_same_wherever_the_page_shows_it(report):
    """The rendered page, as a reader gets it: the first screen's sentences, the claims table and
    "Against the post" give a claim's two ratios, the post's and ours, as one value each."""
    import html as html_text

    from enginebench.report.claims import claim_figure
    from one_value import check_pairs_show_their_claims
    text = report.read_text()
    tables = _csv_tables(text)
    claims = next(t for t in tables if {"id", "published_ratio", "measured_ratio"} <= set(t.columns))
    pairs = next(t for t in tables if {"claim", "the post's ratio", "our ratio"} <= set(t.columns))
    assert check_pairs_show_their_claims(pairs, claims) == 4
    answer = html_text.unescape(re.search(r"<div class=[\"']eb-answer[\"']>(.*?)</div>", text, re.S).group(1))
    sentences = re.findall(r"<li>(.*?)</li>", answer)
    for sentence, row in zip(sentences, claims.head(len(sentences)).iter_rows(named=True), strict=True):
        for figure in (row["published_ratio"], row["measured_ratio"]):
            shown = claim_figure(figure, row["expect"])
            assert shown is None or shown in sentence, (row["id"], shown, sentence)


def test_the_engines_checkpoints_are_marked_in_the_measured_time(report):
    """The smoke scale stands for the post's hour (1-s checkpoints, the floor): WiredTiger's
    checkpoints are read from its counters during the phases and shaded on the per-second rate."""
    from enginebench.report import checkpoints
    from enginebench.report.rundata import load_run
    run = load_run(next((report.parent.parent / "results" / "linkbench_cached").iterdir()))
    spans = checkpoints.spans(run)
    assert not spans.is_empty() and set(spans["system"]) <= {"wt.op1", "wtlsm.op1", "wt307.op1"}
    ended = spans.filter(pl.col("ended").is_not_null())
    assert ended.height and (ended["seconds"] >= 0).all() and (ended["began"] <= ended["ended"]).all()
    # No checkpoint between load and queries: the quiesce says so.
    from enginebench.report.rundata import system_events
    assert [e["checkpoint"] for e in system_events(run, "wt.op1", "quiesce")] == [False]
    text = report.read_text()
    assert "checkpointed every 1 s, 600 s × 2 / 3600 (the floor)" in text
    assert "The engines&#x27; checkpoints inside each phase" in text or "The engines' checkpoints inside each phase" in text


def test_the_stand_in_layer_is_measured_and_the_embedded_claims_add_it(report, monkeypatch):
    """`make server-cost` on LinkBench (a short phase): the stand-in's CPU per operation, then the
    embedded smoke run's ratios with it added, each pulled toward 1 and never across."""
    from enginebench import server_cost, standin
    from enginebench.families.linkbench import report as linkbench_report
    from enginebench.report import server_cost as layer
    from enginebench.report.rundata import load_run
    if standin.missing():
        pytest.skip(standin.missing())
    base = report.parent.parent
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(base / "server-cost-results"))
    monkeypatch.setenv("ENGINEBENCH_DATA", str(base / "data"))
    path = server_cost.measure(("linkbench_cached",), sets=["phases.measure.duration_s=3"])
    measured = server_cost.latest()
    assert measured["path"] == str(path) and "git" in measured
    for phase in ("load", "run"):
        figure, where = server_cost.figure(measured, "linkbench_cached", "linkbench", phase)
        assert figure > 0 and where == "linkbench_cached"
    # Another experiment of the family reads the family's figure.
    assert server_cost.figure(measured, "linkbench_uncached_disk", "linkbench", "run")[1] == "linkbench_cached"
    embedded = load_run(next((base / "results" / "linkbench_cached").iterdir()))
    found = layer.table(embedded, linkbench_report.claims_table(embedded), measured)
    assert {"lb.load.btree_vs_lsm", "lb.query.cached.btree_vs_lsm"} <= set(found["id"])
    for row in found.to_dicts():  # toward 1, never past it
        before, after = row["measured_ratio"], row["ratio with the layer"]
        assert min(before, 1) - 0.01 <= after <= max(before, 1) + 0.01
    assert "upper bound" in layer.sentence(embedded, measured, found)
