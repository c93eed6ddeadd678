"""sysbench-mongodb's OLTP workload (spec: iibench_sysbench.md part B).

Collections sbtest1..N of {_id, k, c, pad} with an index on k, loaded in batches, one collection
per loader at a time. A transaction picks one collection and runs, in order: 10 point selects, a
simple range, a sum range, an order range, a distinct range (range size 100), an index update
($inc k), a non-index update ($set c) and a delete + re-insert of one id. Ranges, sums, ordering
and distinct are computed from one index range read. Two workers can pick the same id for the
delete + insert: the original lost the worker to the duplicate key; here the pair is retried and
each retry is counted (op DUPLICATE_KEY_RETRY).
"""
from __future__ import annotations

import queue
import random
import time
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ..params.phases import PhaseUse, WorkloadParams, uses
from ..runner.shared import TicketQueue
from ..stores.base import DuplicateKey, IndexSpec, Store
from .base import Workload

K_INDEX = IndexSpec("k_1", (("k", 1),))
TRANSACTION = "TRANSACTION"
RETRY = "DUPLICATE_KEY_RETRY"
LOAD = "LOAD_BULK"


class Params(WorkloadParams):
    """sysbench-mongodb's config.bash, by name (spec B.6); its loader and writer threads and its
    run time are `phases:` (load.threads, measure.threads, measure.duration_s)."""
    name: Literal["sysbench"] = "sysbench"
    collections: int = Field(16, ge=1)
    docs_per_collection: int = Field(10_000_000, ge=1)
    docs_per_insert: int = Field(1000, ge=1)
    range_size: int = Field(100, ge=1)
    point_selects: int = Field(10, ge=0)
    simple_ranges: int = Field(1, ge=0)
    sum_ranges: int = Field(1, ge=0)
    order_ranges: int = Field(1, ge=0)
    distinct_ranges: int = Field(1, ge=0)
    index_updates: int = Field(1, ge=0)
    non_index_updates: int = Field(1, ge=0)
    inserts: int = Field(1, ge=0)
    max_tps: int | None = Field(None, ge=1)
    seed: int = 1

    PHASES: ClassVar[PhaseUse] = uses(
        "load.threads", "load.interval_s", "quiesce_s", "cold_start", "measure.threads", "measure.interval_s",
        "measure.duration_s", "max_errors", required=("load", "measure", "measure.duration_s"))

    @model_validator(mode="after")
    def _whole_batches(self):
        if self.docs_per_collection < self.docs_per_insert:
            raise ValueError(f"docs_per_collection ({self.docs_per_collection}) must be at least docs_per_insert "
                             f"({self.docs_per_insert}): only whole batches are loaded")
        return self


def digits(rng: random.Random, groups: int) -> str:
    """sysbench's CHAR pattern: groups of 11 random digits joined by '-' (c: 10 groups, pad: 5)."""
    return "-".join(f"{rng.randrange(10 ** 11):011d}" for _ in range(groups))


