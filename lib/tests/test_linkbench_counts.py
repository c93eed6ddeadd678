"""The two count semantics of LinkBench (`counts:`): the document writes each operation makes, and
what the consistency check reports after them. `linkbenchx` follows LinkbenchX's MongoDB store
(Percona-Lab/linkbenchX at 84aeea1, src/main/java/com/percona/LinkBench/LinkStoreMongoDBv2.java);
`exact` follows LinkBench's MySQL store."""
import threading
import time

import pytest

from enginebench.runner.recorder import PhaseClock, Recorder
from enginebench.workloads.linkbench import operations as ops
from enginebench.workloads.linkbench.workload import LinkBench, Params
from enginebench.stores import open_embedded
from conftest import EMBEDDED


class CountingStore:
    """A store that counts the documents each call writes: inserted, deleted, or updated so that
    the document changed (what mongod logs to its oplog; an update setting the values a document
    already has writes nothing there). `rewrites` counts matched updates, changed or not."""

    def __init__(self, store):
        self.store = store
        self.writes = self.rewrites = 0

    def __getattr__(self, name):
        return getattr(self.store, name)

    def insert_many(self, collection, docs):
        n = self.store.insert_many(collection, docs)
        self.writes += n
        return n

    def update(self, collection, index, key, **kwargs):
        before = self.store.get(collection, index, key)
        result = self.store.update(collection, index, key, **kwargs)
        if result.matched:
            self.rewrites += 1
            self.writes += self.store.get(collection, index, key) != before
        self.writes += result.upserted
        return result

    def delete(self, collection, index, key, **kwargs):
        deleted = self.store.delete(collection, index, key, **kwargs)
        self.writes += deleted
        return deleted

    def run_in_transaction(self, fn, *args, **kwargs):
        return self.store.run_in_transaction(fn, *args, **kwargs)


def link(id2, time_ms=100, data=b"d"):
    return {"link_type": 7, "id1": 1, "id2": id2, "visibility": ops.VISIBLE, "time": time_ms, "version": 0,
            "data": data}


def writes_of(store: CountingStore, call) -> int:
    before = store.writes
    call()
    return store.writes - before


def test_params_default_to_the_posts_counts_and_refuse_others():
    assert Params(maxid1=10).counts == "linkbenchx"
    with pytest.raises(ValueError, match="linkbenchx"):
        Params(maxid1=10, counts="mysql")


@pytest.mark.parametrize("counts, new_link, existing_link, hide", [("exact", 2, 1, 2), ("linkbenchx", 3, 3, 3)])
def test_document_writes_per_operation(embedded_store, counts, new_link, existing_link, hide):
    """exact: the link, and the count only when it changes. linkbenchx: the link upsert, the count
    replaced and then $inc'ed; an existing link's upsert sets the visibility it already has (no
    change) and a second update writes its data."""
    s = CountingStore(embedded_store)
    ops.create_schema(s)
    assert writes_of(s, lambda: ops.add_link(s, link(2), counts)) == new_link
    assert writes_of(s, lambda: ops.add_link(s, link(2, 200, b"e"), counts)) == existing_link
    assert writes_of(s, lambda: ops.delete_link(s, 1, 7, 2, 300, counts)) == hide
    assert writes_of(s, lambda: ops.delete_link(s, 1, 7, 2, 301, counts)) == 0   # already hidden


def test_linkbenchx_counts_lose_their_count_as_linkbenchx_left_them(embedded_store):
    """The replacement upsert drops `count`, and the $inc that follows increments only `version`;
    a new count row gets count 1. The check reports the drift and says which semantics ran."""
    s = embedded_store
    lb = LinkBench(Params(maxid1=100, max_degree=5))
    lb.setup(s)
    ops.add_link(s, link(2), "linkbenchx")
    assert s.get(ops.COUNT, ops.COUNT_PK.name, (1, 7))["count"] == 1
    assert lb.check(s)["mismatches"] == 0
    ops.add_link(s, link(3), "linkbenchx")
    row = s.get(ops.COUNT, ops.COUNT_PK.name, (1, 7))
    assert "count" not in row and row["version"] == 1
    assert ops.count_links(s, 1, 7) == 0
    found = lb.check(s)
    assert found["mismatches"] == 1 and found["counts"] == "linkbenchx"
    assert found["examples"] == [{"id1": 1, "link_type": 7, "count": 0, "visible_links": 2}]


def _load_and_request(store, counts: str, n_requests: int) -> tuple[float, float, dict]:
    """A small graph loaded and `n_requests` of LinkBench's mix run on it: (document writes per
    request, matched-or-inserted writes per request, the consistency check)."""
    lb = LinkBench(Params(maxid1=3000, max_degree=50, counts=counts))
    lb.setup(store)
    rec = Recorder(PhaseClock(time.time(), 100))
    for load in lb.load(1):
        load(store, rec, threading.Event())
    counting = CountingStore(store)
    requester = lb.requester(0, 1)
    for _ in range(n_requests):
        _, call = requester.next()
        call(counting)
    return counting.writes / n_requests, counting.rewrites / n_requests, lb.check(store)


@pytest.mark.parametrize("counts, low, high", [("exact", 0.35, 0.5), ("linkbenchx", 0.6, 0.8)])
def test_request_mix_writes_and_consistency(tmp_path, counts, low, high):
    """The mix's document writes per request: ~0.42 for exact counts, ~0.70 for LinkbenchX's
    pattern; the check finds the drift LinkbenchX leaves and none under exact counts."""
    _, engine, options = EMBEDDED[0]
    store = open_embedded(engine, tmp_path / "db", options)
    try:
        per_request, _, check = _load_and_request(store, counts, 4000)
    finally:
        store.close()
    assert low <= per_request <= high, per_request
    assert check["counts"] == counts
    if counts == "exact":
        assert check["mismatches"] == 0
    else:
        assert check["mismatches"] > 0


def test_the_report_names_exact_counts_as_a_departure_from_the_post():
    from enginebench.fidelity import departures
    from enginebench.params import load_params
    params = load_params("linkbench_cached", "smoke")
    assert params["workload"]["counts"] == "linkbenchx" and departures(params, "embedded") == []
    params["workload"]["counts"] = "exact"
    (line,) = departures(params, "embedded")
    assert line.startswith("Count rows kept exactly (counts: exact")
