"""`make help`: every experiment with its question and the time of its timed phases per scale."""
import subprocess
import sys
from pathlib import Path

import pytest

from enginebench.helptext import help_text, timed_seconds
from enginebench.params import experiments, load_params

ROOT = Path(__file__).resolve().parents[2]


def test_help_lists_every_experiment_its_question_and_the_variables():
    text = help_text()
    for exp in experiments():
        assert f"  {exp}  [smoke " in text
        first_words = " ".join(load_params(exp, "default")["question"].split()[:6])
        assert first_words in " ".join(text.split())
    for needed in ("SCALE defaults to default", "RUN=data/results/<exp>/<run>", "MONGOD=", "ENGINEBENCH_URI="):
        assert needed in text


def test_timed_seconds_adds_quiesce_measure_and_sweep_of_every_measuring_system():
    params = load_params("linkbench_cached", "smoke")
    phases = params["phases"]
    per_system = (phases["quiesce_s"] + phases["measure"]["duration_s"]
                  + phases["rate_sweep"]["seconds"] * len(phases["rate_sweep"]["fractions"]))
    measuring = [s for s in params["systems"] if s["measure_requests"]]
    assert timed_seconds(params) == (pytest.approx(per_system * len(measuring)), False)


def test_a_replay_is_open_ended_and_a_measured_load_has_no_timed_phase():
    assert timed_seconds(load_params("flashback_replay", "smoke"))[1] is True
    assert timed_seconds(load_params("iibench_500m", "smoke")) == (0, False)
    assert "iibench_500m  [smoke load only," in help_text()


def test_make_help_prints_it():
    out = subprocess.run(["make", "-s", "help", f"PY={sys.executable}"], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert "linkbench_cached  [smoke" in out.stdout and "ENGINEBENCH_URI" in out.stdout
