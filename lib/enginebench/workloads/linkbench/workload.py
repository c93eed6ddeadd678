"""The LinkBench workload: graph load, request mix, and the count consistency check.

Load (spec §2): `loaders` threads take 2048-id chunks of [startid1, maxid1), highest first, and
write links and counts in batches of `load_batch`; one more thread inserts the nodes. Requests
(spec §3): each requester draws an operation from LinkBench's FB mix and its arguments from the
shuffled Zipf access distributions.
"""
from __future__ import annotations

import math
import queue
import random
import time
from typing import ClassVar, Literal

from bson import ObjectId

from pydantic import Field, model_validator

from ...params.phases import PhaseUse, WorkloadParams, uses
from ...runner.plan import request_loop
from ...runner.shared import TicketQueue
from ..base import Workload
from ...stores.base import Store
from . import operations as ops
from .distributions import (NLINKS_SEED, NODE_SEED, UNCORR_SEED, AccessChooser, BlendedChooser,
                            LinkCounts, MotifData, geometric_multiget, lognormal_size)

DEFAULT_LINK_TYPE = 123456789

# (op, percent) in LinkBench's cumulative order (FBWorkload.properties).
OP_MIX = (("ADD_LINK", 8.9886601), ("DELETE_LINK", 2.9907664), ("UPDATE_LINK", 8.0122125),
          ("COUNT_LINK", 4.8863567), ("MULTIGET_LINK", 0.5261142), ("GET_LINKS_LIST", 50.7119145),
          ("ADD_NODE", 2.5732789), ("UPDATE_NODE", 7.366437), ("DELETE_NODE", 1.0115914),
          ("GET_NODE", 12.9326683))
# Probability that the id2 of a single-link op hits an existing link (ID2Chooser's pExist).
P_EXIST = {"ADD_LINK": 0.05, "UPDATE_LINK": 0.9, "DELETE_LINK": 0.9, "MULTIGET_LINK": 0.5}
HISTORY_PCT = 0.3        # getlinklist_history
TAIL_CACHE_SIZE = 2048


LINK_DATASIZE = 8.0     # mean link payload (LinkBench's link_datasize)
NODE_DATASIZE = 128.0   # mean node payload (node_datasize)


class Params(WorkloadParams):
    """`workload:` of a LinkBench params file (LinkbenchX's properties, by name)."""
    name: Literal["linkbench"] = "linkbench"
    maxid1: int = Field(ge=2)
    startid1: int = Field(1, ge=1)
    link_type_count: int = Field(2, ge=1)
    load_batch: int = Field(1024, ge=1)
    chunk_size: int = Field(2048, ge=1)
    seed: int = 1
    # The CDF gives the top-ranked node 961,963 links whatever the graph size; on a tiny graph
    # that one node is most of the data. None keeps LinkBench's distribution as published.
    max_degree: int | None = Field(None, ge=1)
    # How ADD/UPDATE/DELETE_LINK and the load keep the count rows: "linkbenchx", what the post
    # ran against MongoDB 3.x (separate round trips, upserts, counts that drift: ~0.7 document
    # writes per request), or "exact", MySQL's single transaction (~0.4). The post's experiments
    # ran the first, so it is the default; operations.py names the source of each.
    counts: Literal["linkbenchx", "exact"] = "linkbenchx"

    PHASES: ClassVar[PhaseUse] = uses(
        "load.threads", "load.interval_s", "quiesce_s", "cold_start", "measure.threads", "measure.interval_s",
        "measure.duration_s", "measure.warmup_s", "measure.request_rate", "rate_sweep.fractions",
        "rate_sweep.seconds", "max_errors", required=("load", "measure", "measure.duration_s"))

    @model_validator(mode="after")
    def _range(self):
        if self.maxid1 <= self.startid1:
            raise ValueError(f"maxid1 ({self.maxid1}) must be greater than startid1 ({self.startid1})")
        return self


