import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from enginebench.params import ParamsError, experiments, load_params
from enginebench.params import loader

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("exp", experiments())
@pytest.mark.parametrize("scale", ["smoke", "default", "paper"])
def test_every_params_file_resolves_at_every_scale(exp, scale):
    params = load_params(exp, scale)
    assert params["experiment"] == exp and params["scale"] == scale
    assert (ROOT / "notebooks" / f"{params['notebook']}.ipynb").exists()


def test_paper_scale_is_the_posts_setting():
    p = load_params("linkbench_cached", "paper")
    assert p["workload"]["maxid1"] == 50_000_001
    assert p["phases"]["load"]["threads"] == 12 and p["phases"]["measure"]["threads"] == 12
    assert p["phases"]["measure"]["interval_s"] == 3600 and p["phases"]["measure"]["duration_s"] == 12 * 3600
    caches = {s["options"].get("cache_size_mb") for s in p["systems"] if s["engine"] != "lmdb"}
    assert caches == {32768}
    assert {s["options"]["oplog"] for s in p["systems"]} == {True, False}
    assert {s["options"].get("block_compressor", s["options"].get("compression")) for s in p["systems"]
            if s["engine"] != "lmdb"} == {"snappy"}


def test_default_scale_meets_its_floor():
    p = load_params("linkbench_cached", "default")
    assert p["workload"]["maxid1"] - p["workload"]["startid1"] >= 1_000_000
    assert p["phases"]["measure"]["duration_s"] >= 3 * p["phases"]["measure"]["interval_s"]
    assert {"btree", "lsm"} <= {s["role"] for s in p["systems"]}


def _write(tmp_path, mutate):
    raw = yaml.safe_load((ROOT / "params" / "linkbench_cached.yaml").read_text())
    mutate(raw)
    params = tmp_path / "params"
    params.mkdir()
    (params / "linkbench_cached.yaml").write_text(yaml.safe_dump(raw))
    return params


@pytest.fixture
def scratch_params(tmp_path, monkeypatch):
    def make(mutate):
        folder = _write(tmp_path, mutate)
        monkeypatch.setattr(loader, "params_dir", lambda: folder)
        return folder / "linkbench_cached.yaml"
    return make


def test_misspelt_key_names_file_key_and_allowed_keys(scratch_params):
    path = scratch_params(lambda raw: raw["phases"].update(lode=raw["phases"].pop("load")))
    with pytest.raises(ParamsError) as err:
        load_params("linkbench_cached", "smoke")
    message = str(err.value)
    assert str(path) in message and "phases.lode: unknown key" in message and "load" in message


def test_misspelt_engine_option_lists_that_engines_options(scratch_params):
    scratch_params(lambda raw: raw["systems"][0]["options"].update(cache_sise_mb=1))
    with pytest.raises(ParamsError, match=r"line \d+: systems\[wt\.op0\]: options\.cache_sise_mb: unknown key for engine wiredtiger; "
                                          r"did you mean 'cache_size_mb'\? allowed keys: .*cache_size_mb"):
        load_params("linkbench_cached", "paper")


def test_wrong_type_and_impossible_values(scratch_params):
    scratch_params(lambda raw: raw["workload"].update(maxid1="many"))
    with pytest.raises(ParamsError, match=r"workload\.maxid1: .*integer.*'many'"):
        load_params("linkbench_cached", "paper")


def test_impossible_value_and_literal(scratch_params):
    scratch_params(lambda raw: raw["systems"][1].update(engine="mmapv2"))
    with pytest.raises(ParamsError, match=r"systems\[wt\.op1\]\.engine: 'mmapv2' is not allowed; allowed values: 'wiredtiger', 'rocksdb', 'lmdb' or 'fractal'"):
        load_params("linkbench_cached", "paper")


def test_an_error_in_another_scale_is_reported_too(scratch_params):
    scratch_params(lambda raw: raw["scales"]["smoke"]["phases"]["measure"].update(duration_s=0))
    with pytest.raises(ParamsError, match=r"\[scale smoke\]: line \d+: scales\.smoke\.phases\.measure\.duration_s"):
        load_params("linkbench_cached", "default")


def test_unknown_experiment_and_scale():
    with pytest.raises(ParamsError, match="unknown experiment 'nope'.*allowed: .*linkbench_cached"):
        load_params("nope")
    with pytest.raises(ParamsError, match="unknown scale 'huge'"):
        load_params("linkbench_cached", "huge")


