"""Kept loads (phases.load.reuse, loads.py): what identifies a load, the plans that keep and
restore one, a second run that measures from the first one's load, and the refusals."""
import json

import pytest

import enginebench
from enginebench.driver import run
from enginebench import loads
from enginebench.params import load_params

CODE = {"sha": "abc", "changes": None, "runner": "r"}


def _system(params: dict, label: str) -> dict:
    return next(s for s in params["systems"] if s["label"] == label)


def test_the_key_leaves_out_the_cache_and_the_measured_phases_only():
    base = load_params("linkbench_cached", "smoke")
    key = loads.load_key(base, _system(base, "wt.op1"), CODE)
    cache = load_params("linkbench_cached", "smoke", ["systems[wt.op1].options.cache_size_mb=128"])
    threads = load_params("linkbench_cached", "smoke", ["phases.measure.threads=4"])
    assert loads.load_key(cache, _system(cache, "wt.op1"), CODE) == key
    assert loads.load_key(threads, _system(threads, "wt.op1"), CODE) == key
    # What the load leaves changes with the engine's other options, the workload and the code.
    for sets in (["systems[wt.op1].options.journal_compressor=snappy"], ["workload.maxid1=3001"],
                 ["phases.load.threads=1"], ["settings=today"]):
        other = load_params("linkbench_cached", "smoke", sets)
        assert loads.load_key(other, _system(other, "wt.op1"), CODE) != key, sets
    assert loads.load_key(base, _system(base, "wt.op1"), {**CODE, "changes": "d"}) != key


def test_the_plan_keeps_after_verify_or_starts_from_the_copy():
    steps = [{"step": "load", "threads": 2, "interval_s": 1}, {"step": "verify"}, {"step": "quiesce", "seconds": 1},
             {"step": "measure", "name": "run"}]
    keeping = loads.plan_with_reuse(steps, "k", None, {"run": "r1", "system": "wt.op1"})
    assert [s["step"] for s in keeping] == ["load", "verify", "keep_load", "quiesce", "measure"]
    assert keeping[2]["dir"].endswith("/loads/k") and keeping[2]["origin"] == {"run": "r1", "system": "wt.op1", "key": "k"}
    restored = loads.plan_with_reuse(steps, "k", {"run": "r1", "system": "wt.op1"}, {})
    # The copy is verified before anything is measured from it.
    assert [s["step"] for s in restored] == ["restored", "verify", "quiesce", "measure"]


def test_a_second_run_measures_from_the_first_runs_load(isolated_run):
    sets = ["phases.load.reuse=true", "workload.maxid1=1001"]  # a small graph: the copy is what is tested
    first = run("linkbench_cached", "smoke", systems=["rx.op1"], sets=sets)
    second = run("linkbench_cached", "smoke", systems=["rx.op1"], sets=sets)
    kept = json.loads((first / "manifest.json").read_text())["systems"]["rx.op1"]
    reused = json.loads((second / "manifest.json").read_text())
    info = reused["systems"]["rx.op1"]
    assert kept["load_kept"]["bytes"] > 0 and kept["load_restored"] is None
    assert info["load_restored"]["run"] == first.name and info["load_kept"] is None
    assert reused["status"] == "complete" and info["load_verified"]["ok"]
    assert [p["phase"] for p in info["phases"]][0] == "run"  # no load phase: it was not measured
    assert info["load_verified"]["found"] == kept["load_verified"]["found"]


def test_a_family_that_needs_its_load_in_memory_refuses_a_kept_load():
    with pytest.raises(ValueError, match=r"phases.load.reuse: the sysbench family's measured phases need .*allowed for: linkbench"):
        load_params("sysbench_cgroups", "smoke", ["phases.load.reuse=true"])


def test_a_server_target_refuses_a_kept_load(isolated_run, standin_uri, monkeypatch):
    monkeypatch.setenv("ENGINEBENCH_URI", standin_uri)
    with pytest.raises(ValueError, match=r"phases.load.reuse: a kept load is for the embedded engines only"):
        run("linkbench_cached", "smoke", target="uri", sets=["phases.load.reuse=true"])
    assert not (isolated_run / "results").exists()  # refused before anything started