class LinkBench(Workload):
    # The post's load tables: documents inserted into all collections per second, and per-op
    # figures divided by node inserts.
    load_accounting = {"rate": "items", "rate_ops": None, "per_op": "LOAD_NODE_BULK"}
    shared_counters = ("link_chunks",)

    def __init__(self, config: Params):
        self.cfg = config
        self.n = config.maxid1 - config.startid1
        self.link_types = [DEFAULT_LINK_TYPE + i for i in range(config.link_type_count)]
        self.counts = LinkCounts(config.startid1, config.maxid1, config.link_type_count, config.max_degree)
        start, n = config.startid1, self.n
        uncorrelated = AccessChooser(start, n, UNCORR_SEED, 0.8)
        # 99.5% of link reads and writes draw from the uncorrelated Zipf(0.8); LinkBench reads its
        # write settings from the read_uncorr_ prefix, so writes blend the same way (spec §3.4).
        self.link_reads = BlendedChooser(uncorrelated, AccessChooser(start, n, NLINKS_SEED, 0.8), 99.5)
        self.link_writes = BlendedChooser(uncorrelated, AccessChooser(start, n, NLINKS_SEED, 0.741), 99.5)
        self.node_reads = AccessChooser(start, n, NODE_SEED, 0.625)
        self.node_updates = AccessChooser(start, n, NODE_SEED, 0.606)
        self.node_deletes = AccessChooser(start, n, NODE_SEED, None)
        self._requesters: dict[tuple[int, int], Requester] = {}

    # -- schema and expected sizes --------------------------------------------------------
    def setup(self, store: Store) -> None:
        ops.create_schema(store)

    def expected_after_load(self, load_threads: int = 1) -> dict:
        """Documents the load must leave: every node, the links of the degree model, one count
        row per (id1, type) with links."""
        links = rows = 0
        step = 1 << 20
        for lo in range(self.cfg.startid1, self.cfg.maxid1, step):
            ids = range(lo, min(lo + step, self.cfg.maxid1))
            per_type = self.counts.per_type(self.counts.total(list(ids)))
            links += int(per_type.sum())
            rows += int((per_type > 0).sum())
        return {"node": self.n, "link": links, "count": rows}

    # -- load -----------------------------------------------------------------------------
    def verify(self, store: Store) -> tuple[dict, dict]:
        expected = self.expected_after_load()
        return expected, {name: store.count(name, None) for name in expected}

    def load(self, loaders: int):
        """Callables fn(store, recorder, stop) for `loaders` link threads and one node thread."""
        # Highest ids first, as LinkBench queues them; the loaders take the chunks in turn, through
        # a shared counter, so loaders in different client processes take each chunk once.
        starts = list(range(self.cfg.startid1, self.cfg.maxid1, self.cfg.chunk_size))[::-1]
        chunks = TicketQueue(starts, self.counter("link_chunks"))
        threads = [lambda store, rec, stop, i=i: self._load_links(store, rec, stop, chunks, i)
                   for i in range(loaders)]
        threads.append(lambda store, rec, stop: self._load_nodes(store, rec, stop))
        return threads

    def _load_links(self, store, rec, stop, chunks, thread_index: int) -> None:
        """`chunks`: the chunks' first ids, taken with get_nowait() until queue.Empty."""
        links, counts = [], []
        batch = self.cfg.load_batch
        now_ms = int(time.time() * 1000)
        while not stop.is_set():
            try:
                start = chunks.get_nowait()
            except queue.Empty:
                break
            rng = random.Random(f"{self.cfg.seed}/links/{start}")
            datagen = MotifData(rng, 32, 100, 0.225)
            ids = list(range(start, min(start + self.cfg.chunk_size, self.cfg.maxid1)))
            per_type = self.counts.per_type(self.counts.total(ids))
            for row, id1 in enumerate(ids):
                for t, link_type in enumerate(self.link_types):
                    nlinks = int(per_type[row, t])
                    if not nlinks:
                        continue
                    newest = 0
                    for j in range(nlinks):
                        link_time = now_ms - (1 << 31) + rng.randrange(1 << 31)
                        newest = max(newest, link_time)
                        links.append({"_id": ObjectId(), "link_type": link_type, "id1": id1, "id2": id1 + j,
                                      "visibility": ops.VISIBLE,
                                      "data": datagen.make(rng, lognormal_size(rng, LINK_DATASIZE, 1.0, 254)),
                                      "time": link_time, "version": 0})
                        if len(links) >= batch:
                            self._write_links(store, rec, links)
                            links = []
                    counts.append({"_id": ObjectId(), "id": id1, "link_type": link_type, "count": nlinks,
                                   "time": newest, "version": 0})
                    if len(counts) >= batch:
                        self._write_counts(store, rec, counts)
                        counts = []
        if links and not stop.is_set():
            self._write_links(store, rec, links)
        if counts and not stop.is_set():
            self._write_counts(store, rec, counts)

    def _write_links(self, store, rec, links: list[dict]) -> None:
        """A batch of links: inserted (exact), or LinkbenchX's bulk of upserts by primary key."""
        if self.cfg.counts == "linkbenchx":
            rec.call("LOAD_LINKS_BULK", ops.load_links, store, links, items=len(links))
        else:
            rec.call("LOAD_LINKS_BULK", store.insert_many, ops.LINK, links, items=len(links))

    def _write_counts(self, store, rec, counts: list[dict]) -> None:
        """A batch of count rows: inserted (exact), or LinkbenchX's bulk of replaceOne upserts."""
        if self.cfg.counts == "linkbenchx":
            rec.call("LOAD_COUNTS_BULK", ops.load_counts, store, counts, items=len(counts))
        else:
            rec.call("LOAD_COUNTS_BULK", store.insert_many, ops.COUNT, counts, items=len(counts))

    def _load_nodes(self, store, rec, stop) -> None:
        rng = random.Random(f"{self.cfg.seed}/nodes")
        datagen = MotifData(rng, 50, 220, 0.63)
        now_s = int(time.time())
        batch = []
        for node_id in range(self.cfg.startid1, self.cfg.maxid1):
            if stop.is_set():
                return
            batch.append({"_id": node_id, "type": ops.NODE_TYPE, "version": 1, "time": now_s,
                          "data": datagen.make(rng, lognormal_size(rng, NODE_DATASIZE, 1.0, (1 << 20) - 1))})
            if len(batch) >= self.cfg.load_batch:
                rec.call("LOAD_NODE_BULK", store.insert_many, ops.NODE, batch, items=len(batch))
                batch = []
        if batch:
            rec.call("LOAD_NODE_BULK", store.insert_many, ops.NODE, batch, items=len(batch))

    # -- requests -------------------------------------------------------------------------
    def requester(self, worker_index: int, n_workers: int) -> "Requester":
        """Worker i of n's request stream; the same one for every phase with n workers, so a
        rate sweep continues the measured phase's streams (new ones would re-issue the node ids
        already added)."""
        key = (worker_index, n_workers)
        if key not in self._requesters:
            self._requesters[key] = Requester(self, worker_index, n_workers)
        return self._requesters[key]

    def measure(self, name: str, threads: int, rate_per_s: float | None):
        # Staggered schedules, so the arrivals are spread, not bunched.
        return [request_loop(self.requester(i, threads).next, rate_per_s / threads if rate_per_s else None,
                             offset=i / threads) for i in range(threads)]

    # -- consistency ----------------------------------------------------------------------
    def check(self, store: Store) -> dict:
        """Compare every count row with the number of visible links of its (id1, type).

        Both sides are read in key order and merged, so the check needs memory for one page of
        each, not for the whole graph (it runs inside the run's memory limit)."""
        mismatches = rows = visible_total = 0
        examples = []
        links = _visible_per_list(store)
        counts = _count_rows(store)
        link = next(links, None)
        count = next(counts, None)
        while link is not None or count is not None:
            if count is None or (link is not None and link[0] < count[0]):
                key, visible, stored = link[0], link[1], None
                link = next(links, None)
            elif link is None or count[0] < link[0]:
                key, visible, stored = count[0], 0, count[1]
                count = next(counts, None)
            else:
                key, visible, stored = link[0], link[1], count[1]
                link, count = next(links, None), next(counts, None)
            visible_total += visible
            rows += stored is not None
            if (stored or 0) != visible:
                mismatches += 1
                if len(examples) < 5:
                    examples.append({"id1": key[0], "link_type": key[1], "count": stored, "visible_links": visible})
        # Under linkbenchx counts the mismatches are the finding the post warned of, not a fault.
        return {"count_rows": rows, "visible_links": visible_total, "mismatches": mismatches, "examples": examples,
                "counts": self.cfg.counts}