def test_cli_prints_resolved_params():
    out = subprocess.run([sys.executable, "-m", "enginebench", "params", "linkbench_cached", "--scale", "default"],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["workload"]["maxid1"] == 1_000_001


@pytest.mark.parametrize("args", [["experiment", "nope"], ["run", "nope"], ["run", "linkbench_cached", "--target", "nowhere"]])
def test_cli_fails_fast_and_starts_nothing(args, tmp_path):
    started = time.time()
    out = subprocess.run([sys.executable, "-m", "enginebench", *args], capture_output=True, text=True,
                         env={**__import__("os").environ, "ENGINEBENCH_RESULTS": str(tmp_path)})
    assert out.returncode == 2
    assert "error:" in out.stderr
    assert time.time() - started < 20
    assert not any(tmp_path.iterdir()), "a failed start must not create a results folder"


def test_mongod_target_without_binary_fails_at_once(monkeypatch):
    from enginebench.targets import resolve_target
    monkeypatch.delenv("MONGOD", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RuntimeError, match="no mongod binary found"):
        resolve_target("mongod")
    assert resolve_target("auto")["kind"] == "embedded"
    assert "no mongod binary" in resolve_target("auto")["banner"][0]


def test_misspelt_workload_key_lists_that_workloads_keys(scratch_params):
    scratch_params(lambda raw: raw["workload"].update(maxid=5))
    with pytest.raises(ParamsError, match=r"workload\.maxid: unknown key; did you mean 'maxid1'\? allowed keys: .*maxid1"):
        load_params("linkbench_cached", "paper")


def _phases_only_in_smoke(raw):
    # The smoke block states every phase key it needs; the top level (the paper scale) has none.
    raw["scales"]["smoke"]["phases"] = {**raw["phases"], **raw["scales"]["smoke"]["phases"]}
    raw["scales"]["default"]["phases"] = {**raw["phases"], **raw["scales"]["default"]["phases"]}
    del raw["phases"]


@pytest.mark.parametrize("asked", ["smoke", "default", "paper"])
def test_phases_missing_at_the_top_level_is_refused_whatever_scale_is_asked(scratch_params, asked):
    # The smoke and default scales are complete on their own; the paper scale would silently run
    # with the default phases (one loader, one 60-second interval).
    path = scratch_params(_phases_only_in_smoke)
    with pytest.raises(ParamsError) as err:
        load_params("linkbench_cached", asked)
    message = str(err.value)
    assert str(path) in message and "[scale paper]" in message
    assert "phases: required key is missing at the top level, which is the paper scale" in message
    assert "scales.default, scales.smoke set it" in message


def test_an_experiment_name_changed_by_one_scale_is_refused(scratch_params):
    scratch_params(lambda raw: raw["scales"]["default"].update(experiment="linkbench_other"))
    with pytest.raises(ParamsError, match=r"\[scale default\]: experiment: 'linkbench_other' must equal the file name"):
        load_params("linkbench_cached", "smoke")


@pytest.mark.parametrize("supervision,expected", [
    ({"on_failure": "retry"}, r"supervision\.on_failure: 'retry' is not allowed; allowed values: 'next_system' or 'stop'"),
    ({"hung_floor": 5}, r"supervision\.hung_floor: unknown key; did you mean 'hung_floor_s'\? allowed keys: hung_floor_s, hung_intervals, "
                        r"on_failure, step_s"),
    ({"hung_intervals": 0.5}, r"supervision\.hung_intervals: .*greater than or equal to 1"),
])
def test_supervision_keys_are_checked_with_their_allowed_values(scratch_params, supervision, expected):
    scratch_params(lambda raw: raw.update(supervision=supervision))
    with pytest.raises(ParamsError, match=expected):
        load_params("linkbench_cached", "smoke")


@pytest.mark.parametrize("exp, mutate, message", [
    # A key the family does not read is refused, naming the family and what it reads.
    ("sysbench_cgroups", lambda raw: raw["phases"]["measure"].update(request_rate=100),
     r"phases\.measure\.request_rate: not read by the sysbench family; it reads .*measure\.duration_s"),
    ("iibench_500m", lambda raw: raw["phases"].update(quiesce_s=5),
     r"phases\.quiesce_s: not read by the iibench family"),
    ("tokumx_insert_10m", lambda raw: raw["phases"].update(measure={"threads": 2}),
     r"phases\.measure: not read by the tokumx family"),
    # What a family needs is required; a client sweep is a list only where the family sweeps.
    ("sysbench_cgroups", lambda raw: raw["phases"]["measure"].pop("duration_s"),
     r"phases\.measure\.duration_s: required by the sysbench family"),
    ("linkbench_cached", lambda raw: raw["phases"]["measure"].update(threads=[1, 2]),
     r"phases\.measure\.threads: the linkbench family takes one thread count, not a list"),
    ("tokumx_concurrency", lambda raw: raw["phases"]["measure"].update(threads=4),
     r"phases\.measure\.threads: the tokumx family takes a list of client counts"),
])
def test_phases_a_family_does_not_read_are_refused(tmp_path, monkeypatch, exp, mutate, message):
    raw = yaml.safe_load((ROOT / "params" / f"{exp}.yaml").read_text())
    mutate(raw)
    (tmp_path / f"{exp}.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.setattr(loader, "params_dir", lambda: tmp_path)
    with pytest.raises(ParamsError, match=message):
        load_params(exp, "paper")


def test_a_file_that_extends_another_says_only_what_differs():
    disk, ssd = load_params("linkbench_uncached_disk", "paper"), load_params("linkbench_uncached_ssd", "paper")
    assert ssd["resources"]["storage"]["profile"] == "ssd" and disk["resources"]["storage"]["profile"] == "disk"
    assert ssd["phases"]["measure"]["duration_s"] == 12 * 3600 and disk["phases"]["measure"]["duration_s"] == 24 * 3600
    same = {k for k in disk if disk[k] == ssd[k]}
    assert {"workload", "systems", "metrics", "supervision"} <= same
    # The scales come along too, with what the extending file changes in them.
    assert load_params("tokumx_insert_20m", "smoke")["workload"]["documents"] == 120_000
    assert load_params("tokumx_insert_20m", "smoke")["systems"] == load_params("tokumx_insert_10m", "smoke")["systems"]


def test_scale_systems_merge_by_label_and_say_which_run():
    paper, default = load_params("linkbench_cached", "paper"), load_params("linkbench_cached", "default")
    assert [s["label"] for s in default["systems"]] == ["wt.op1", "rx.op1", "wt.op0", "wt307.op1"]
    wt_paper = next(s for s in paper["systems"] if s["label"] == "wt.op1")
    wt_default = default["systems"][0]
    assert wt_default["options"]["cache_size_mb"] == 1280 and wt_default["role"] == wt_paper["role"]
    # The load-only systems keep the paper's measure_requests: false.
    assert [s["measure_requests"] for s in default["systems"]] == [True, True, False, False]
    assert wt_default["options"]["table_type"] == wt_paper["options"]["table_type"]


@pytest.mark.parametrize("files, message", [
    ({"a": {"extends": "b"}, "b": {"extends": "a"}}, r"extends: a cycle \(a.yaml -> b.yaml -> a.yaml\)"),
    ({"a": {"extends": "nope"}}, r"a.yaml: extends: no params file 'nope'"),
    ({"a": {"extends": "linkbench_cached", "scales": {"smoke": {"systems": [{"role": "lsm"}]}}}},
     r"scales.smoke.systems.0: each system needs a label"),
])
def test_extends_and_merge_errors(tmp_path, monkeypatch, files, message):
    (tmp_path / "linkbench_cached.yaml").write_text((ROOT / "params" / "linkbench_cached.yaml").read_text())
    for name, body in files.items():
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(body))
    monkeypatch.setattr(loader, "params_dir", lambda: tmp_path)
    with pytest.raises(ParamsError, match=message):
        load_params("a", "smoke")


def _edit_line(path: Path, old: str, new: str) -> int:
    """Replace `old` on the one line that holds it; that line's number (1-based)."""
    lines = path.read_text().splitlines(keepends=True)
    (number,) = [i for i, line in enumerate(lines) if old in line]
    lines[number] = lines[number].replace(old, new)
    path.write_text("".join(lines))
    return number + 1


def _copy_params(tmp_path, monkeypatch, *names):
    for name in names:
        (tmp_path / f"{name}.yaml").write_text((ROOT / "params" / f"{name}.yaml").read_text())
    monkeypatch.setattr(loader, "params_dir", lambda: tmp_path)


def test_a_misspelt_key_under_scales_gives_its_line_real_path_and_a_suggestion(tmp_path, monkeypatch):
    _copy_params(tmp_path, monkeypatch, "linkbench_cached")
    line = _edit_line(tmp_path / "linkbench_cached.yaml", "      load: {threads: 2, interval_s: 10}",
                      "      lode: {threads: 2, interval_s: 10}")
    with pytest.raises(ParamsError) as err:
        load_params("linkbench_cached", "smoke")  # the default scale's block is wrong: it is checked too
    assert str(err.value) == (
        f"{tmp_path / 'linkbench_cached.yaml'} [scale default]: line {line}: scales.default.phases.lode: unknown key; "
        "did you mean 'load'? allowed keys: client_processes, cold_start, load, max_errors, measure, quiesce_checkpoint, "
        "quiesce_s, rate_sweep")


def test_a_systems_error_names_the_label_and_the_line_of_the_block_that_set_it(tmp_path, monkeypatch):
    _copy_params(tmp_path, monkeypatch, "linkbench_cached")
    line = _edit_line(tmp_path / "linkbench_cached.yaml", "{label: rx.op1, options: {cache_size_mb: 64,",
                      "{label: rx.op1, options: {cache_size_mb: -5,")
    with pytest.raises(ParamsError) as err:
        load_params("linkbench_cached", "paper")
    message = str(err.value)
    assert f"[scale smoke]: line {line}: scales.smoke.systems[rx.op1]: options.cache_size_mb:" in message
    assert "systems.1" not in message


def test_an_error_in_an_extended_file_names_that_file_and_line(tmp_path, monkeypatch):
    _copy_params(tmp_path, monkeypatch, "linkbench_uncached_disk", "linkbench_uncached_ssd")
    base = tmp_path / "linkbench_uncached_disk.yaml"
    line = _edit_line(base, "  quiesce_s: 60", "  quiesce_secs: 60")
    with pytest.raises(ParamsError) as err:
        load_params("linkbench_uncached_ssd", "paper")
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'linkbench_uncached_ssd.yaml'} [scale smoke]: {base} line {line} "
                              "(extended by this file): phases.quiesce_secs: unknown key; did you mean 'quiesce_s'?")


