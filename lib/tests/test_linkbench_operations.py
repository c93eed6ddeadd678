"""Count maintenance as LinkBench's MySQL store does it, on every embedded engine."""
import threading

from enginebench.workloads.linkbench import operations as ops
from enginebench.workloads.linkbench.workload import LinkBench, Params


def link(id2, visibility=1, time=100):
    return {"link_type": 7, "id1": 1, "id2": id2, "visibility": visibility, "time": time, "version": 0, "data": b"d"}


def test_count_follows_visible_links(embedded_store):
    s = embedded_store
    ops.create_schema(s)
    assert ops.count_links(s, 1, 7) == 0
    assert ops.add_link(s, link(2)) == 1                 # new link: +1
    assert ops.add_link(s, link(3)) == 1
    assert ops.count_links(s, 1, 7) == 2
    assert ops.add_link(s, link(2, time=200)) == 0       # update of a visible link: unchanged
    assert ops.count_links(s, 1, 7) == 2
    assert ops.delete_link(s, 1, 7, 2, 300) == 1         # hide: -1
    assert ops.delete_link(s, 1, 7, 2, 301) == 0         # already hidden: unchanged
    assert ops.delete_link(s, 1, 7, 99, 302) == 0        # missing: unchanged
    assert ops.count_links(s, 1, 7) == 1
    assert [l["id2"] for l in ops.get_link_list(s, 1, 7)] == [3]   # hidden links are not listed
    assert len(ops.multiget_links(s, 1, 7, [2, 3, 4])) == 2         # but multiget returns them
    assert ops.add_link(s, link(2, time=400)) == 1       # visible again: +1
    assert ops.count_links(s, 1, 7) == 2
    assert [l["id2"] for l in ops.get_link_list(s, 1, 7)] == [2, 3]  # newest first


def test_nodes(embedded_store):
    s = embedded_store
    ops.create_schema(s)
    ops.add_node(s, {"_id": 5, "type": ops.NODE_TYPE, "version": 1, "time": 1, "data": b"x"})
    assert ops.update_node(s, 5, 2, 9, b"y") == 1
    assert ops.get_node(s, 5)["version"] == 2
    assert ops.update_node(s, 6, 2, 9, b"y") == 0
    assert ops.delete_node(s, 5) == 1 and ops.get_node(s, 5) is None


def test_concurrent_writers_keep_counts_exact(embedded_store):
    """Threads adding and hiding the same links at once: the transaction must keep counts exact."""
    s = embedded_store
    lb = LinkBench(Params(maxid1=200, max_degree=20))
    lb.setup(s)

    def worker(seed):
        import random
        rng = random.Random(seed)
        for _ in range(300):
            id2 = 1 + rng.randrange(6)
            if rng.random() < 0.6:
                ops.add_link(s, {**link(id2), "time": rng.randrange(1000)})
            else:
                ops.delete_link(s, 1, 7, id2, 5)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lb.check(s)["mismatches"] == 0
    assert ops.count_links(s, 1, 7) == len(ops.get_link_list(s, 1, 7))


def test_consistency_check_finds_every_kind_of_mismatch(embedded_store):
    """Streaming merge of count rows and visible links: a wrong count, a missing row, a stray row."""
    import time
    from enginebench.runner.recorder import PhaseClock, Recorder
    from enginebench.workloads.linkbench.workload import _count_rows
    s = embedded_store
    lb = LinkBench(Params(maxid1=3000, max_degree=50))
    lb.setup(s)
    rec = Recorder(PhaseClock(time.time(), 100))
    for load in lb.load(1):
        load(s, rec, threading.Event())
    clean = lb.check(s)
    assert clean["mismatches"] == 0 and clean["count_rows"] == s.count(ops.COUNT, None)
    assert sum(1 for _ in _count_rows(s, page=7)) == clean["count_rows"]  # pages join exactly
    first, second = s.scan(ops.COUNT, ops.COUNT_PK.name, limit=2)
    s.update(ops.COUNT, None, (first["_id"],), set={"count": 999})
    s.delete(ops.COUNT, None, (second["_id"],))
    s.insert_many(ops.COUNT, [{"id": 10**9, "link_type": 1, "count": 2, "time": 0, "version": 0}])
    found = lb.check(s)
    assert found["mismatches"] == 3
    assert {e["count"] for e in found["examples"]} == {999, None, 2}
