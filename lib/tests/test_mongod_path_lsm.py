"""A server that refuses WiredTiger LSM tables skips that system, with the server's words and its
version, and the run goes on (issue 47, "The mongod path"): before, the refusal came back as a
companion error, the system was recorded as failed and `supervision.on_failure: stop` ended the run.

The refusal, from mongodb/mongo's source: WiredTigerUtil::checkTableCreationOptions in
src/mongo/db/storage/wiredtiger/wiredtiger_util.cpp at 1a5cebdcd68691ce7e3f4e7b1caf367033000e7a:

    if (config.find("type=lsm") != std::string::npos) {
        return {ErrorCodes::Error(6627201), "Configuration 'type=lsm' is not supported."};
    }

(its jstest: "Verify that collections cannot be created with the WiredTiger 'type=lsm' option",
`assert.commandFailedWithCode(createResult, 6627201)`). A command that fails answers {ok: 0,
errmsg, code, codeName} (src/mongo/db/commands.cpp, CommandHelpers::appendCommandStatusNoThrow), a
code without a name in error_codes.yml being named "Location<code>" (src/mongo/base/
error_codes.tpl.cpp at 1041dd848e25e879260d1015d8da4f72ee7993fe, ErrorCodes::errorString). The
scripted server is no particular release: buildInfo has the fields src/mongo/util/version.cpp
appends (version, versionArray, gitVersion) with a version that names it as scripted, which is what
must reach the skip's reason, and hello answers as a primary does (src/mongo/db/repl/
is_master_response.cpp at 6dcdd23dd37ef12c87e71cf59ef01cd82432efe0, isWritablePrimary for hello) with
maxWireVersion 17 (6.0's in legacy.py's WIRE_VERSIONS; any that pymongo 4 speaks would do).

The companion runs as the runner runs it: its own process, from the command line
ServerHandle.runner_spec gives, spoken to in JSON lines (jsonlines.py).
"""
import html as html_lib
import json
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest

from enginebench import driver
from enginebench.mongod import tabletype
from enginebench.mongod.systems import ServerHandle
from enginebench.report import html
from enginebench.report.rundata import load_run
from scripted import ScriptedServer

REFUSED = {"ok": 0.0, "errmsg": "Configuration 'type=lsm' is not supported.", "code": 6627201,
           "codeName": "Location6627201"}
HELLO = {"isWritablePrimary": True, "ismaster": True, "maxBsonObjectSize": 16777216, "maxMessageSizeBytes": 48000000,
         "maxWriteBatchSize": 100000, "maxWireVersion": 17, "minWireVersion": 0, "ok": 1.0}
VERSION = "6.0.0-scripted"
BUILD_INFO = {"version": VERSION, "versionArray": [6, 0, 0, -100], "gitVersion": "scripted", "ok": 1.0}


def _mongod_70(command: dict, db: str) -> dict:
    name = next(iter(command)).lower()
    if name in ("ismaster", "hello"):
        return HELLO
    if name == "buildinfo":
        return BUILD_INFO
    if name == "serverstatus":
        return {"process": "mongod", "opcounters": {}, "mem": {}, "storageEngine": {"name": "wiredTiger"},
                "wiredTiger": {}, "ok": 1.0}
    if name == "create" and command["create"] == tabletype.PROBE:
        return REFUSED
    if name in ("find", "listcollections"):   # an empty first batch; listCollections' ns is <db>.$cmd.listCollections
        ns = f"{db}.{command['find']}" if name == "find" else f"{db}.$cmd.listCollections"
        return {"cursor": {"firstBatch": [], "id": 0, "ns": ns}, "ok": 1.0}
    if name in ("insert", "update", "delete"):
        return {"n": 1, "ok": 1.0}
    return {"ok": 1.0}