def test_several_problems_are_listed_one_a_line_each_with_its_line(tmp_path, monkeypatch):
    _copy_params(tmp_path, monkeypatch, "linkbench_cached")
    path = tmp_path / "linkbench_cached.yaml"
    first = _edit_line(path, "  link_type_count: 2", "  link_types: 2")
    second = _edit_line(path, "{label: rx.op1, role: lsm, engine: rocksdb,", "{label: rx.op1, role: lsm, engine: rocks,")
    with pytest.raises(ParamsError) as err:
        load_params("linkbench_cached", "paper")
    lines = str(err.value).splitlines()
    assert lines[0] == f"{path} [scale smoke]:"  # every scale is checked, smoke first
    assert lines[1].startswith(f"  line {first}: workload.link_types: unknown key; did you mean 'link_type_count'?")
    assert lines[2].startswith(f"  line {second}: systems[rx.op1].engine: 'rocks' is not allowed; "
                               "did you mean 'rocksdb'?")


def test_a_misspelt_experiment_or_scale_gets_a_suggestion():
    with pytest.raises(ParamsError, match="did you mean 'linkbench_cached'"):
        load_params("linkbench_cahced")
    with pytest.raises(ParamsError, match="did you mean 'smoke'"):
        load_params("linkbench_cached", "smok")


