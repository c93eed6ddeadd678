"""Each run keeps its own report; reports/<exp>.html and the index follow the newest complete run
per experiment (and, in the index, per scale); `make compare` names a run it cannot find in one line."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

EXP = "iibench_500m"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """One real smoke run, and copies of it standing for later runs that failed: the index and
    reports/<exp>.html read only a run's status and scale from its manifest."""
    base = tmp_path_factory.mktemp("runs")
    env = {**os.environ, "ENGINEBENCH_RESULTS": str(base / "results"), "ENGINEBENCH_DATA": str(base / "data"),
           "ENGINEBENCH_REPORTS": str(base / "reports")}
    out = subprocess.run([sys.executable, "-m", "enginebench", "run", EXP, "--scale", "smoke"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    (complete,) = (base / "results" / EXP).iterdir()
    newer_failed = _copy(complete, "29991231-000000-failed", status="failed")
    default_failed = _copy(complete, "29991231-000001-default", status="failed", scale="default")
    return {"env": env, "base": base, "summary": out.stdout, "complete": complete, "newer_failed": newer_failed,
            "default_failed": default_failed}


def _copy(run: Path, run_id: str, **changes) -> Path:
    copy = run.parent / run_id
    shutil.copytree(run, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest.update(run_id=run_id, **changes)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


def test_a_run_ends_with_one_paragraph_summary(results):
    (paragraph,) = results["summary"].strip().splitlines()
    assert paragraph.startswith(f"{EXP} at smoke scale on the embedded target ended complete")
    assert re.search(r"Claims: smoke: pipeline check, no verdict \(\d+ claims measured, \d+ not evaluated\) "
                     r"\(a smoke run checks", paragraph), paragraph
    assert "Systems: rx complete, wt complete" in paragraph and str(results["complete"]) in paragraph
    assert f"RUN={results['complete']} renders one" in paragraph


def test_index_shows_the_latest_complete_run_per_scale_with_status(results):
    out = subprocess.run([sys.executable, "-m", "enginebench", "reports"], env=results["env"], check=True,
                         capture_output=True, text=True, timeout=300)
    index = Path(out.stdout.split("index: ")[1].strip())
    rows = {re.search(r"<td class='text'>(smoke|default)</td>", row).group(1): row
            for row in index.read_text().split("id='runs'")[1].split("<tr>")[2:]}
    smoke, default = rows["smoke"], rows["default"]
    # The newer failed run does not stand in for the complete one; it is linked with its status.
    # (a smoke run's claims carry no verdict: the pipeline check says so instead)
    assert f"<td class='text'>{results['complete'].name}</td>" in smoke and "smoke: pipeline check, no verdict" in smoke
    assert f"{results['newer_failed'].name} (failed; no report:" in smoke
    # A scale with no complete run says so and shows no verdicts of a run that did not finish.
    assert "none complete" in default and "no run at this scale completed (the latest is failed)" in default
    assert "hold</span>" not in default
    links = re.findall(r"href='([^']+)'", index.read_text())
    assert links and all((index.parent / link).resolve().exists() for link in links)


def test_each_run_keeps_its_own_report_and_a_failed_one_never_replaces_the_latest(results, monkeypatch):
    from enginebench.experiment import publish_if_latest_complete, run_experiment
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(results["base"] / "reports"))
    complete = results["complete"]
    (complete / "report.html").write_text("<p>the complete run's report</p>")
    assert publish_if_latest_complete(EXP, complete, complete / "report.html")
    latest = results["base"] / "reports" / f"{EXP}.html"
    assert latest.read_text() == "<p>the complete run's report</p>"
    # A newer run that failed gets its report, in its own folder; the latest complete one stays.
    report = run_experiment(EXP, "smoke", run_dir=str(results["newer_failed"]))
    assert report.page == results["newer_failed"] / "report.html" and report.page.stat().st_size > 10_000
    assert latest.read_text() == "<p>the complete run's report</p>"
    assert (complete / "report.html").read_text() == "<p>the complete run's report</p>"


def test_a_report_rendered_again_goes_beside_the_one_before(tmp_path):
    from enginebench.experiment import keep_earlier_report
    run = tmp_path / "run"
    run.mkdir()
    for name, text in (("report.html", "<p>first</p>"), ("summary.json", "{}"), ("manifest.json", "{}")):
        (run / name).write_text(text)
    kept = keep_earlier_report(run)
    assert sorted(p.name.split("-")[0] for p in kept) == ["report", "summary"]
    assert not (run / "report.html").exists() and (run / "manifest.json").exists()
    assert next(p for p in kept if p.suffix == ".html").read_text() == "<p>first</p>"
    assert keep_earlier_report(run) == []  # nothing left to keep


def test_the_collection_page_agrees_with_each_runs_summary(results, monkeypatch):
    """reports/claims.json and claims.csv hold, per claim, the verdict the run's own report showed
    (summary.json), and the page lists every claim of claims.csv."""
    from enginebench.experiment import run_experiment
    from enginebench.report.collection import write_collection
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(results["base"] / "results"))
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(results["base"] / "reports"))
    complete = results["complete"]
    run_experiment(EXP, "smoke", run_dir=str(complete))
    shown = {c["id"]: c for c in json.loads((complete / "summary.json").read_text())["claims"]}
    page = write_collection()
    rows = json.loads((page.parent / "claims.json").read_text())
    mine = {r["claim_id"]: r for r in rows if r["run_id"] == complete.name}
    assert mine.keys() == shown.keys() and shown
    for claim_id, row in mine.items():
        assert (row["verdict"], row["measured_ratio"]) == (shown[claim_id]["verdict"], shown[claim_id]["measured_ratio"])
    table = pl.read_csv(page.parent / "claims.csv")
    assert table.height == len(rows) and set(table["claim_id"]) == set(pl.read_csv(
        Path(__file__).resolve().parents[2] / "data" / "reference" / "claims.csv")["id"])
    text = page.read_text()
    assert "Every claim" in text and "iibench:" in text and "data-filter='verdict'" in text
    assert all(claim_id in text for claim_id in shown)


