"""TARGET=uri against real wire-protocol servers written by others, each started on 127.0.0.1 on a
free port for this session and stopped afterwards with nothing left behind:

- the Java stand-in (tools/standin: mongo-java-server on its on-disk H2 MVStore backend), which
  announces wire version 8 (MongoDB 4.2): the runner's Rust driver sends the commands, the
  companion speaks pymongo 3 (the legacy environment);
- FerretDB (tools/build_ferretdb.sh, its SQLite backend), which announces wire version 21
  (MongoDB 7.0): today's driver path, the Rust driver and a pymongo 4 companion.

One experiment of each family runs at smoke scale through `enginebench experiment` (the run, the
notebook, the HTML report) on the stand-in, two on FerretDB (FERRETDB_EXPERIMENTS). The params'
systems differ only in engines the server chose for itself, so a run is the one system the
server is, named after it (Flashback's is two: the recorder, then a replay of what it recorded,
its database dropped in between), and no claim is judged from it. FerretDB's SQLite backend
filters anything but `_id` outside SQLite, so every other equality scans its collection: runs
on both servers use data sized to that (SMALL_SETS, set by hand with --set), since the point is
the driver's path and the report, not the server's speed (the stand-in, on H2, loaded LinkBench's
smoke data at 400 documents/s). ENGINEBENCH_URI_EXPERIMENTS=all (`make test-uri`) runs all
ten on both. The report must name the server and what it lacks (transactions, profiler, oplog,
serverStatus sections, hints, capped collections) as named gaps: never a crash, never a silently
missing number.
"""
import json
import os
import subprocess
import sys

import pytest

import standin

ONE_PER_FAMILY = ["linkbench_cached", "iibench_500m", "sysbench_cgroups", "tokumx_read", "flashback_replay"]
ALL = sorted(p.stem for p in (standin.REPO / "params").glob("*.yaml"))
EVERY = os.environ.get("ENGINEBENCH_URI_EXPERIMENTS") == "all"
EXPERIMENTS = ALL if EVERY else ONE_PER_FAMILY
# On FerretDB, `make test` runs the two experiments whose reports differ most (LinkBench's one
# system; Flashback's recorder and replayer): test_executors_agree.py already runs every family's
# stream on FerretDB through the driver, and a report's named gaps are the server's, not the
# family's. `make test-uri` runs all ten.
FERRETDB_EXPERIMENTS = ALL if EVERY else ["linkbench_cached", "flashback_replay"]
RUN_TIMEOUT_S = 900
GAPS = ("multi-document transactions", "the profiler", "an oplog", "index hints", "capped collections",
        "serverStatus statistics")
# What the servers can serve in a test's minutes (see above): smaller data for each experiment.
SMALL_SETS = {
    "linkbench_cached": ["workload.maxid1=201", "workload.max_degree=20"],
    "linkbench_uncached_disk": ["workload.maxid1=201", "workload.max_degree=20"],
    "linkbench_uncached_ssd": ["workload.maxid1=201", "workload.max_degree=20"],
    "iibench_500m": ["workload.max_rows=600", "workload.query_begin_docs=100"],
    "sysbench_cgroups": ["workload.collections=2", "workload.docs_per_collection=100", "workload.docs_per_insert=50"],
    "tokumx_insert_10m": ["workload.documents=600"],
    "tokumx_insert_20m": ["workload.documents=600"],
    "tokumx_concurrency": ["workload.documents=300"],
    "tokumx_read": ["workload.documents=300"],
    "flashback_replay": ["workload.users=50", "workload.posts=300"],
}

# A cold start restarts the server, which a deployment at the URI cannot be from here: the
# uncached experiments are refused on TARGET=uri unless measured warm, and say so.
WARM = {"linkbench_uncached_disk": ["phases.cold_start=none"], "linkbench_uncached_ssd": ["phases.cold_start=none"]}

pytestmark = pytest.mark.skipif(standin.missing() is not None, reason=standin.missing() or "")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("standin")
    with standin.standin_server(log_dir) as (uri, proc, dbpath):
        yield uri
    assert proc.returncode is not None, "the stand-in is stopped"
    assert not dbpath.exists(), "its data folder is removed"


@pytest.fixture(scope="session")
def ferretdb(tmp_path_factory):
    from enginebench import ferretdb as fdb
    if fdb.missing():
        pytest.skip(fdb.missing())
    with fdb.ferretdb_server(tmp_path_factory.mktemp("ferretdb")) as (uri, proc, state):
        yield uri
    assert proc.returncode is not None, "FerretDB is stopped"
    assert not state.exists(), "its folder is removed"


def _databases(uri: str) -> list[str]:
    from pymongo.uri_parser import parse_uri

    from enginebench.mongod import wire
    host, port = parse_uri(uri)["nodelist"][0]
    return [d["name"] for d in wire.command(host, port, {"listDatabases": 1})["databases"]]