def test_a_key_under_scales_in_an_extended_file_names_that_file_line_and_scale_block(tmp_path, monkeypatch):
    _copy_params(tmp_path, monkeypatch, "linkbench_uncached_disk", "linkbench_uncached_ssd")
    base = tmp_path / "linkbench_uncached_disk.yaml"
    line = _edit_line(base, "phases: {load: {threads: 2, interval_s: 1}, quiesce_s: 0.2,",
                      "phases: {load: {threads: 2, interval_s: 1}, quiesce_sec: 0.2,")
    with pytest.raises(ParamsError) as err:
        load_params("linkbench_uncached_ssd", "paper")
    assert str(err.value).startswith(
        f"{tmp_path / 'linkbench_uncached_ssd.yaml'} [scale smoke]: {base} line {line} (extended by this file): "
        "scales.smoke.phases.quiesce_sec: unknown key; did you mean 'quiesce_s'?")


@pytest.mark.parametrize("exp", experiments())
def test_mmap_stand_in_takes_the_lock_of_the_release_its_post_ran(exp):
    # Flashback's post ran MongoDB 2.6 and the TokuMX posts 2.2/2.4: a lock per database; the
    # LinkBench, iibench and sysbench posts ran 3.0: a lock per collection.
    params = load_params(exp, "paper")
    expected = "database" if params["workload"]["name"] in ("flashback", "tokumx") else "collection"
    locks = {s["options"]["mmap_lock"] for s in params["systems"] if s["engine"] == "lmdb"}
    assert locks <= {expected}


