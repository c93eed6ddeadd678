import os
import shutil

import pytest

from enginebench.stores.native import NativeStore

# The longest test files (each over half a minute of one process; `make test` prints the slowest
# tests), handed out first: `make test` gives each file to one of two processes as they free up,
# and a long file handed out last kept one process busy minutes after the other had finished.
LONGEST_FIRST = ("test_uri_standin.py", "test_faults.py", "test_executors_agree.py", "test_report_renders.py",
                 "test_interrupt.py", "test_cluster.py", "test_tokumx_smoke.py", "sysbench.ipynb",
                 "test_extending.py", "test_run_reports.py", "test_smoke_run.py", "linkbench.ipynb",
                 "test_open_loop.py", "test_resources.py")


def pytest_collection_modifyitems(items):
    """The files in LONGEST_FIRST first, in that order; the rest as collected (a stable sort, the
    same on every process, as the scheduler needs)."""
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FIRST)))


# The four embedded systems every test runs against: (id, engine, options).
EMBEDDED = [
    ("wt-btree", "wiredtiger", {"table_type": "btree", "cache_size_mb": 32}),
    ("wt-lsm", "wiredtiger", {"table_type": "lsm", "cache_size_mb": 48}),
    ("rocksdb", "rocksdb", {"cache_size_mb": 32}),
    ("lmdb", "lmdb", {"map_size_gb": 1}),
]


@pytest.fixture(params=EMBEDDED, ids=[e[0] for e in EMBEDDED])
def embedded_store(request, tmp_path):
    """The native record store of each embedded engine (the one the runner measures)."""
    _, engine, options = request.param
    store = NativeStore(engine, tmp_path / "db", options)
    yield store
    store.close()


def mongod_binary():
    """The mongod named by MONGOD, or found on PATH; None when there is none."""
    path = os.environ.get("MONGOD") or shutil.which("mongod")
    return path if path and os.access(path, os.X_OK) else None


NO_MONGOD = "no mongod binary: set MONGOD=/path/to/mongod (none can be installed from this machine's package registries)"


@pytest.fixture
def isolated_run(tmp_path, monkeypatch):
    """Runs started by a test write their results and engine files under tmp_path."""
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("ENGINEBENCH_DATA", str(tmp_path / "data"))
    return tmp_path


def smoke_run_fixture(experiment: str, target: str = "auto"):
    """A module-scoped fixture: one smoke run of `experiment` in its own folders, loaded for the
    report code (its folder is the RunData's path), shared by a module's tests."""
    @pytest.fixture(scope="module")
    def smoke(tmp_path_factory):
        base = tmp_path_factory.mktemp(experiment)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("ENGINEBENCH_RESULTS", str(base / "r"))
            patch.setenv("ENGINEBENCH_DATA", str(base / "d"))
            import enginebench
            from enginebench.report.rundata import load_run
            yield load_run(enginebench.run(experiment, "smoke", target))
    return smoke


@pytest.fixture(scope="session")
def standin_uri(tmp_path_factory):
    """The Java stand-in wire-protocol server (wire version 8), for this test session."""
    import standin
    if standin.missing():
        pytest.skip(standin.missing())
    with standin.standin_server(tmp_path_factory.mktemp("standin")) as (uri, _, _):
        yield uri


@pytest.fixture(scope="session")
def ferretdb_uri(tmp_path_factory):
    """FerretDB (wire version 21: today's driver's path), for this test session."""
    from enginebench import ferretdb
    if ferretdb.missing():
        pytest.skip(ferretdb.missing())
    with ferretdb.ferretdb_server(tmp_path_factory.mktemp("ferretdb")) as (uri, _, _):
        yield uri