def _visible_per_list(store: Store):
    """((id1, link_type), visible links) in key order, from the id1_type index alone."""
    current, visible = None, 0
    for id1, link_type, visibility, *_ in store.iter_index(ops.LINK, ops.LINK_LIST.name):
        if (id1, link_type) != current:
            if current is not None:
                yield current, visible
            current, visible = (id1, link_type), 0
        visible += visibility == ops.VISIBLE
    if current is not None:
        yield current, visible


def _count_rows(store: Store, page: int = 10000):
    """((id, link_type), count) for every count row in key order, a page at a time."""
    after = None
    while True:
        docs = store.scan(ops.COUNT, ops.COUNT_PK.name, low=after, limit=page + (after is not None))
        if after is not None and docs and (docs[0]["id"], docs[0]["link_type"]) == after:
            docs = docs[1:]  # the bound is inclusive: the previous page's last row comes back
        for doc in docs:
            yield (doc["id"], doc["link_type"]), doc.get("count", 0)
        if len(docs) < page:
            return
        after = (docs[-1]["id"], docs[-1]["link_type"])


def build(params: Params, context: dict | None = None) -> LinkBench:
    return LinkBench(params)


class Requester:
    """One request worker's generator: next() -> (op name, callable(store) -> items)."""

    def __init__(self, lb: LinkBench, worker_index: int, n_workers: int):
        self.lb = lb
        self.rng = random.Random(f"{lb.cfg.seed}/requests/{worker_index}")
        self.link_add = MotifData(self.rng, 32, 100, 0.225)
        self.link_up = MotifData(self.rng, 32, 100, 0.225)
        self.node_add = MotifData(self.rng, 50, 220, 0.63)
        self.node_up = MotifData(self.rng, 50, 220, 0.63)
        cumulative, total = [], 0.0
        for name, pct in OP_MIX:
            total += pct
            cumulative.append((total, name))
        if abs(total - 100.0) > 1e-5:
            raise ValueError(f"LinkBench op mix sums to {total}, not 100")
        self.cumulative = cumulative
        # New node ids never collide between workers (or with loaded ids).
        self._next_node = lb.cfg.maxid1 + worker_index
        self._node_step = n_workers
        self.tail_cache: dict[tuple[int, int], dict] = {}
        self.history_queries = 0

    def _op(self) -> str:
        r = self.rng.random() * 100.0
        for bound, name in self.cumulative:
            if r <= bound:
                return name
        return self.cumulative[-1][1]

    def _id2(self, id1: int, type_index: int, p_exist: float) -> int:
        span = max(1, math.ceil(self.lb.counts.of(id1, type_index) / p_exist))
        return id1 + self.rng.randrange(span)

    def _link(self, op: str, datagen: MotifData) -> dict:
        id1 = self.lb.link_writes.choose(self.rng)
        t = self.rng.randrange(len(self.lb.link_types))
        return {"link_type": self.lb.link_types[t], "id1": id1, "id2": self._id2(id1, t, P_EXIST[op]),
                "visibility": ops.VISIBLE, "time": int(time.time() * 1000), "version": 0,
                "data": datagen.make(self.rng, lognormal_size(self.rng, LINK_DATASIZE, 1.0, 254))}

    def draw(self) -> tuple[str, dict]:
        """The next request and its arguments, drawn from the seeded generator (the native
        runner's `trace` prints the same stream: lib/tests/test_native_contract.py)."""
        op = self._op()
        rng, lb = self.rng, self.lb
        if op in ("ADD_LINK", "UPDATE_LINK"):
            return op, self._link(op, self.link_add if op == "ADD_LINK" else self.link_up)
        if op == "DELETE_LINK":
            id1 = lb.link_writes.choose(rng)
            t = rng.randrange(len(lb.link_types))
            id2 = self._id2(id1, t, P_EXIST[op])
            return op, {"id1": id1, "link_type": lb.link_types[t], "id2": id2, "time": int(time.time() * 1000)}
        if op == "COUNT_LINK":
            id1, link_type = lb.link_reads.choose(rng), rng.choice(lb.link_types)
            return op, {"id1": id1, "link_type": link_type}
        if op == "MULTIGET_LINK":
            return op, self._multiget()
        if op == "GET_LINKS_LIST":
            if self.tail_cache and rng.random() * 100 < HISTORY_PCT:
                # History query: the page after the oldest link of a list that hit the limit. Its
                # latency is recorded (LinkBench recorded 0 us here, spec §3.3).
                key = rng.choice(list(self.tail_cache))
                self.history_queries += 1
                return op, {"id1": key[0], "link_type": key[1], "history_max_time": self.tail_cache[key]["time"]}
            id1, link_type = lb.link_reads.choose(rng), rng.choice(lb.link_types)
            return op, {"id1": id1, "link_type": link_type, "history_max_time": None}
        if op == "ADD_NODE":
            node = {"_id": self._next_node, "type": ops.NODE_TYPE, "version": 1, "time": int(time.time()),
                    "data": self.node_add.make(rng, lognormal_size(rng, NODE_DATASIZE, 1.0, (1 << 20) - 1))}
            self._next_node += self._node_step
            return op, {"node": node}
        if op == "UPDATE_NODE":
            node_id = lb.node_updates.choose(rng)
            data = self.node_up.make(rng, lognormal_size(rng, NODE_DATASIZE, 1.0, (1 << 20) - 1))
            return op, {"id": node_id, "time": int(time.time()), "data": data}
        if op == "DELETE_NODE":
            return op, {"id": lb.node_deletes.choose(rng)}
        return op, {"id": lb.node_reads.choose(rng)}

    def next(self):
        """(op name, callable(store) -> items) for the next request."""
        op, a = self.draw()
        counts = self.lb.cfg.counts
        if op in ("ADD_LINK", "UPDATE_LINK"):
            return op, lambda store: ops.add_link(store, a, counts)
        if op == "DELETE_LINK":
            return op, lambda store: ops.delete_link(store, a["id1"], a["link_type"], a["id2"], a["time"], counts)
        if op == "COUNT_LINK":
            return op, lambda store: ops.count_links(store, a["id1"], a["link_type"])
        if op == "MULTIGET_LINK":
            return op, lambda store: len(ops.multiget_links(store, a["id1"], a["link_type"], a["id2s"]))
        if op == "GET_LINKS_LIST":
            return op, lambda store: self._get_links_list(store, a["id1"], a["link_type"], a["history_max_time"])
        if op == "ADD_NODE":
            return op, lambda store: ops.add_node(store, a["node"])
        if op == "UPDATE_NODE":
            return op, lambda store: ops.update_node(store, a["id"], 2, a["time"], a["data"])
        if op == "DELETE_NODE":
            return op, lambda store: ops.delete_node(store, a["id"])
        return op, lambda store: int(ops.get_node(store, a["id"]) is not None)

    def _multiget(self) -> dict:
        rng, lb = self.rng, self.lb
        id1 = lb.link_reads.choose(rng)
        t = rng.randrange(len(lb.link_types))
        size = geometric_multiget(rng)
        span = max(1, math.ceil(lb.counts.of(id1, t) / P_EXIST["MULTIGET_LINK"]))
        if span <= size:
            id2s = [id1 + j for j in range(size)]
        else:
            chosen: set[int] = set()
            for _ in range(size):
                for _attempt in range(100):  # re-draw duplicates, as ID2Chooser does
                    candidate = id1 + rng.randrange(span)
                    if candidate not in chosen:
                        break
                chosen.add(candidate)
            id2s = sorted(chosen)
        return {"id1": id1, "link_type": lb.link_types[t], "id2s": id2s}

    def _get_links_list(self, store, id1: int, link_type: int, history_max_time: int | None) -> int:
        key = (id1, link_type)
        if history_max_time is None:
            rows = ops.get_link_list(store, id1, link_type)
            self._remember_tail(key, rows, replace=False)
        else:
            rows = ops.get_link_list(store, id1, link_type, max_time=history_max_time, offset=1)
            self._remember_tail(key, rows, replace=True)
        return len(rows)

    def _remember_tail(self, key, rows, replace: bool) -> None:
        if len(rows) >= ops.RANGE_LIMIT:
            if key not in self.tail_cache and len(self.tail_cache) >= TAIL_CACHE_SIZE:
                del self.tail_cache[self.rng.choice(list(self.tail_cache))]
            self.tail_cache[key] = rows[-1]
        elif replace:
            self.tail_cache.pop(key, None)
