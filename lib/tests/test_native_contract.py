"""Same seed, same operations: the native runner issues exactly the requests and writes exactly
the documents that the workloads' Python definitions do (`enginebench-runner trace` prints them
with a fixed clock; the Python generators run here with the same clock)."""
import json
import random
import subprocess
import threading

import bson
import pytest
from bson import json_util

from enginebench.paths import native_runner
from enginebench.workloads import iibench as ii_workload
from enginebench.workloads import linkbench as lb_workload
from enginebench.workloads import sysbench as sb_workload
from enginebench.workloads import tokumx as tk

CLOCK_MS = 1_700_000_000_000


@pytest.fixture
def fixed_clock(monkeypatch):
    monkeypatch.setattr("time.time", lambda: CLOCK_MS / 1000)


def trace(workload: dict, what: str, **flags) -> list:
    argv = [str(native_runner()), "trace", "--workload", json.dumps(workload), "--what", what,
            "--clock-ms", str(CLOCK_MS)]
    for key, value in flags.items():
        argv += [f"--{key}", str(value)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120).stdout
    return [json_util.loads(line) for line in out.splitlines()]


def _hex(data: bytes) -> str:
    return data.hex()


def describe(op: str, a: dict) -> dict:
    """A drawn LinkBench request in the vocabulary the native trace prints."""
    if op in ("ADD_LINK", "UPDATE_LINK"):
        return {"op": op, "link_type": a["link_type"], "id1": a["id1"], "id2": a["id2"], "visibility": a["visibility"],
                "time": a["time"], "version": a["version"], "data": _hex(a["data"])}
    if op == "ADD_NODE":
        node = a["node"]
        return {"op": op, "id": node["_id"], "time": node["time"], "data": _hex(node["data"])}
    if op == "UPDATE_NODE":
        return {"op": op, "id": a["id"], "time": a["time"], "data": _hex(a["data"])}
    return {"op": op, **a}


class Recording:
    """A store and a recorder that only keep what a loader would write, in order."""

    def __init__(self):
        self.calls = []

    def insert_many(self, collection, docs):
        self.calls.append((collection, list(docs)))
        return len(docs)

    def upsert_many(self, collection, index, upserts):
        """The load's bulk upserts (`counts: linkbenchx`), kept as the documents they insert."""
        self.calls.append((collection, [a["replace"] if "replace" in a else {**a["set_on_insert"], **a["set"]}
                                        for _, a in upserts]))
        return len(upserts)

    def call(self, op, fn, *args, items=None, intended_ns=None):
        return fn(*args)


# Both count semantics: they change how requests and the load write, never what they draw.
LINKBENCH = [{"maxid1": 5001, "max_degree": 1000, "counts": "exact"},
             {"maxid1": 5001, "max_degree": 1000, "counts": "linkbenchx"},
             {"maxid1": 1_000_001, "max_degree": 100_000, "seed": 7}]
LINKBENCH_IDS = ["smoke-graph-exact", "smoke-graph-linkbenchx", "1M-graph"]


@pytest.mark.parametrize("params", LINKBENCH, ids=LINKBENCH_IDS)
def test_linkbench_requests(fixed_clock, params):
    for worker, workers in ((0, 1), (2, 4)):
        requester = lb_workload.LinkBench(lb_workload.Params(**params)).requester(worker, workers)
        python = [describe(*requester.draw()) for _ in range(3000)]
        native = trace({"name": "linkbench", **params}, "requests", worker=worker, workers=workers, n=3000)
        assert len(native) == len(python)
        for i, (p, n) in enumerate(zip(python, native)):
            assert p == n, f"request {i} of worker {worker}/{workers} differs"


@pytest.mark.parametrize("params", LINKBENCH, ids=LINKBENCH_IDS)
def test_linkbench_load(fixed_clock, params):
    lb = lb_workload.LinkBench(lb_workload.Params(**params, load_batch=10**9))
    assert trace({"name": "linkbench", **params}, "expected")[0] == lb.expected_after_load()
    store = Recording()
    chunks = __import__("queue").Queue()
    chunks.put(2049)
    lb._load_links(store, store, threading.Event(), chunks, 0)
    links = [d for c, docs in store.calls if c == "link" for d in docs]
    counts = [d for c, docs in store.calls if c == "count" for d in docs]
    native = trace({"name": "linkbench", **params}, "load", chunk=2049, n=10**6)
    assert [{k: n[k] for k in ("link_type", "id1", "id2", "time", "data")} for n in native if n["kind"] == "link"] == \
        [{"link_type": d["link_type"], "id1": d["id1"], "id2": d["id2"], "time": d["time"], "data": _hex(d["data"])}
         for d in links]
    assert [{k: n[k] for k in ("id", "link_type", "count", "time")} for n in native if n["kind"] == "count"] == \
        [{"id": d["id"], "link_type": d["link_type"], "count": d["count"], "time": d["time"]} for d in counts]
    nodes = Recording()
    lb._load_nodes(nodes, nodes, threading.Event())
    python_nodes = [d for _, docs in nodes.calls for d in docs][:500]
    assert trace({"name": "linkbench", **params}, "nodes", n=500) == \
        [{"id": d["_id"], "data": _hex(d["data"])} for d in python_nodes]