def _lsm_server(address: str, refusal_path) -> ServerHandle:
    """The handle start_mongod gives a launched WiredTiger-LSM system (the deployment only named)."""
    deployment = SimpleNamespace(plan=SimpleNamespace(replsets={}), pids=[], stop=lambda: None)
    return ServerHandle(f"mongodb://{address}/?directConnection=true",
                        {"python": sys.executable, "executor": "driver"}, "enginebench", deployment,
                        {"engine": "wiredTiger", "table_type": "lsm"}, refusal_path=refusal_path)


def _open_as_the_runner_does(server: ServerHandle) -> dict:
    """Starts the companion from the runner spec's command line and sends it `open`; its reply."""
    spec = server.runner_spec({"label": "wtlsm.op1"}, keep_data=False)
    assert spec["companion"][-2:] == ["--refusal-file", str(server.refusal_path)]
    companion = subprocess.Popen(spec["companion"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(60, companion.kill)   # bounded: a hung companion fails the test, not the session
    timer.start()
    try:
        request = {"id": 1, "op": "open", "uri": spec["uri"], "database": spec["database"], "timeout_ms": 5000}
        out, _ = companion.communicate(json.dumps(request) + "\n")
    finally:
        timer.cancel()
    return json.loads(out.splitlines()[0])


def test_the_refusal_is_written_down_with_the_servers_words_and_version(tmp_path):
    with ScriptedServer(_mongod_70) as mongod:
        server = _lsm_server(mongod.address, tmp_path / "table_type_refused.json")
        reply = _open_as_the_runner_does(server)
        assert [c["create"] for c in mongod.commands("create")][-1] == tabletype.PROBE   # after the capabilities
    # what the runner gets: the error, by its kind, with the server's words and version
    assert reply["error"]["type"] == "TableTypeRefused"
    assert ("the server (version 6.0.0-scripted) refuses WiredTiger LSM tables (code 6627201: Configuration "
            "'type=lsm' is not supported.)") in reply["error"]["message"]
    # what the driver reads afterwards
    refused = server.table_type_refusal()
    assert refused["server_code"] == 6627201 and refused["version"] == "6.0.0-scripted"
    assert refused["server_said"] == "Configuration 'type=lsm' is not supported."
    assert refused["reason"] == reply["error"]["message"]


def test_a_server_that_makes_other_tables_is_written_down_too(tmp_path):
    """A server that takes the startup config string and makes plain tables (collStats'
    wiredTiger.type "file": WiredTigerRecordStore::appendCustomStats, mongodb r3.2.0
    wiredtiger_record_store.cpp) skips the system the same way."""
    def made_file_tables(command, db):
        if next(iter(command)).lower() == "create":
            return {"ok": 1.0}
        if next(iter(command)).lower() == "collstats":
            return {"ns": f"{db}.{command['collStats']}", "count": 0, "wiredTiger": {"type": "file"}, "ok": 1.0}
        return _mongod_70(command, db)
    with ScriptedServer(made_file_tables) as mongod:
        server = _lsm_server(mongod.address, tmp_path / "table_type_refused.json")
        reply = _open_as_the_runner_does(server)
    assert reply["error"]["type"] == "TableTypeRefused"
    refused = server.table_type_refusal()
    assert refused["server_said"] == "collStats wiredTiger.type: 'file'" and refused["version"] == "6.0.0-scripted"
    assert "the server (version 6.0.0-scripted) made _enginebench_table_type as file tables" in refused["reason"]


def _refused_result(tmp_path) -> tuple[dict, ServerHandle]:
    """The system's result as Supervision leaves it when the runner ended on the companion's error
    (run.rs: a failed event "StoreError: " + child.rs's "the server's companion: open: <type>: ..."),
    beside the server whose companion wrote the refusal down."""
    with ScriptedServer(_mongod_70) as mongod:
        server = _lsm_server(mongod.address, tmp_path / "table_type_refused.json")
        reply = _open_as_the_runner_does(server)
    error = f"StoreError: the server's companion: open: {reply['error']['type']}: {reply['error']['message']}"
    result = {"label": "wtlsm.op1", "status": "failed", "error": error, "events": [{"event": "failed", "error": error}]}
    return result, server


def test_the_driver_skips_the_system_and_the_run_goes_on(tmp_path, monkeypatch):
    refused, server = _refused_result(tmp_path)
    ran = []

    def run_system(folder, params, system, target, stop_flag, plan, scratch, data, code=None):
        ran.append(system["label"])
        if system["label"] == "wtlsm.op1":
            result = dict(refused)
            driver._server_findings(result, server)   # as _run_system does once the runner has ended
        else:
            result = {"label": system["label"], "status": "complete", "error": None, "events": []}
        folder.systems[system["label"]] = {"status": result["status"], "error": result["error"]}
        driver._record_findings(folder, result)
        return result
    monkeypatch.setattr(driver, "_run_system", run_system)

    folder = SimpleNamespace(manifest={}, systems={}, write_manifest=lambda: None,
                             probe_before=lambda label: None)   # the host probe is not what this test is about
    prepared = SimpleNamespace(params={"supervision": {"on_failure": "stop"}}, resolved={"kind": "mongod"},
                               systems=[{"label": "wtlsm.op1"}, {"label": "wt.op1"}],
                               system_plans={"wtlsm.op1": None, "wt.op1": None}, data=None, code=None)
    assert driver._run_in_order(folder, prepared, threading.Event(), None) == "complete"
    assert ran == ["wtlsm.op1", "wt.op1"] and "stopped" not in folder.manifest
    skipped = folder.systems["wtlsm.op1"]
    assert skipped["status"] == "skipped"
    assert skipped["error"].startswith(f"the server (version {VERSION}) refuses WiredTiger LSM tables (code "
                                       "6627201: Configuration 'type=lsm' is not supported.)")
    assert skipped["skipped"]["server_code"] == 6627201 and skipped["runner_error"] == refused["error"]
    # the run stays complete, as with a system skipped before anything started; a failed one does not
    assert driver.run_status("complete", folder.systems) == "complete"
    assert driver.run_status("complete", {**folder.systems, "rx.op1": {"status": "failed"}}) == "failed"


def test_a_failure_with_no_refusal_written_stays_a_failure(tmp_path):
    server = _lsm_server("127.0.0.1:1", tmp_path / "table_type_refused.json")   # nothing written there
    result = {"label": "wtlsm.op1", "status": "failed", "events": [],
              "error": "the runner exited with code 2 before its first phase; its log is empty"}
    driver._server_findings(result, server)
    assert result["status"] == "failed" and "skipped" not in result


def test_the_report_names_the_skip_on_top(tmp_path):
    refused, server = _refused_result(tmp_path)
    driver._server_findings(refused, server)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    manifest = {"run_id": "20270101-000000-host", "experiment": "linkbench_cached", "scale": "default",
                "status": driver.run_status("complete", {"wtlsm.op1": refused}), "target": {"kind": "mongod"},
                "banner": [], "params": {"systems": [{"label": "wtlsm.op1", "role": "lsm", "engine": "wiredtiger"}]},
                "systems": {"wtlsm.op1": {"status": refused["status"], "error": refused["error"],
                                          "skipped": refused["skipped"]}}}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    page = html_lib.unescape(html.banner(load_run(run_dir)))
    first = page[page.index("<div"):].split("<br>")[0]
    assert (f"wtlsm.op1 skipped: the server (version {VERSION}) refuses WiredTiger LSM tables (code 6627201: "
            "Configuration 'type=lsm' is not supported.)") in first
    assert "status <b>complete</b>" in page


@pytest.mark.parametrize("made, refused", [("lsm", False), ("file", True)])
def test_check_names_the_version_it_was_given(made, refused):
    db = SimpleNamespace(command=lambda *a: {"wiredTiger": {"type": made}})
    if refused:
        with pytest.raises(tabletype.TableTypeRefused, match=r"the server \(version 6\.0\.2\) made link as file"):
            tabletype.check(db, "link", "lsm", "6.0.2")
    else:
        assert tabletype.check(db, "link", "lsm", "6.0.2") == "lsm"
