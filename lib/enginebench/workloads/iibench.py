"""The insert benchmark (iibench), as the 2015 post ran it (spec: iibench_sysbench.md part A).

Writers insert `purchases_index` documents in batches while one query worker, started after
`query_begin_docs` inserts, cycles three short "seek into a composite index and scan forward"
queries back to back, until the writers are done. Every insert call at or above the slow
threshold (2 s in the post) is counted per interval, timed per client call; on a server (this
module's targets) the server's own count of slow inserts, from its profiler, is reported beside
it, as the post counted Nslow from the server's log of slow operations.
"""
from __future__ import annotations

import random
import time
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from ..mongod import slowops
from ..params.phases import PhaseUse, WorkloadParams, uses
from ..stores.base import IndexSpec, Store
from .base import Workload

COLLECTION = "purchases_index"
# Cumulative: NUM_SECONDARY_INDEXES = n creates the first n (A.2), ascending, before the load.
INDEXES = (IndexSpec("marketsegment", (("price", 1), ("customerid", 1))),
           IndexSpec("registersegment", (("cashregisterid", 1), ("price", 1), ("customerid", 1))),
           IndexSpec("pdc", (("price", 1), ("dateandtime", 1), ("customerid", 1))))
INSERT = "INSERT"
QUERIES = ("QUERY_PDC", "QUERY_MARKETSEGMENT", "QUERY_REGISTERSEGMENT")  # the round-robin order 1, 2, 3
# The Java client's char fields (mdcallag/iibench-mongodb@02b4190 src/jmongoiibench.java):
# main() fills randomStringHolder with 4*1024*1024 chars of rand.nextInt(26) + 'a' and
# compressibleStringHolder with as many 'a's; MyWriter.run() puts in cfN the
# numUncompressibleCharacters letters at rand.nextInt(randomStringLength - lengthCharFields),
# then numCompressibleCharacters 'a's: 500 random letters and 500 'a's with the post's settings.
PAD = 4 << 20  # the 4 MiB random-letter buffer the Java client builds at start


def random_letters() -> bytes:
    """The Java client's 4 MiB pool of random lowercase letters (rand.nextInt(26) + 'a'): uniform
    letters from random bytes, rejecting bytes above the largest multiple of 26, drawn in 1 MiB
    chunks (the native runner draws them the same way)."""
    rng = random.Random(0)
    out = bytearray()
    while len(out) < PAD:
        chunk = np.frombuffer(rng.randbytes(1 << 20), dtype=np.uint8)
        out += (chunk[chunk < 234] % 26 + ord("a")).astype(np.uint8).tobytes()
    return bytes(out[:PAD])


