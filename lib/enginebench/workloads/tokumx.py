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
result, not a crash (runner/plan.py).
"""
from __future__ import annotations

import base64
import random
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ..params.base import Role
from ..params.phases import PhaseUse, WorkloadParams, uses
from ..stores.base import IndexSpec, Store
from .base import Workload

COLLECTION = "johan"  # the post's test.johan
X_INDEX = IndexSpec("x_1", (("x", 1),))  # db.johan.ensureIndex({x:1})
INSERT, FIND, UPDATE = "INSERT", "FIND_ONE", "UPDATE"
LOAD = "LOAD"


class Params(WorkloadParams):
    """The three experiments of the TokuMX post (seed 004): which one, and its sizes. The client
    counts and the time per count are `phases.measure` (threads: [1, 2, ...], duration_s)."""
    name: Literal["tokumx"] = "tokumx"
    experiment: Literal["insert", "read_update", "read"]
    documents: int = Field(ge=1)            # inserted (insert) or loaded before the client sweep
    payload_chars: int = Field(200, ge=1)   # createRandomData(200)
    load_batch: int = Field(1000, ge=1)     # read_update/read only: documents per load call
    seed: int = 1
    # Claims name roles (fractal, mmap); where no system has a role, the report may show the
    # comparison with another role standing in, apart from the verdicts (which stay "not evaluated").
    stand_in: dict[Role, Role] = Field(default_factory=dict)

    # insert: one client inserts, and the load is what is measured.
    INSERT_PHASES: ClassVar[PhaseUse] = uses("load.interval_s", required=("load",))
    PHASES: ClassVar[PhaseUse] = uses(
        "load.interval_s", "quiesce_s", "measure.threads", "measure.interval_s", "measure.duration_s",
        "max_errors", required=("load", "measure.threads", "measure.duration_s"), threads_list=True)

    @classmethod
    def phase_use(cls, workload: dict) -> PhaseUse:
        return cls.INSERT_PHASES if workload.get("experiment") == "insert" else cls.PHASES

    @model_validator(mode="after")
    def _per_experiment(self):
        # Resolved params carry every default and are validated again when the workload is built:
        # only a load_batch other than the default was set by hand.
        default = type(self).model_fields["load_batch"].default
        if self.experiment == "insert" and "load_batch" in self.model_fields_set and self.load_batch != default:
            raise ValueError("load_batch: only for experiment read_update or read (the insert experiment inserts "
                             "one document per call)")
        same = sorted(k for k, v in self.stand_in.items() if k == v)
        if same:
            raise ValueError(f"stand_in: a role cannot stand in for itself ({', '.join(same)})")
        return self


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


def set_y(store: Store, x: int, y: str) -> None:
    """update({x: x}, {$set: {y: y}})."""
    store.update(COLLECTION, X_INDEX.name, (x,), set={"y": y})


class TokuMX(Workload):
    def __init__(self, config: Params):
        self.cfg = config
        loaded = INSERT if config.experiment == "insert" else LOAD
        self.load_accounting = {"rate": "items", "rate_ops": [loaded], "per_op": loaded}
        counted = UPDATE if config.experiment == "read_update" else FIND
        self.measure_accounting = {"rate": "count", "rate_ops": [counted], "per_op": counted}

    def expected_after_load(self, load_threads: int = 1) -> dict:
        return {COLLECTION: self.cfg.documents}

    def setup(self, store: Store) -> None:
        store.create_collection(COLLECTION)
        store.create_index(COLLECTION, X_INDEX)  # before the inserts, as the post did

    def load(self, threads: int):
        """One client: the post's insert loop (insert), or its single loader (read_update, read)."""
        return [self._inserter() if self.cfg.experiment == "insert" else self._loader()]

    def verify(self, store: Store) -> tuple[dict, dict]:
        expected = {"documents": self.cfg.documents, f"index {X_INDEX.name}": self.cfg.documents}
        found = {"documents": store.count(COLLECTION, None),
                 f"index {X_INDEX.name}": store.count(COLLECTION, X_INDEX.name)}
        return expected, found

    def measure(self, name: str, threads: int, rate_per_s: float | None):
        return [self._client(threads, i) for i in range(threads)]

    def check(self, store: Store) -> dict:
        expected, found = self.verify(store)
        return {"expected": expected, "found": found, "ok": expected == found,
                "mismatches": sum(expected[k] != found[k] for k in expected)}

    # -- experiment 1 ---------------------------------------------------------------------
    def _inserter(self):
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
    def _loader(self):
        cfg = self.cfg

        def work(store, rec, stop):
            rng = random.Random(cfg.seed)
            for start in range(0, cfg.documents, cfg.load_batch):
                if stop.is_set():
                    return
                docs = [document(rng, i, cfg.payload_chars)
                        for i in range(start, min(start + cfg.load_batch, cfg.documents))]
                rec.call(LOAD, store.insert_many, COLLECTION, docs, items=len(docs))
        return work

    def _client(self, clients: int, index: int):
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


def build(params: Params, context: dict | None = None) -> TokuMX:
    return TokuMX(params)
