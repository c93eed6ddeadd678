"""`make all`: every experiment in turn, skipping one already run from this code and params, and
saying so; then the collection page (collection.py)."""
import json

import pytest

from enginebench import collection, driver, experiment


@pytest.fixture
def one_experiment(isolated_run, monkeypatch, tmp_path):
    """The collection cut to iibench's smoke scale, each experiment run without its notebook (the
    skipping is what is tested here, not the report), on a clean tree of a known commit."""
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(tmp_path / "reports"))
    monkeypatch.setattr(collection, "experiments", lambda: ["iibench_500m"])
    ran = []
    monkeypatch.setattr(experiment, "run_experiment",
                        lambda exp, scale, target: ran.append(driver.run(exp, scale, target)))
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
