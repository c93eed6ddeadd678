"""The second stand-in server, FerretDB (`make ferretdb`), starts on 127.0.0.1, speaks wire
version 21 to our own client and to pymongo, and leaves neither a process nor a folder behind."""
import pytest

from enginebench import ferretdb
from enginebench.mongod import wire

pytestmark = pytest.mark.skipif(ferretdb.missing() is not None, reason=ferretdb.missing() or "")


def test_ferretdb_starts_answers_and_cleans_up(tmp_path):
    import pymongo

    with ferretdb.ferretdb_server(tmp_path / "logs") as (uri, proc, folder):
        assert uri.startswith("mongodb://127.0.0.1:")
        host, port = uri.removeprefix("mongodb://").rstrip("/").split(":")
        hello = wire.command(host, int(port), {"isMaster": 1})
        assert hello["maxWireVersion"] >= 21, hello
        with pymongo.MongoClient(uri, serverSelectionTimeoutMS=10_000) as client:
            docs = client["enginebench_test"]["t"]
            docs.insert_one({"_id": 1, "x": "one"})
            assert docs.find_one({"_id": 1}) == {"_id": 1, "x": "one"}
        assert proc.poll() is None
        assert folder.is_dir()
    assert proc.returncode is not None, "the server is stopped"
    assert not folder.exists(), "its folder is removed"
    assert (tmp_path / "logs" / "ferretdb.log").is_file()