def _lmdb_options(raw: dict) -> dict:
    return next(s for s in raw["systems"] if s["engine"] == "lmdb")["options"]


def test_a_systems_own_mmap_lock_wins(scratch_params):
    scratch_params(lambda raw: _lmdb_options(raw).update(mmap_lock="none"))
    lmdb = [s for s in load_params("linkbench_cached", "paper")["systems"] if s["engine"] == "lmdb"]
    assert [s["options"]["mmap_lock"] for s in lmdb] == ["none"]


def test_bad_mmap_lock_names_file_key_and_allowed_values(scratch_params):
    path = scratch_params(lambda raw: _lmdb_options(raw).update(mmap_lock="global"))
    with pytest.raises(ParamsError) as err:
        load_params("linkbench_cached", "smoke")
    message = str(err.value)
    assert str(path) in message
    assert re.search(r"systems\[lmdb[^\]]*\]: options\.mmap_lock: 'global' is not allowed for engine lmdb; "
                     r"allowed values: 'database', 'collection' or 'none'", message), message


def test_mmap_lock_on_another_engine_is_an_unknown_key(scratch_params):
    scratch_params(lambda raw: raw["systems"][0]["options"].update(mmap_lock="database"))
    with pytest.raises(ParamsError, match=r"systems\[wt\.op0\]: options\.mmap_lock: unknown key for engine wiredtiger"):
        load_params("linkbench_cached", "smoke")


def test_a_measured_phase_that_stands_for_the_posts_hour_keeps_its_checkpoints():
    """The LinkBench post's hours held six 600-s checkpoints; a 300-s phase standing for one
    checkpoints every 50 s, whatever interval the settings or the params give (params/checkpoints.py)."""
    default, paper = load_params("linkbench_cached", "default"), load_params("linkbench_cached", "paper")
    wt = {s["label"]: s for s in default["systems"]}["wt.op1"]
    assert (wt["options"]["checkpoint_s"], wt["checkpoint_scaled_from_s"]) == (50, 600)
    assert "checkpoint_s" not in {s["label"]: s for s in default["systems"]}["rx.op1"]["options"]
    # The paper scale is the post's own time: nothing scaled.
    assert all(s["checkpoint_scaled_from_s"] is None for s in paper["systems"])
    assert {s["options"].get("checkpoint_s") for s in paper["systems"]} == {600, None}
    # today's 60 s in the same proportion; a smoke phase of 2 s at the 1-s floor.
    today = load_params("linkbench_cached", "default", ["settings=today"])
    assert {s["options"].get("checkpoint_s") for s in today["systems"]} == {5, None}
    assert {s["options"].get("checkpoint_s") for s in load_params("linkbench_cached", "smoke")["systems"]} == {1, None}
    # Validated again from its own dump, a system is scaled from the interval it was given, not twice.
    from enginebench.params.schema import Experiment
    again = Experiment(**{k: v for k, v in default.items() if k not in ("notebook", "scale", "params_file")})
    assert {s.label: s.options.get("checkpoint_s") for s in again.systems}["wt.op1"] == 50
    # No checkpoint between load and queries, as the post; other experiments keep theirs.
    assert default["phases"]["quiesce_checkpoint"] is False
    assert load_params("sysbench_cgroups", "default")["phases"]["quiesce_checkpoint"] is True
    from enginebench.params.plan import plan_steps
    assert {"step": "quiesce", "seconds": 2, "checkpoint": False} in plan_steps(default)


def test_stands_for_needs_one_phase_of_a_fixed_duration(scratch_params):
    scratch_params(lambda raw: raw["phases"]["measure"].update(stands_for_s=3600, duration_s=None))
    with pytest.raises(ParamsError, match=r"stands_for_s needs one measured phase of a fixed duration_s"):
        load_params("linkbench_cached", "paper")
