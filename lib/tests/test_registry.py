"""Every family and every engine is complete wherever it must be: a family named in
families/__init__.py has its package (params model, report module, headline pairs), a notebook, an
experiment and its workload in the native runner (the only implementation of its operations); an
engine named in engines.py has its options model, a display name, a mongod engine and the native
runner's build of it (docs/layout.md: "Adding a family or an engine"). The generic report names
no family: what a family knows lives in its package."""
import ast
import json
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from enginebench import native
from enginebench.engines import ENGINES, WT_TAG_RELEASES
from enginebench.families import FAMILIES
from enginebench.mongod.spec import ENGINES as MONGOD_ENGINES
from enginebench.params import experiments, load_params
from enginebench.params.phases import PhaseUse, WorkloadParams
from enginebench.paths import native_runner


@pytest.fixture(scope="module")
def runner_builds():
    return native.builds()


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_family_is_complete(name, runner_builds):
    family = FAMILIES[name]
    model = family.params_model
    assert issubclass(model, WorkloadParams) and model.model_fields["name"].default == name
    assert isinstance(model.PHASES, PhaseUse)
    assert callable(family.report_module().claims_table)
    assert callable(family.pairs_module().normalised_pairs)
    assert family.notebook.is_file()
    assert any(load_params(exp, "smoke")["workload"]["name"] == name for exp in experiments()), \
        f"no params file runs the {name} family"
    assert name in runner_builds["workloads"], f"the native runner has no {name} workload"


@pytest.mark.parametrize("exp", experiments())
def test_an_experiment_has_its_posts_facts_and_claims(exp):
    # The notebook's scale table reads setups.csv and its claims table claims.csv: a missing row
    # would fail only when the report renders.
    import polars as pl
    from enginebench.paths import reference_dir
    from enginebench.report.claims import load_claims
    facts = pl.read_csv(reference_dir() / "setups.csv", infer_schema_length=0)
    have = set(facts.filter(pl.col("experiment") == exp)["fact"].to_list())
    assert {"cache", "database", "measured", "memory", "storage", "threads"} <= have, (exp, have)
    assert load_claims(exp).height > 0, f"data/reference/claims.csv has no claim of {exp}"


def test_the_runner_has_no_family_the_registry_lacks(runner_builds):
    assert set(runner_builds["workloads"]) == set(FAMILIES)


@pytest.mark.parametrize("name", list(ENGINES))
def test_an_engine_is_complete(name, runner_builds):
    engine = ENGINES[name]
    assert engine.display and engine.mongod_engine in MONGOD_ENGINES
    options = engine.options().model_dump()
    assert {"oplog", "oplog_size_mb"} <= set(options)
    assert isinstance(engine.mongod_settings(options), dict)
    size, how = engine.log_bytes(options, 10 << 20)
    assert size >= 0 and (how or size == 0)
    assert runner_builds.get(name), f"the native runner was built without {name}"


def test_the_runner_has_no_engine_the_registry_lacks(runner_builds):
    built = set(runner_builds) - {"runner", "workloads"}
    assert built == set(ENGINES)


def test_an_engines_options_are_checked_against_its_own_model():
    with pytest.raises(ValidationError):
        ENGINES["rocksdb"].options(table_type="lsm")


