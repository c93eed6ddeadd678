"""`make bench LINKBENCH_RUN=...`: the headline figures come from the run named only when it is a
complete linkbench_cached run at the default scale; anything else is one error naming the file,
what was found and what is needed, before anything runs."""
import json

import pytest

from enginebench import bench


def _run(tmp_path, experiment, scale, status):
    path = tmp_path / experiment / "20990101-000000-host"
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"experiment": experiment, "scale": scale, "status": status}))
    return path


def test_a_complete_default_linkbench_cached_run_is_taken_as_it_is(tmp_path):
    path = _run(tmp_path, "linkbench_cached", "default", "complete")
    assert bench.linkbench_run(str(path)) == path


@pytest.mark.parametrize("experiment, scale, status", [("linkbench_cached", "smoke", "complete"),
                                                       ("iibench_500m", "default", "complete"),
                                                       ("linkbench_cached", "default", "aborted")])
def test_any_other_run_is_refused_naming_what_it_is(tmp_path, experiment, scale, status):
    path = _run(tmp_path, experiment, scale, status)
    with pytest.raises(ValueError) as error:
        bench.linkbench_run(str(path))
    message = str(error.value)
    assert str(path / "manifest.json") in message and "LINKBENCH_RUN" in message
    assert f"{experiment} at scale {scale}, {status}" in message


@pytest.mark.parametrize("experiment", bench.FAMILIES)
def test_each_family_s_bench_work_resolves_against_its_smoke_params(experiment):
    """`make bench` must not fail minutes in on a misspelt key: every family has its work, and
    its settings resolve at the smoke scale they are applied to."""
    from enginebench.params import load_params
    smoke = load_params(experiment, "smoke")
    sized = load_params(experiment, "smoke", bench.FAMILY_WORK[experiment])
    # The smoke scale's systems, the fractal ones with a cache that holds the work (FRACTAL_CACHE).
    for before, after in zip(smoke["systems"], sized["systems"], strict=True):
        if before["engine"] == "fractal":
            assert after["options"]["cache_size_mb"] == 256
            after = {**after, "options": {**after["options"], "cache_size_mb": before["options"]["cache_size_mb"]},
                     "explicit_options": before.get("explicit_options")}
            before = {**before, "explicit_options": before.get("explicit_options")}
        assert after == before
    assert sized["workload"] != smoke["workload"] or sized["phases"] != smoke["phases"]


@pytest.mark.parametrize("experiment", sorted(bench.CLIENT_WORK))
def test_each_client_bench_work_resolves_against_its_smoke_params(experiment):
    """The client figures' longer phases resolve at the smoke scale, and only lengthen phases."""
    from enginebench.params import load_params
    smoke = load_params(experiment, "smoke")
    sized = load_params(experiment, "smoke", bench.CLIENT_WORK[experiment])
    # The same systems, but for the checkpoint interval, which scales with the measured phase it
    # stands in (params/checkpoints.py)
    def without_checkpoints(systems):
        return [{**s, "options": {k: v for k, v in s["options"].items() if k != "checkpoint_s"}} for s in systems]
    assert without_checkpoints(sized["systems"]) == without_checkpoints(smoke["systems"])
    assert sized["workload"] == smoke["workload"]
    assert sized["phases"]["measure"]["duration_s"] > smoke["phases"]["measure"]["duration_s"]


def test_phases_below_eighty_percent_with_calls_are_listed_with_their_harness(capsys):
    rows = [{"system": "wt.op1", "phase": "load", "engine_with_calls": 0.86, "harness_with_calls": 0.1},
            {"system": "rx.op1", "phase": "run", "engine_with_calls": 0.78, "harness_with_calls": 0.2,
             "harness_top": [["enginebench_runner::workloads::linkbench::next_request", 0.05]]},
            {"system": "lm.op1", "phase": "run", "engine_with_calls": None}]
    assert [r["system"] for r in bench.below_target(rows)] == ["rx.op1", "lm.op1"]
    bench.print_below_target(rows)
    out = capsys.readouterr().out
    assert "rx.op1 run: +calls 78%, harness 20%: enginebench_runner::workloads::linkbench::next_request 5.0%" in out
    assert "lm.op1 run: +calls n/a" in out and "wt.op1" not in out
