"""The TokuMX-versus-MongoDB experiments (seed 004, Severalnines 2013), on the Store interface.

- insert: one client inserts N documents {x: i, y: <200 random characters>} into a collection with
  an index on x, ONE document per call, as the post's shell loop `col.insert({x:i, y:data})` did
  (it says explicitly that this is not a bulk load). Rates are recorded per interval, so dips show.
- read_update / read: load N documents, then one measured phase per client count ("clients=1",
  "clients=2", ...). read_update is the post's readAndUpdate(): findOne on a random x, then $set y
  to y + that x (so documents grow, as in the post); read is the same findOne alone.

The post ran on the PRIMARY of a 3-member replica set. Under TARGET=mongod the runner watches the
replica set (mongod/replication.py): a secondary that falls off its primary's oplog (the post's
"RS102 too stale to catch up") is recorded as a `stale_secondary` event and stops the phase. The
plan then still counts what the primary holds, marked as stopped by it: it is the experiment's
result, not a crash.
"""
from __future__ import annotations

import base64
import random
import time
from dataclasses import dataclass, field

from ..runner.phases import run_phase
from ..runner.plan import outcome
from ..stores.base import IndexSpec, Store

COLLECTION = "johan"  # the post's test.johan
X_INDEX = IndexSpec("x_1", (("x", 1),))  # db.johan.ensureIndex({x:1})
INSERT, FIND, UPDATE = "INSERT", "FIND_ONE", "UPDATE"
LOAD = "LOAD"
EXPERIMENTS = ("insert", "read_update", "read")


@dataclass(frozen=True)
class TokuMXConfig:
    experiment: str
    documents: int
    payload_chars: int = 200
    load_batch: int = 1000
    clients: list[int] | None = None
    phase_s: float | None = None
    interval_s: float = 10.0
    quiesce_s: float = 5.0
    seed: int = 1
    stand_in: dict = field(default_factory=dict)  # read by the report only

    def __post_init__(self):
        if self.experiment not in EXPERIMENTS:
            raise ValueError(f"unknown tokumx experiment {self.experiment!r}; allowed: {', '.join(EXPERIMENTS)}")