def _run_on(uri: str, exp: str, tmp_path, server: str, sets: list[str] = ()) -> tuple[dict, str]:
    """The experiment at smoke scale against the server: (manifest, report page). The params'
    systems are folded into the one system the server is (Flashback: its recorder and one
    replayer), labelled by the server's name."""
    env = {**os.environ, "ENGINEBENCH_URI": uri, "ENGINEBENCH_RESULTS": str(tmp_path / "results"),
           "ENGINEBENCH_DATA": str(tmp_path / "data"), "ENGINEBENCH_REPORTS": str(tmp_path / "reports")}
    from enginebench.params import load_params
    labels = [s["label"] for s in load_params(exp, "smoke")["systems"]]
    done = subprocess.run([sys.executable, "-m", "enginebench", "experiment", exp, "--scale", "smoke", "--target",
                           "uri", *[f"--set={s}" for s in sets]], env=env,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = next((tmp_path / "results" / exp).iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["target"]["kind"] == "uri" and manifest["status"] == "complete", manifest.get("systems")
    expected = [server, f"{server}.2"] if exp == "flashback_replay" else [server]
    assert list(manifest["systems"]) == expected
    assert [s["params_label"] for s in manifest["params"]["systems"]] == labels[:len(expected)]
    for label, system in manifest["systems"].items():
        assert system["status"] == "complete", (label, system["error"])
    page = (run_dir / "report.html").read_text()
    assert "Named gaps" in page
    assert f"TARGET=uri: the params' systems ({', '.join(labels)}) differ only in engines" in page
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["claims"] and all(c["verdict"] == "not evaluated" for c in summary["claims"]), summary["claims"]
    assert not [d for d in _databases(uri) if d.startswith("enginebench_")], "each system's database is dropped"
    return manifest, page


@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_experiment_on_the_standin(server, exp, tmp_path):
    manifest, page = _run_on(server, exp, tmp_path, "mongo-java-server", SMALL_SETS[exp] + WARM.get(exp, []))
    from enginebench.mongod.legacy import DRIVER_MIN_WIRE, modern_min_wire
    for label, system in manifest["systems"].items():
        config = system["engine_config"]
        # The stand-in announces wire version 8: the runner's Rust driver speaks it (8 and up),
        # the companion's pymongo 4 does not (9 and up), so it runs under the legacy pymongo 3.
        assert config["executor"].startswith("the Rust driver" if DRIVER_MIN_WIRE <= 8 else "legacy"), config
        expected_major = "3" if modern_min_wire() > 8 else "4"
        assert config["companion_pymongo"].split(".")[0] == expected_major, config["companion_pymongo"]
        assert config["server_process"].startswith("mongo-java-server")
        assert all(any(g.startswith(name) for g in config["gaps"]) for name in GAPS), config["gaps"]
        if manifest["params"]["workload"]["name"] == "tokumx":
            # The TokuMX tests ask for w:0, as the post's shell loops sent; the stand-in drops such
            # writes, so the run is acknowledged and says so.
            assert any(g.startswith("unacknowledged writes") for g in config["gaps"]), config["gaps"]
    assert "mongo-java-server" in page
    for name in GAPS:
        assert name in page, name


@pytest.mark.parametrize("exp", FERRETDB_EXPERIMENTS)
def test_experiment_on_ferretdb_through_todays_driver(ferretdb, exp, tmp_path):
    manifest, page = _run_on(ferretdb, exp, tmp_path, "ferretdb", SMALL_SETS[exp] + WARM.get(exp, []))
    for label, system in manifest["systems"].items():
        config = system["engine_config"]
        assert config["executor"].startswith("the Rust driver"), config
        assert config["companion_pymongo"].split(".")[0] == "4", config["companion_pymongo"]
        assert system["version"].startswith("7.0"), system["version"]
        for name in ("multi-document transactions", "the profiler", "an oplog", "index hints"):
            assert any(g.startswith(name) for g in config["gaps"]), (name, config["gaps"])
    assert manifest["params"]["sets"] == SMALL_SETS[exp] + WARM.get(exp, [])


def test_a_cold_start_is_refused_on_a_uri_before_anything_starts(server, tmp_path):
    """The deployment at the URI cannot be restarted from here, so a cold start would leave its
    caches warm: one line naming the params file, the key and what is allowed, and no run."""
    env = {**os.environ, "ENGINEBENCH_URI": server, "ENGINEBENCH_RESULTS": str(tmp_path / "results"),
           "ENGINEBENCH_DATA": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "enginebench", "run", "linkbench_uncached_disk", "--scale", "smoke",
                           "--target", "uri"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "linkbench_uncached_disk.yaml: phases.cold_start is 'fadvise'" in done.stderr, done.stderr[-2000:]
    assert "SET=phases.cold_start=none" in done.stderr
    assert not (tmp_path / "results" / "linkbench_uncached_disk").exists(), "nothing was started"