class Sysbench(Workload):
    load_accounting = {"rate": "items", "rate_ops": [LOAD], "per_op": LOAD}
    measure_accounting = {"rate": "count", "rate_ops": [TRANSACTION], "per_op": TRANSACTION}
    shared_counters = ("collections",)

    def __init__(self, config: Params):
        self.cfg = config
        self.names = [f"sbtest{i}" for i in range(1, config.collections + 1)]

    @property
    def loaded_per_collection(self) -> int:
        """Whole batches only: the original drops a remainder (B.2)."""
        return (self.cfg.docs_per_collection // self.cfg.docs_per_insert) * self.cfg.docs_per_insert

    def setup(self, store: Store) -> None:
        for name in self.names:
            store.create_collection(name)
            store.create_index(name, K_INDEX)  # built before the load, as the original does

    def expected_after_load(self, load_threads: int = 1) -> dict:
        return {name: self.loaded_per_collection for name in self.names}

    def verify(self, store: Store) -> tuple[dict, dict]:
        return self.expected_after_load(), {name: store.count(name, None) for name in self.names}

    # -- load -----------------------------------------------------------------------------
    def load(self, loaders: int):
        # The loaders take the collections in turn through a shared counter (one loader per
        # collection at a time, whichever client process it runs in).
        pending = TicketQueue(list(enumerate(self.names, start=1)), self.counter("collections"))

        def loader(store, rec, stop):
            while not stop.is_set():
                try:
                    number, name = pending.get_nowait()
                except queue.Empty:
                    return
                rng = random.Random(number)  # each collection's loader is seeded with its number
                n, batch = self.cfg.docs_per_collection, self.cfg.docs_per_insert
                for start in range(1, self.loaded_per_collection + 1, batch):
                    if stop.is_set():
                        return
                    docs = [{"_id": i, "k": rng.randint(1, n), "c": digits(rng, 10), "pad": digits(rng, 5)}
                            for i in range(start, start + batch)]
                    rec.call(LOAD, store.insert_many, name, docs, items=len(docs))
        return [loader for _ in range(min(loaders, len(self.names)))]

    # -- the OLTP transaction -------------------------------------------------------------
    def measure(self, name: str, threads: int, rate_per_s: float | None):
        return [self.writer(i, threads) for i in range(threads)]

    def writer(self, index: int, writers: int):
        cfg = self.cfg

        def work(store, rec, stop):
            rng = random.Random(cfg.seed + index)
            cap = (cfg.max_tps // writers + 1) if cfg.max_tps else None
            window_start, in_window = time.time(), 0
            while not stop.is_set():
                name = rng.choice(self.names)
                args = self._draw(rng)
                retries = rec.call(TRANSACTION, self._transaction, store, name, args)
                for _ in range(retries or 0):
                    rec.call(RETRY, int)  # counted, not timed: the retry's time is in its transaction
                if cap:
                    in_window += 1
                    if in_window >= cap:
                        time.sleep(max(0.0, window_start + 1.0 - time.time()))
                        window_start, in_window = time.time(), 0
        return work

    def _draw(self, rng: random.Random) -> dict:
        n = self.cfg.docs_per_collection
        return {"points": [rng.randint(1, n) for _ in range(self.cfg.point_selects)],
                "ranges": [rng.randint(1, n) for _ in range(self.cfg.simple_ranges + self.cfg.sum_ranges
                                                            + self.cfg.order_ranges + self.cfg.distinct_ranges)],
                "inc": [rng.randint(1, n) for _ in range(self.cfg.index_updates)],
                "set": [(rng.randint(1, n), digits(rng, 10)) for _ in range(self.cfg.non_index_updates)],
                "reinsert": [(rng.randint(1, n), rng.randint(1, n), digits(rng, 10), digits(rng, 5))
                             for _ in range(self.cfg.inserts)]}

    def _transaction(self, store: Store, name: str, args: dict) -> int:
        """One sysbench transaction; returns the number of duplicate-key retries."""
        cfg, r = self.cfg, self.cfg.range_size
        for i in args["points"]:
            store.get(name, None, (i,))
        kinds = (["simple"] * cfg.simple_ranges + ["sum"] * cfg.sum_ranges + ["order"] * cfg.order_ranges
                 + ["distinct"] * cfg.distinct_ranges)
        for kind, start in zip(kinds, args["ranges"]):
            if kind == "sum":
                sum(d["k"] for d in store.scan(name, None, low=start, high=start + r - 1, fields=("k",)))
            else:
                rows = [d["c"] for d in store.scan(name, None, low=start, high=start + r - 1, fields=("c",))]
                if kind == "order":
                    rows.sort()
                elif kind == "distinct":
                    set(rows)
        for i in args["inc"]:
            store.update(name, None, (i,), inc={"k": 1})
        for i, c in args["set"]:
            store.update(name, None, (i,), set={"c": c})
        retries = 0
        for i, k, c, pad in args["reinsert"]:
            while True:
                store.delete(name, None, (i,))
                try:
                    store.insert_many(name, [{"_id": i, "k": k, "c": c, "pad": pad}])
                    break
                except DuplicateKey:
                    retries += 1  # another worker re-inserted the same id in between
        return retries

    def check(self, store: Store) -> dict:
        expected, found = self.verify(store)
        return {"expected": expected, "found": found, "mismatches": sum(expected[n] != found[n] for n in self.names)}


def build(params: Params, context: dict | None = None) -> Sysbench:
    return Sysbench(params)
