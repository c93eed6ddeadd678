"""tokumx_insert_20m's replicated part on a real mongod: a 3-member replica set with a tiny oplog,
one secondary paused while the primary takes single-document inserts, then resumed. It must come
back "too stale to catch up" (the post's RS102), the run must stop with that finding recorded,
and the report must evaluate tk.insert20m.stale from it, not show a crash.

Nothing is mocked; without a mongod binary the test skips with the reason. Only the experiment's
sizes differ from the shipped params (a small oplog and larger documents, so a paused secondary
falls off the oplog within seconds).
"""
import threading
import time
from pathlib import Path

import polars as pl
import psutil
import pytest

from conftest import NO_MONGOD, mongod_binary

pytestmark = pytest.mark.skipif(mongod_binary() is None, reason=NO_MONGOD)

DOCUMENTS, PAYLOAD, OPLOG_MB = 30_000, 10_000, 1
PAUSE_AT, WRAPS = 500, 20  # pause after 500 documents; resume after 20 oplogs' worth more

PARAMS = """experiment: tokumx_insert_20m
notebook: tokumx
title: "stale-secondary probe"
question: does a secondary paused past the oplog window come back too stale?
seed: 004_b83309e5a061f49f.txt
reference: {{table: tokumx_2013.csv, config: insert_20m}}
workload: {{name: tokumx, experiment: insert, documents: {documents}, payload_chars: {payload}, interval_s: 1}}
phases: {{max_errors: 0}}
metrics: {{sample_s: 0.5}}
# The claim names the mmap role (the post's MMAPv1); the engine is mmapv1 where the binary has it.
systems:
  - {{label: mm, role: mmap, engine: lmdb, options: {{oplog: true, oplog_size_mb: {oplog}}},
     mongod: {{engine: {engine}, topology: replset, members: 3, oplog_size_mb: {oplog}, on_stale_secondary: stop,
              lag_sample_s: 0.5}}}}
"""


def servers_under(path: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            if "mongod" in (proc.info["name"] or "") and str(path) in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def listening_port(proc: psutil.Process) -> int | None:
    try:
        return next((c.laddr.port for c in proc.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN), None)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


class Provoker(threading.Thread):
    """Pauses one secondary once the inserts run, resumes it when the primary has written
    WRAPS oplogs' worth more, so it cannot catch up."""

    def __init__(self, root: Path):
        super().__init__(daemon=True)
        self.root, self.paused, self.log = root, None, []
        self.done = threading.Event()

    def members(self):
        import pymongo
        out = {}
        for proc in servers_under(self.root):
            port = listening_port(proc)
            if port is None:
                continue
            client = pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/?directConnection=true",
                                         serverSelectionTimeoutMS=2000)
            try:
                hello = client.admin.command("hello")
            except Exception:
                client.close()
                continue
            out[proc.pid] = (proc, client, "primary" if hello.get("isWritablePrimary") else
                             "secondary" if hello.get("secondary") else "other")
        return out

    def run(self):
        deadline = time.time() + 600
        try:
            while time.time() < deadline and not self.done.is_set():
                members = self.members()
                primary = next((m for m in members.values() if m[2] == "primary"), None)
                secondaries = [m for m in members.values() if m[2] == "secondary"]
                if primary is None or len(secondaries) < 2 or primary[1].enginebench.johan.estimated_document_count() < PAUSE_AT:
                    for _, client, _ in members.values():
                        client.close()
                    time.sleep(0.2)
                    continue
                admin = primary[1].admin
                # No chaining: the other secondary must keep syncing from the primary (and keep the
                # majority commit point moving) while this one is paused.
                config = admin.command("replSetGetConfig")["config"]
                config.setdefault("settings", {})["chainingAllowed"] = False
                config["version"] += 1
                admin.command("replSetReconfig", config)
                self.paused = secondaries[0][0]
                start = primary[1].enginebench.johan.estimated_document_count()
                self.paused.suspend()
                self.log.append(f"paused {self.paused.pid} at {start} documents")
                needed = WRAPS * OPLOG_MB * (1 << 20) // PAYLOAD
                while primary[1].enginebench.johan.estimated_document_count() < start + needed and time.time() < deadline:
                    time.sleep(0.2)
                self.paused.resume()
                self.log.append(f"resumed at {primary[1].enginebench.johan.estimated_document_count()} documents")
                for _, client, _ in members.values():
                    client.close()
                return
        except Exception as exc:  # reported by the test's assertions, with this log
            self.log.append(f"{type(exc).__name__}: {exc}")
        finally:
            if self.paused is not None and self.paused.is_running():
                self.paused.resume()


def test_stale_secondary_is_a_finding_of_tokumx_insert_20m(tmp_path, isolated_run, monkeypatch):
    import enginebench
    from enginebench.mongod.binary import identify
    from enginebench.mongod.legacy import modern_min_wire, wire_version
    from enginebench.paths import reference_dir
    from enginebench.families.tokumx import report as tk
    from enginebench.report.claims import HOLDS
    from enginebench.report.rundata import load_run

    info = identify(mongod_binary())
    if wire_version(info) < modern_min_wire():
        pytest.skip(f"{info.version}: the probe drives the members with this environment's pymongo")
    root = tmp_path / "root"
    (root / "params").mkdir(parents=True)
    (root / "data").mkdir()
    (root / ".enginebench-root").touch()
    (root / "data" / "reference").symlink_to(reference_dir())
    engine = "mmapv1" if "mmapv1" in info.engines else info.default_engine
    (root / "params" / "tokumx_insert_20m.yaml").write_text(
        PARAMS.format(documents=DOCUMENTS, payload=PAYLOAD, oplog=OPLOG_MB, engine=engine))
    monkeypatch.setenv("ENGINEBENCH_ROOT", str(root))

    provoker = Provoker(tmp_path / "data")
    provoker.start()
    try:
        run = load_run(enginebench.run("tokumx_insert_20m", "smoke", "mongod"))
    finally:
        provoker.done.set()
        provoker.join(timeout=30)
    assert provoker.paused is not None, provoker.log

    mm = next(s for s in run.systems if s["label"] == "mm")
    assert mm["status"] == "complete", (mm, provoker.log)
    assert "mm" in tk.stale_findings(run), provoker.log
    verified = mm["load_verified"]
    assert verified["stopped_by"] == "stale_secondary" and verified["found"]["documents"] < DOCUMENTS
    claim = tk.claims_table(run).filter(pl.col("id") == tk.STALE_CLAIM).row(0, named=True)
    assert claim["verdict"] == HOLDS and "stale_secondary" in claim["from"]
    assert "stale secondary" in tk.replication_note(run)
    assert not servers_under(tmp_path / "data"), "every mongod is stopped after the run"