def payload(rng: random.Random, chars: int) -> str:
    """A random string of `chars` characters (the post's createRandomData(200)); base64 of random
    bytes, so it is as incompressible as random text and cheap to make in the client."""
    return base64.b64encode(rng.randbytes((chars * 3 + 3) // 4)).decode()[:chars]


def document(rng: random.Random, i: int, chars: int) -> dict:
    return {"x": i, "y": payload(rng, chars)}


def find_one(store: Store, x: int) -> list[dict]:
    """findOne({x: x}): a list of zero or one document, so the recorder counts what was found."""
    doc = store.get(COLLECTION, X_INDEX.name, (x,))
    return [] if doc is None else [doc]


def stale_finding(store: Store) -> dict | None:
    """The stale-secondary finding of the replication watches the runner attached to the store
    (`store.watches`, mongod target only; an embedded store has no replica set), if any."""
    return next((w.found for w in getattr(store, "watches", None) or [] if getattr(w, "found", None)), None)


def set_y(store: Store, x: int, y: str) -> None:
    """update({x: x}, {$set: {y: y}})."""
    store.update(COLLECTION, X_INDEX.name, (x,), set={"y": y})


class TokuMX:
    name = "tokumx"

    def __init__(self, config: TokuMXConfig):
        self.cfg = config
        self.load_accounting = {"rate": "items", "rate_ops": [INSERT if config.experiment == "insert" else LOAD],
                                "per_op": INSERT if config.experiment == "insert" else LOAD}
        counted = UPDATE if config.experiment == "read_update" else FIND
        self.run_accounting = {"rate": "count", "rate_ops": [counted], "per_op": counted}

    def expected_after_load(self) -> dict:
        return {COLLECTION: self.cfg.documents}

    def setup(self, store: Store) -> None:
        store.create_collection(COLLECTION)
        store.create_index(COLLECTION, X_INDEX)  # before the inserts, as the post did

    # -- experiment 1 ---------------------------------------------------------------------
    def inserter(self):
        cfg = self.cfg

        def work(store, rec, stop):
            rng = random.Random(cfg.seed)
            for i in range(cfg.documents):
                if stop.is_set():
                    return
                # One document per call: the post's shell loop, not a bulk load.
                rec.call(INSERT, store.insert_many, COLLECTION, [document(rng, i, cfg.payload_chars)], items=1)
        return work

    # -- experiments 2 and 3 --------------------------------------------------------------
    def load_threads(self):
        cfg = self.cfg

        def loader(store, rec, stop):
            rng = random.Random(cfg.seed)
            for start in range(0, cfg.documents, cfg.load_batch):
                if stop.is_set():
                    return
                docs = [document(rng, i, cfg.payload_chars)
                        for i in range(start, min(start + cfg.load_batch, cfg.documents))]
                rec.call(LOAD, store.insert_many, COLLECTION, docs, items=len(docs))
        return [loader]

    def client(self, clients: int, index: int):
        cfg = self.cfg
        updating = cfg.experiment == "read_update"

        def work(store, rec, stop):
            rng = random.Random(f"{cfg.seed}/{clients}/{index}")
            while not stop.is_set():
                # The post's Math.floor(Math.random()*no_recs)+1: 1..N, while x runs 0..N-1, so
                # one draw in N finds nothing and the loop goes on (`if(doc==null) continue`).
                x = rng.randint(1, cfg.documents)
                found = rec.call(FIND, find_one, store, x)
                if updating and found:
                    rec.call(UPDATE, set_y, store, x, found[0]["y"] + str(x), items=1)
        return work

    # -- plans ----------------------------------------------------------------------------
    def run_plan(self, store: Store, phases: dict, emit, abort, reopen=None) -> str:
        self.setup(store)
        if self.cfg.experiment == "insert":
            return self._insert_plan(store, phases, emit, abort)
        return self._sweep_plan(store, phases, emit, abort)

    def _verify(self, store: Store, emit, kind: str = "load_verified", stopped_by: str | None = None) -> None:
        expected = {"documents": self.cfg.documents, f"index {X_INDEX.name}": self.cfg.documents}
        found = {"documents": store.count(COLLECTION, None),
                 f"index {X_INDEX.name}": store.count(COLLECTION, X_INDEX.name)}
        event = {"event": kind, "expected": expected, "found": found, "ok": expected == found}
        if kind == "consistency":
            event["mismatches"] = sum(expected[k] != found[k] for k in expected)
        if stopped_by:
            event["stopped_by"] = stopped_by  # the count is short by design, and says why
        emit(event)

    def _stopped(self, result: dict, store: Store, emit) -> str | None:
        """None to go on; else the plan's status. A phase stopped by a stale secondary is a
        finding: the primary's documents are counted and the plan ends complete."""
        if stale_finding(store) is not None:
            self._verify(store, emit, stopped_by="stale_secondary")
            return "complete"
        return outcome(result)

    def _insert_plan(self, store: Store, phases: dict, emit, abort) -> str:
        result = run_phase("load", [self.inserter()], store, emit, interval_s=self.cfg.interval_s, duration_s=None,
                           abort=abort, max_errors=0, engine_stats=store.stats, accounting=self.load_accounting)
        stopped = self._stopped(result, store, emit)
        if stopped:
            return stopped
        self._verify(store, emit)
        return "complete"

    def _sweep_plan(self, store: Store, phases: dict, emit, abort) -> str:
        cfg = self.cfg
        load = run_phase("load", self.load_threads(), store, emit, interval_s=cfg.interval_s, duration_s=None,
                         abort=abort, max_errors=0, engine_stats=store.stats, accounting=self.load_accounting)
        stopped = self._stopped(load, store, emit)
        if stopped:
            return stopped
        self._verify(store, emit)
        started = time.time()
        store.checkpoint()
        time.sleep(cfg.quiesce_s)
        emit({"event": "quiesce", "seconds": time.time() - started, "checkpoint": True})
        for n in cfg.clients:
            phase = run_phase(f"clients={n}", [self.client(n, i) for i in range(n)], store, emit,
                              interval_s=cfg.interval_s, duration_s=cfg.phase_s, abort=abort,
                              max_errors=phases["max_errors"], engine_stats=store.stats,
                              accounting=self.run_accounting)
            stopped = self._stopped(phase, store, emit)
            if stopped:
                return stopped
        self._verify(store, emit, "consistency")
        return "complete"
