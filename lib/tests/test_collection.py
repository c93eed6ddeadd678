"""`make all`: every experiment in turn, skipping one already run from this code and params, and
saying so; then the collection page (collection.py)."""
import json
import shutil
from pathlib import Path

import pytest

from conftest import smoke_run_fixture
from enginebench import collection, experiment


# One real iibench smoke run (the collection's unit of work), made once for this module.
iibench_run = smoke_run_fixture("iibench_500m", "embedded")


@pytest.fixture
def one_experiment(isolated_run, monkeypatch, tmp_path, iibench_run):
    """The collection cut to iibench's smoke scale, each experiment "run" without its notebook by
    copying the module's real run into this test's results under a run id of its own (the
    skipping is what is tested here, not the run or the report), on a clean tree of a known
    commit."""
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(tmp_path / "reports"))
    monkeypatch.setattr(collection, "experiments", lambda: ["iibench_500m"])
    ran = []

    def run_experiment(exp, scale, target):
        assert (exp, scale, target) == ("iibench_500m", "smoke", "embedded")
        run_id = f"{iibench_run.path.name}-{len(ran)}"  # later ones sort after: the newest is the last copied
        copy = Path(isolated_run / "results" / exp / run_id)
        shutil.copytree(iibench_run.path, copy)
        manifest = json.loads((copy / "manifest.json").read_text())
        (copy / "manifest.json").write_text(json.dumps({**manifest, "run_id": run_id}))
        ran.append(copy)
    monkeypatch.setattr(experiment, "run_experiment", run_experiment)
    return ran


def _as_clean_clone(monkeypatch, run):
    """The run's manifest as a clean clone of its commit would have written it."""
    path = run / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["git"]["dirty"] = False
    path.write_text(json.dumps(manifest))
    monkeypatch.setattr(collection, "git_state", lambda: {"sha": manifest["git"]["sha"], "dirty": False})


def test_a_second_make_all_skips_what_this_code_already_ran_and_says_so(one_experiment, monkeypatch, capsys):
    collection.run_all("smoke", "embedded")
    (first,) = one_experiment
    assert json.loads((first / "manifest.json").read_text())["status"] == "complete"
    assert "[collection] 1 of 1: iibench_500m at smoke" in capsys.readouterr().err
    _as_clean_clone(monkeypatch, first)
    page = collection.run_all("smoke", "embedded")
    err = capsys.readouterr().err
    assert len(one_experiment) == 1, "nothing ran the second time"
    assert f"skipped, {first.name} is a complete run of this code and these params" in err
    assert page.name == "index.html" and (page.parent / "claims.json").exists()
    # Asked to, it runs again; a different commit or a dirty tree never reuses a run.
    collection.run_all("smoke", "embedded", force=True)
    assert len(one_experiment) == 2
    monkeypatch.setattr(collection, "git_state", lambda: {"sha": "another", "dirty": False})
    assert collection.reusable_run("iibench_500m", "smoke", "embedded") is None
    monkeypatch.setattr(collection, "git_state", lambda: {"sha": json.loads((first / "manifest.json").read_text())["git"]["sha"], "dirty": True})
    assert collection.reusable_run("iibench_500m", "smoke", "embedded") is None


def test_an_interrupted_run_is_run_again(one_experiment, monkeypatch):
    collection.run_all("smoke", "embedded")
    (first,) = one_experiment
    _as_clean_clone(monkeypatch, first)
    manifest = json.loads((first / "manifest.json").read_text())
    manifest["status"] = "aborted"  # as a Ctrl-C leaves it
    (first / "manifest.json").write_text(json.dumps(manifest))
    collection.run_all("smoke", "embedded")
    assert len(one_experiment) == 2
