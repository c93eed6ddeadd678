"""TARGET=uri folds the params' systems into the one system the server is (uri_target.py)."""
from enginebench import uri_target
from enginebench.params import load_params


def test_a_server_is_labelled_by_the_first_word_of_its_own_name():
    assert uri_target.server_label("mongod") == "mongod"
    assert uri_target.server_label("ferretdb") == "ferretdb"
    # tools/standin's serverStatus.process
    assert uri_target.server_label("mongo-java-server 1.47.0 (H2 MVStore backend)") == "mongo-java-server"
    assert uri_target.server_label("host:27017/weird") == "host-27017-weird"
    assert uri_target.server_label(None) == uri_target.UNNAMED == "server"


def test_the_systems_that_differ_only_in_engines_become_one():
    params = load_params("linkbench_cached", "smoke")
    labels = [s["label"] for s in params["systems"]]
    banner = uri_target.one_server(params, "ferretdb")
    assert [s["label"] for s in params["systems"]] == ["ferretdb"]
    assert params["systems"][0]["params_label"] == labels[0]
    assert f"({', '.join(labels)}) differ only in engines" in banner[0] and "(ferretdb)" in banner[0]
    assert f"measure that server {len(labels)} times" in banner[0]


def test_flashback_keeps_its_recorder_and_one_replay(tmp_path):
    params = load_params("flashback_replay", "smoke")
    first, second = (s["label"] for s in params["systems"][:2])
    banner = uri_target.one_server(params, None)
    assert [(s["label"], s["params_label"]) for s in params["systems"]] == [("server", first), ("server.2", second)]
    assert "the recorder, then its replay" in banner[0] and "it did not name itself" in banner[0]
    (tmp_path / "capture.ops.jsonl").write_text("")
    params = load_params("flashback_replay", "smoke", [f"workload.capture_file={tmp_path / 'capture.ops.jsonl'}"])
    uri_target.one_server(params, "mongod")
    assert [s["label"] for s in params["systems"]] == ["mongod"], "every system replays the file: one is enough"


def test_the_limits_meant_for_a_launched_server_are_dropped():
    params = load_params("sysbench_cgroups", "smoke")
    banner = uri_target.without_limits(params)
    assert all(s["memory_limit_mb"] is None for s in params["systems"])
    assert params["resources"]["memory"]["limit_mb"] is None and "were not applied" in banner[0]