def test_a_run_of_another_experiment_is_refused_and_left_as_it_was(results):
    from enginebench.experiment import run_experiment
    complete = results["complete"]
    before = {p.name: p.stat().st_mtime_ns for p in complete.iterdir()}
    with pytest.raises(ValueError, match=rf"RUN={re.escape(str(complete))}: a run of {EXP}, not of EXP=linkbench_cached"):
        run_experiment("linkbench_cached", "smoke", run_dir=str(complete))
    assert {p.name: p.stat().st_mtime_ns for p in complete.iterdir()} == before


@pytest.mark.parametrize("args", [["nope", "nope2"], ["iibench_500m/nope", "x"]])
def test_compare_with_a_bad_run_name_is_one_clear_line(results, args):
    out = subprocess.run([sys.executable, "-m", "enginebench", "compare", *args], env=results["env"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"enginebench: error: A={args[0]}: not a results folder") and "newest runs:" in line


def test_compare_takes_run_ids(results):
    out = subprocess.run([sys.executable, "-m", "enginebench", "compare", results["complete"].name,
                          f"{EXP}/{results['newer_failed'].name}"], env=results["env"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert Path(out.stdout.split("comparison: ")[1].strip()).exists()


def test_context_tables_of_a_real_run(results):
    """The context tables of a real iibench smoke run: every row of the post's setup, the post's
    three ratios beside measured ones, and the settings the runner recorded."""
    from enginebench.report import context
    from enginebench.report.rundata import load_run
    run = load_run(results["complete"])
    scale = context.scale_mapping(run)
    assert set(scale["source"]) == {"001_722dff21ca67c6a7.txt"}
    threads = scale.filter(pl.col("setting") == "client threads").row(0, named=True)
    assert threads["the post"] == "10" and threads["this run / the post"] == pytest.approx(0.2)
    view = context.normalised_view(run)
    assert view["metric"].to_list() == ["insert rate", "query rate", "size at the end, GB"]
    # The query rate has a ratio only when both engines' queries ran: in a smoke load on a busy
    # machine one engine's load can end before its query threads' first query (iibench starts
    # them after a number of rows), and then its qrate is None, not zero.
    from enginebench.families.iibench.report import system_figures
    queried = all((system_figures(run, label) or {}).get("qrate") is not None for label in ("wt", "rx")
                  if label in run.manifest["systems"])
    measured = view if queried else view.filter(pl.col("metric") != "query rate")
    assert measured["our ratio"].is_not_null().all() and (measured["our ratio"] > 0).all()
    engines = context.engine_configuration(run)
    assert {"wt", "rx"} <= set(engines["system"]) and set(engines["settings from"]) == {"the runner"}
    assert engines.filter(pl.col("system") == "rx")["bloom_bits_per_key"][0] is not None


def test_a_real_run_records_its_systems_order_and_a_probe_before_each(results):
    """What the drift rules read (report/trust.py): the order the systems ran in and the host's
    speed just before each, and the report's context table saying both."""
    manifest = json.loads((results["complete"] / "manifest.json").read_text())
    order = manifest["order"]
    assert order["kind"] == "listed" and order["systems"] == [s["label"] for s in manifest["params"]["systems"]]
    before = manifest["host"]["speed"]["before"]
    assert list(before) == order["systems"] and all(p["docs_per_s"] > 0 for p in before.values())
    from enginebench.report.html import provenance
    from enginebench.report.rundata import load_run
    text = provenance(load_run(results["complete"]))
    assert "before each system: " in text and "listed: " in text
