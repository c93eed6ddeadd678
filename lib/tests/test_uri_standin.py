"""TARGET=uri against a real wire-protocol server: the stand-in (tools/standin: mongo-java-server
on its on-disk H2 MVStore backend), started on 127.0.0.1 on a free port for this session and
stopped afterwards with nothing left behind.

One experiment of each family runs at smoke scale through `enginebench experiment` (the run, the
notebook, the HTML report), with whichever client our own rules pick for the stand-in's wire
version (mongod/legacy.py). Every system of a run is the same stand-in, so each runs its first two
systems (SYSTEMS=): one after another, the first's database dropped before the second (and
flashback's second replays what the first recorded). ENGINEBENCH_URI_EXPERIMENTS=all (`make test-uri`) runs all ten. The
report must name the stand-in and what it lacks (transactions, profiler, oplog, serverStatus
sections, hints, capped collections) as named gaps: never a crash, never a silently missing number.
"""
import json
import os
import subprocess
import sys

import pytest

import standin

ONE_PER_FAMILY = ["linkbench_cached", "iibench_500m", "sysbench_cgroups", "tokumx_read", "flashback_replay"]
ALL = sorted(p.stem for p in (standin.REPO / "params").glob("*.yaml"))
EXPERIMENTS = ALL if os.environ.get("ENGINEBENCH_URI_EXPERIMENTS") == "all" else ONE_PER_FAMILY
RUN_TIMEOUT_S = 900
GAPS = ("multi-document transactions", "the profiler", "an oplog", "index hints", "capped collections",
        "serverStatus statistics")

pytestmark = pytest.mark.skipif(standin.missing() is not None, reason=standin.missing() or "")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("standin")
    with standin.standin_server(log_dir) as (uri, proc, dbpath):
        yield uri
    assert proc.returncode is not None, "the stand-in is stopped"
    assert not dbpath.exists(), "its data folder is removed"


def _databases(uri: str) -> list[str]:
    from pymongo.uri_parser import parse_uri

    from enginebench.mongod import wire
    host, port = parse_uri(uri)["nodelist"][0]
    return [d["name"] for d in wire.command(host, port, {"listDatabases": 1})["databases"]]


@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_experiment_on_the_standin(server, exp, tmp_path):
    env = {**os.environ, "ENGINEBENCH_URI": server, "ENGINEBENCH_RESULTS": str(tmp_path / "results"),
           "ENGINEBENCH_DATA": str(tmp_path / "data"), "ENGINEBENCH_REPORTS": str(tmp_path / "reports")}
    from enginebench.params import load_params
    labels = [s["label"] for s in load_params(exp, "smoke")["systems"]]
    done = subprocess.run([sys.executable, "-m", "enginebench", "experiment", exp, "--scale", "smoke", "--target",
                           "uri", "--systems", ",".join(labels[:2])], env=env, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = next((tmp_path / "results" / exp).iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["target"]["kind"] == "uri" and manifest["status"] == "complete", manifest.get("systems")

    from enginebench.mongod.legacy import modern_min_wire
    assert list(manifest["systems"]) == labels[:2] and manifest["selection"]["not_run"] == labels[2:]
    for label, system in manifest["systems"].items():
        assert system["status"] == "complete", (label, system["error"])
        config = system["engine_config"]
        # The stand-in announces wire version 8: below this environment's pymongo minimum the
        # rules pick the legacy environment's pymongo 3.x (make setup-legacy).
        expected_major = "3" if modern_min_wire() > 8 else "4"
        assert config["pymongo"].split(".")[0] == expected_major, config["pymongo"]
        assert config["server_process"].startswith("mongo-java-server")
        assert all(any(g.startswith(name) for g in config["gaps"]) for name in GAPS), config["gaps"]
        if manifest["params"]["workload"]["name"] == "tokumx":
            # The TokuMX tests ask for w:0, as the post's shell loops sent; the stand-in drops such
            # writes, so the run is acknowledged and says so.
            assert any(g.startswith("unacknowledged writes") for g in config["gaps"]), config["gaps"]
    page = (tmp_path / "reports" / f"{exp}.html").read_text()
    assert "Named gaps" in page and "mongo-java-server" in page
    assert f"not run: {', '.join(labels[2:])}" in page
    for name in GAPS:
        assert name in page, name
    assert not [d for d in _databases(server) if d.startswith("enginebench_")], "each system's database is dropped"