@pytest.mark.parametrize("counts", ["exact", "linkbenchx"])
def test_linkbench_requests_leave_the_same_documents(fixed_clock, tmp_path, counts):
    """Same seed, same count semantics: the Python operations (over the served store) and the
    native ones leave the same links, count rows and nodes, drift included under linkbenchx."""
    from enginebench.stores import open_embedded
    from enginebench.workloads.linkbench import operations as ops
    params, n = {"maxid1": 300, "max_degree": 20, "counts": counts}, 3000
    native = trace({"name": "linkbench", **params}, "apply", n=n, dir=tmp_path / "native")
    lb = lb_workload.LinkBench(lb_workload.Params(**params))
    store = open_embedded("wiredtiger", tmp_path / "python", {"table_type": "btree", "cache_size_mb": 32})
    try:
        lb.setup(store)
        requester = lb.requester(0, 1)
        for _ in range(n):
            requester.next()[1](store)
        python = [{"collection": c, "doc": {k: v for k, v in d.items() if not isinstance(v, bson.ObjectId)}}
                  for c, index in ((ops.LINK, ops.LINK_PK.name), (ops.COUNT, ops.COUNT_PK.name), (ops.NODE, None))
                  for d in store.scan(c, index)]
        drift = lb.check(store)["mismatches"]
    finally:
        store.close()
    assert {d["collection"] for d in native} == {"link", "count", "node"}
    assert (drift > 0) == (counts == "linkbenchx")
    assert len(native) == len(python)
    for i, (p, nat) in enumerate(zip(python, native)):
        assert p == nat, f"document {i} differs"


IIBENCH = {"max_rows": 1000, "docs_per_insert": 10, "num_secondary_indexes": 3, "num_char_fields": 1,
           "length_char_fields": 1000, "percent_compressible": 50, "max_inserts_per_second": None, "query_threads": 1,
           "query_limit": 4, "query_begin_docs": 100, "ms_between_queries": 0, "slow_threshold_s": 2.0}


def test_iibench_documents_and_queries(fixed_clock):
    ii = ii_workload.IIBench(ii_workload.Params(**IIBENCH))
    rng = random.Random(1)
    python = [ii.document(rng) for _ in range(200)]
    native = trace({"name": "iibench", **IIBENCH}, "docs", worker=1, n=200)
    assert [bson.encode(d) for d in native] == [bson.encode(d) for d in python]  # same fields, types, order
    queries = trace({"name": "iibench", **IIBENCH}, "queries", worker=0, n=30)
    rng = random.Random(0 + CLOCK_MS)
    for k, q in enumerate(queries):
        customer = rng.randrange(ii_workload.NUM_CUSTOMERS)
        price = ii._price(rng, customer)
        register = rng.randrange(ii_workload.NUM_CASH_REGISTERS)
        t = rng.randint(CLOCK_MS, CLOCK_MS)
        assert q == {"op": ("QUERY_PDC", "QUERY_MARKETSEGMENT", "QUERY_REGISTERSEGMENT")[k % 3], "price": price,
                     "customer": customer, "register": register, "t": t}


SYSBENCH = {"collections": 3, "docs_per_collection": 5000, "docs_per_insert": 1000, "range_size": 100, "point_selects": 10,
            "simple_ranges": 1, "sum_ranges": 1, "order_ranges": 1, "distinct_ranges": 1, "index_updates": 1,
            "non_index_updates": 1, "inserts": 1, "max_tps": None, "seed": 1}


def test_sysbench_load_and_transactions():
    sb = sb_workload.Sysbench(sb_workload.Params(**SYSBENCH))
    store = Recording()
    pending = sb.load(1)
    pending[0](store, store, threading.Event())
    second = [d for c, docs in store.calls if c == "sbtest2" for d in docs]
    assert trace({"name": "sysbench", **SYSBENCH}, "load", chunk=2, n=10**6) == second
    for worker in (0, 3):
        rng = random.Random(SYSBENCH["seed"] + worker)
        python = []
        for _ in range(50):
            name = rng.choice(sb.names)
            args = sb._draw(rng)
            python.append({"collection": name, **{k: [list(v) if isinstance(v, tuple) else v for v in vs]
                                                  for k, vs in args.items()}})
        assert trace({"name": "sysbench", **SYSBENCH}, "requests", worker=worker, n=50) == python


TOKUMX = {"experiment": "read_update", "documents": 5000, "payload_chars": 200, "load_batch": 1000,
          "seed": 1}


def test_tokumx_documents_and_clients():
    rng = random.Random(TOKUMX["seed"])
    python = [tk.document(rng, i, TOKUMX["payload_chars"]) for i in range(300)]
    assert trace({"name": "tokumx", **TOKUMX}, "load", n=300) == python
    rng = random.Random(f"{TOKUMX['seed']}/2/1")
    assert trace({"name": "tokumx", **TOKUMX}, "requests", worker=1, workers=2, n=100)[0] == \
        [rng.randint(1, TOKUMX["documents"]) for _ in range(100)]