class Params(WorkloadParams):
    """The post's 24-argument command line, by name (spec A.5); its writer threads (arg 2) are
    `phases.load.threads`, its progress interval (arg 6) `phases.load.interval_s`."""
    name: Literal["iibench"] = "iibench"
    max_rows: int = Field(ge=1)
    docs_per_insert: int = Field(10, ge=1)
    num_secondary_indexes: int = Field(3, ge=0, le=3)
    num_char_fields: int = Field(1, ge=0)
    length_char_fields: int = Field(1000, ge=0)
    percent_compressible: int = Field(50, ge=0, le=100)
    max_inserts_per_second: int | None = Field(None, ge=1)  # None: unthrottled (the post's 999999)
    query_threads: int = Field(1, ge=0)
    query_limit: int = Field(4, ge=1)
    query_begin_docs: int = Field(100_000, ge=0)
    ms_between_queries: int = Field(0, ge=0)
    slow_threshold_s: float = Field(2.0, gt=0)

    # The load is what is measured: the writers insert while the query thread runs.
    PHASES: ClassVar[PhaseUse] = uses("load.threads", "load.interval_s", required=("load",), check=False)

    def per_writer(self, writers: int) -> int:
        """Docs each of `writers` inserts: floor(max_rows / writers), in whole batches (A.3)."""
        per = self.max_rows // writers if writers > 1 else self.max_rows
        return (per // self.docs_per_insert) * self.docs_per_insert

    def total_docs(self, writers: int) -> int:
        return self.per_writer(writers) * writers


# The Java client's constants (A.1).
NUM_CASH_REGISTERS, NUM_CUSTOMERS, NUM_PRODUCTS, MAX_PRICE = 1000, 100_000, 10_000, 500.0


class IIBench(Workload):
    load_accounting = {"rate": "items", "rate_ops": [INSERT], "per_op": INSERT}
    # Documents inserted (the query thread starts after query_begin_docs) and writers finished
    # (the query thread stops when all are): shared by writers in any client process.
    shared_counters = ("inserted", "writers_finished")

    def __init__(self, config: Params):
        self.cfg = config
        self.indexes = INDEXES[:config.num_secondary_indexes]
        self.slow_us = {INSERT: int(config.slow_threshold_s * 1e6)}
        self.random_letters = random_letters()
        self.writers = 0
        self.inserted = self.writers_finished = None  # the load's Tallies (load() makes them)
        self._server_slow_ops: str | None = "setup has not run"  # why the server does not count

    # -- documents ------------------------------------------------------------------------
    def _char_field(self, rng: random.Random) -> str:
        length, pct = self.cfg.length_char_fields, self.cfg.percent_compressible
        random_part = int(length * (100 - pct) / 100)
        start = rng.randrange(PAD - length)
        return (self.random_letters[start:start + random_part].decode()
                + "a" * int(length * pct / 100))

    def _price(self, rng: random.Random, customer: int) -> float:
        return (rng.random() * MAX_PRICE + customer) / 100.0

    def document(self, rng: random.Random) -> dict:
        customer = rng.randrange(NUM_CUSTOMERS)
        doc = {"dateandtime": int(time.time() * 1000), "cashregisterid": rng.randrange(NUM_CASH_REGISTERS),
               "customerid": customer, "productid": rng.randrange(NUM_PRODUCTS),
               "price": self._price(rng, customer)}
        for i in range(1, self.cfg.num_char_fields + 1):
            doc[f"cf{i}"] = self._char_field(rng)
        return doc

    # -- phases ---------------------------------------------------------------------------
    def setup(self, store: Store) -> None:
        store.create_collection(COLLECTION)
        for spec in self.indexes:
            store.create_index(COLLECTION, spec)
        try:
            slowops.start(store, self._slow_ms)
            self._server_slow_ops = None
        except slowops.SlowOpsUnavailable as exc:
            self._server_slow_ops = str(exc)

    @property
    def _slow_ms(self) -> int:
        return int(self.cfg.slow_threshold_s * 1000)

    def after_load(self, store: Store, emit) -> None:
        """Nslow as the server counted it (its profiler), or why only the client's count exists."""
        event = {"event": "slow_ops", "op": INSERT, "threshold_ms": self._slow_ms}
        if self._server_slow_ops is None:
            try:
                event.update(source="server", **slowops.count(store, COLLECTION, "insert", self._slow_ms))
            except slowops.SlowOpsUnavailable as exc:
                event.update(source="client", why=str(exc))
        else:
            event.update(source="client", why=self._server_slow_ops)
        emit(event)

    def _writer(self, index: int):
        def work(store, rec, stop):
            rng = random.Random(index)  # each writer is seeded with its thread index (A.1)
            cap = (self.cfg.max_inserts_per_second // self.writers) if self.cfg.max_inserts_per_second else None
            window_start, in_window = time.time(), 0
            try:
                for _ in range(self.cfg.per_writer(self.writers) // self.cfg.docs_per_insert):
                    if stop.is_set():
                        return
                    batch = [self.document(rng) for _ in range(self.cfg.docs_per_insert)]
                    rec.call(INSERT, store.insert_many, COLLECTION, batch, items=len(batch))
                    self.inserted.add(len(batch))
                    if cap:
                        in_window += len(batch)
                        if in_window >= cap:  # the Java client's coarse one-second window
                            time.sleep(max(0.0, window_start + 1.0 - time.time()))
                            window_start, in_window = time.time(), 0
            finally:
                self.writers_finished.add(1)
        return work

    def _querier(self, index: int):
        def work(store, rec, stop):
            while self.inserted.value() < self.cfg.query_begin_docs and not (stop.is_set() or self._writers_done()):
                time.sleep(0.1)
            started_ms = int(time.time() * 1000)
            rng = random.Random(index + started_ms)
            k = 0
            while not (stop.is_set() or self._writers_done()):
                if self.cfg.ms_between_queries:
                    time.sleep(self.cfg.ms_between_queries / 1000)
                op = QUERIES[k % 3]
                k += 1
                customer = rng.randrange(NUM_CUSTOMERS)
                price = self._price(rng, customer)
                register = rng.randrange(NUM_CASH_REGISTERS)
                t = rng.randint(started_ms, int(time.time() * 1000))
                rec.call(op, self._query, store, op, price, customer, register, t)
        return work

    def _writers_done(self) -> bool:
        return self.writers_finished.value() >= self.writers

    def _query(self, store: Store, op: str, price: float, customer: int, register: int, t: int) -> int:
        limit = self.cfg.query_limit
        if op == "QUERY_PDC":
            rows = store.scan(COLLECTION, "pdc", low=(price, t, customer), limit=limit,
                              fields=("price", "dateandtime", "customerid"))
        elif op == "QUERY_MARKETSEGMENT":
            rows = store.scan(COLLECTION, "marketsegment", low=(price, customer), limit=limit,
                              fields=("price", "customerid"))
        else:
            rows = store.scan(COLLECTION, "registersegment", low=(register, price, customer), limit=limit,
                              fields=("cashregisterid", "price", "customerid"))
        return len(rows)

    def load(self, threads: int):
        """The writers (`threads`, the post's 10) and the query thread(s), which need all three
        secondary indexes."""
        self.writers = threads
        self.inserted, self.writers_finished = self.counter("inserted"), self.counter("writers_finished")
        queries = self.cfg.query_threads if len(self.indexes) == len(INDEXES) else 0
        return [self._writer(i) for i in range(threads)] + [self._querier(i) for i in range(queries)]

    def expected_after_load(self, load_threads: int) -> dict:
        return {"documents": self.cfg.total_docs(load_threads)}

    def verify(self, store: Store) -> tuple[dict, dict]:
        total = self.cfg.total_docs(self.writers)
        expected = {"documents": total, **{f"index {q.name}": total for q in self.indexes}}
        found = {"documents": store.count(COLLECTION, None),
                 **{f"index {q.name}": store.count(COLLECTION, q.name) for q in self.indexes}}
        return expected, found


def build(params: Params, context: dict | None = None) -> IIBench:
    return IIBench(params)