def test_the_generic_report_imports_no_family():
    """report/ is the generic layer: a family's knowledge reaches it only through the registry
    (families/__init__.py), never by importing a family's modules."""
    import enginebench.report as report
    offenders = []
    for path in Path(report.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                after = parts[parts.index("families") + 1:] if "families" in parts else []
                if after and after[0] in FAMILIES:
                    offenders.append(f"{path.name}: {name}")
    assert offenders == [], offenders


def test_the_runners_tests_read_the_engine_defaults_the_schema_declares():
    """The engine options and their defaults are declared once (engines.py); the native runner
    keeps none of its own, and its tests read them from this file, regenerated with
    `python -m enginebench engine-options > lib/native/tests/data/engine_options.json`."""
    from enginebench.engines import defaults_json
    from enginebench.paths import repo_root
    written = (repo_root() / "lib" / "native" / "tests" / "data" / "engine_options.json").read_text()
    assert written == defaults_json(), "regenerate lib/native/tests/data/engine_options.json (see this test's docstring)"


def test_the_runner_refuses_an_engine_option_the_schema_did_not_give(tmp_path):
    """No second default: a system's options without a key the schema always gives is an error
    naming the key, not a silent fallback."""
    from enginebench.engines import full_options
    options = full_options("wiredtiger", {"cache_size_mb": 32})
    del options["checkpoint_s"]
    argv = [str(native_runner()), "serve", "--engine", "wiredtiger", "--dir", str(tmp_path / "db"),
            "--options", json.dumps(options)]
    out = subprocess.run(argv, input="", capture_output=True, text=True, timeout=60)
    said = out.stdout + out.stderr
    assert "checkpoint_s is missing" in said and "engines.py" in said, said


def test_every_wiredtiger_release_offered_is_built_in_and_opens(runner_builds, tmp_path):
    """The params schema's WiredTiger releases are the ones the runner links (11.3.1 and 2.9.2
    built from source, the posts' MongoDB trees, Debian's 3.2.1), and each opens and keeps a
    document and reports itself by the name the params give it (a tree by its tag)."""
    from typing import get_args

    from enginebench.engines import WiredTigerOptions
    from enginebench.stores.base import IndexSpec
    from enginebench.stores.native import NativeStore
    offered = get_args(WiredTigerOptions.model_fields["version"].annotation)
    assert set(offered) == set(runner_builds["wiredtiger"]), (offered, runner_builds["wiredtiger"])
    for release in offered:
        store = NativeStore("wiredtiger", tmp_path / release, {"version": release, "cache_size_mb": 16})
        try:
            store.create_collection("c")
            store.create_index("c", IndexSpec("x_1", (("x", 1),)))
            assert store.insert_many("c", [{"_id": 1, "x": "kept"}]) == 1
            assert store.get("c", "x_1", ("kept",))["_id"] == 1
            assert store.info().version == release
        finally:
            store.close()


def test_every_fractal_release_offered_is_built_in_and_opens_under_its_servers_layout(runner_builds, tmp_path):
    """The params schema's PerconaFT releases are the ones setup builds into the runner, and each
    opens and keeps a document under its server's layout: TokuMX's for tokumx-*, mongod's record
    store (TokuMXse's) for tokumxse-*."""
    from typing import get_args

    from enginebench.engines import FractalOptions
    from enginebench.stores.base import IndexSpec
    from enginebench.stores.native import NativeStore
    offered = get_args(FractalOptions.model_fields["version"].annotation)
    assert set(offered) == set(runner_builds["fractal"]), (offered, runner_builds["fractal"])
    for release in offered:
        store = NativeStore("fractal", tmp_path / release, {"version": release, "cache_size_mb": 16})
        try:
            store.create_collection("c")
            store.create_index("c", IndexSpec("x_1", (("x", 1),)))
            assert store.insert_many("c", [{"_id": 1, "x": "kept"}]) == 1
            assert store.get("c", "x_1", ("kept",))["_id"] == 1
            info = store.info()
            assert info.version == release
            assert info.config["layout"].startswith("TokuMX" if release.startswith("tokumx-") else "mongod 3.0's as TokuMXse's")
        finally:
            store.close()


def test_a_release_the_runner_lacks_is_refused_before_anything_starts(isolated_run, monkeypatch):
    """`make setup` leaves WiredTiger 2.9.2 and the releases only some systems name out: a runner
    built without one refuses a system that asks for it before anything starts, naming the params
    file, the system, the key, the releases built and how to build it; `enginebench builds` names
    what an experiment's systems need beyond setup's (tools/build_for.sh builds them)."""
    from enginebench import driver
    built = dict(native.builds(), wiredtiger=["11.3.1", "3.2.1", *WT_TAG_RELEASES])
    monkeypatch.setattr(native, "builds", lambda: built)
    with pytest.raises(ValueError, match=r"linkbench_cached.yaml: systems\[wt307.op1\].options.version: "
                                         r"WiredTiger 2.9.2 is not built into the native runner \(built: "
                                         r"11.3.1, 3.2.1, mongodb-3.0.4, .*\); `make wiredtiger-2.9.2` builds it"):
        driver._prepare("linkbench_cached", "smoke", "embedded", sets=["systems[wt307.op1].options.version=2.9.2"])
    without_trees = dict(native.builds(), wiredtiger=["11.3.1", "3.2.1"])
    monkeypatch.setattr(native, "builds", lambda: without_trees)
    with pytest.raises(ValueError, match=r"systems\[wt.op1\].options.version: WiredTiger mongodb-3.2.0-rc1 is not "
                                         r"built into the native runner \(built: 11.3.1, 3.2.1\); `make native "
                                         r"NEEDS=linkbench_cached` builds the releases its systems name"):
        native.check_releases(load_params("linkbench_cached", "smoke"))
    assert native.builds_needed([load_params("linkbench_cached", "smoke")]) == [
        "wiredtiger-tag-mongodb-3.0.7", "wiredtiger-tag-mongodb-3.2.0-rc1"]
    assert native.builds_needed([load_params("tokumx_read", "smoke", ["systems[wt].options.version=2.9.2"])]) == [
        "perconaft-tokumx-1.0.4", "wiredtiger-2.9.2"]
    monkeypatch.setattr(native, "builds", lambda: built)
    for scale in ("smoke", "default"):
        native.check_releases(load_params("linkbench_cached", scale))
        native.check_releases(load_params("iibench_500m", scale))


def test_make_native_needs_names_each_experiments_builds_and_refuses_an_unknown_one():
    """`make native NEEDS=...` (tools/build_for.sh) asks `enginebench builds` what to build: every
    release the schema offers beyond setup's for `all`, one line each; an unknown experiment stops
    it before anything is built, naming the allowed ones."""
    import sys
    from enginebench.engines import FRACTAL_RELEASES
    from enginebench.paths import repo_root
    listed = subprocess.run([sys.executable, "-m", "enginebench", "builds", "all"], capture_output=True, text=True,
                            timeout=60, check=True).stdout.split()
    assert listed == sorted([f"perconaft-{r}" for r in FRACTAL_RELEASES] + [f"wiredtiger-tag-{r}" for r in WT_TAG_RELEASES])
    refused = subprocess.run(["bash", "tools/build_for.sh", sys.executable, "no_such_experiment"], cwd=repo_root(),
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "unknown experiment 'no_such_experiment'" in refused.stderr
    # Every experiment of this checkout, in order (a copy with a throwaway experiment lists it too).
    assert f"allowed: {', '.join(experiments())}" in refused.stderr


def test_the_runners_layers_import_only_downward():
    """lib/native/src in layers: the key encoding is a leaf, the engines sit above it and below the
    server layouts, and the layouts below the workloads and executors; a module names nothing above it."""
    from enginebench.paths import repo_root
    src = repo_root() / "lib" / "native" / "src"
    above = {"keys.rs": ("engines", "layouts", "calls", "workloads", "executors", "phase", "run", "recorder"),
             "engines": ("layouts", "calls", "workloads", "executors", "phase", "run", "recorder"),
             "layouts": ("workloads", "executors", "phase", "run", "recorder")}
    offenders = []
    for name, forbidden in above.items():
        for path in ([src / name] if name.endswith(".rs") else sorted((src / name).rglob("*.rs"))):
            for layer in forbidden:
                if f"crate::{layer}" in path.read_text():
                    offenders.append(f"{path.relative_to(src)} uses crate::{layer}")
    assert offenders == [], offenders
