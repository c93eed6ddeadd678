"""The bundled workload: a small social app's traffic, for users with no capture of their own.

Parse's replays were production traffic from a mobile backend, more read- than write-heavy
(seed 003). This mix imitates one: users with profiles, posts whose number per user is skewed
(a few users post a lot), a counter handed out with findAndModify, and an activity log kept in a
capped collection. Reads scan very different numbers of documents (one profile, a page of a
feed, a user's posts over a time window, a range of post ids), so latency can be set against
documents scanned. Arrivals are Poisson at `rate` ops/s.

Everything is generated from `seed`: the loaded dataset and the operation stream are the same on
every run and every engine. The generator tracks the ids it has inserted and removed itself, so
the stream never depends on what an engine answered.
"""
from __future__ import annotations

import bisect
import itertools
import math
import random

from pydantic import Field

from ..params.base import Strict
from ..stores.base import IndexSpec, Store

DATABASE = "app"
USERS, POSTS, COUNTERS, EVENTS = "users", "posts", "counters", "events"
POST_INDEX = IndexSpec("user_created", (("user", 1), ("created", 1)))
TIME_SPAN = 1_000_000      # seconds of history the loaded posts cover
ID_GAP_OPS = 2_000         # writes touch posts inserted at least this many ops earlier
LETTERS = "abcdefghijklmnopqrstuvwxyz"

# The mix, as (kind, share); the kinds map to Store calls in AppMix._op.
MIX = (("profile", 0.15), ("feed", 0.15), ("user_range", 0.12), ("id_range", 0.08), ("count", 0.08),
       ("post", 0.10), ("event", 0.10), ("like", 0.09), ("profile_update", 0.05), ("next_id", 0.05),
       ("remove", 0.03))


class AppMixConfig(Strict):
    """The bundled workload's shape; a capture's header keeps it, so a replay can load the same data."""
    users: int = Field(2_000, ge=1)
    posts: int = Field(100_000, ge=1)        # loaded before the capture starts
    post_bytes: int = Field(400, ge=1)
    capped_mb: float = Field(4.0, gt=0)      # the activity log's size cap
    event_bytes: int = Field(200, ge=1)
    rate: float = Field(200.0, gt=0)         # mean arrivals per second
    duration_s: float = Field(60.0, gt=0)    # length of the generated stream
    skew: float = Field(1.1, gt=0)           # Zipf exponent of posts (and activity) per user
    seed: int = 1

    @property
    def capped_bytes(self) -> int:
        return int(self.capped_mb * (1 << 20))


class AppMix:
    def __init__(self, config: AppMixConfig):
        self.cfg = config
        weights = [1.0 / (rank + 1) ** config.skew for rank in range(config.users)]
        total = sum(weights)
        self._user_cdf = list(itertools.accumulate(w / total for w in weights))
        self._mix_cdf = list(itertools.accumulate(share for _, share in MIX))
        self._mix_kinds = [kind for kind, _ in MIX]
        self._pool = "".join(random.Random(config.seed).choice(LETTERS) for _ in range(1 << 14)) * 4

    # -- the schema and the dataset ---------------------------------------------------------
    def descriptor(self) -> dict:
        """What a capture's header says about the data it ran on, so a replay can load it."""
        return {"generator": "appmix", "config": {k: getattr(self.cfg, k) for k in AppMixConfig.model_fields}}

    def collections(self) -> dict:
        index = {"name": POST_INDEX.name, "fields": [list(f) for f in POST_INDEX.fields], "unique": False}
        return {USERS: {"capped_bytes": None, "indexes": []}, POSTS: {"capped_bytes": None, "indexes": [index]},
                COUNTERS: {"capped_bytes": None, "indexes": []},
                EVENTS: {"capped_bytes": self.cfg.capped_bytes, "indexes": []}}

    def setup(self, store: Store) -> None:
        for name, meta in self.collections().items():
            store.create_collection(name, meta["capped_bytes"])
        store.create_index(POSTS, POST_INDEX)

    def _user(self, rng: random.Random) -> int:
        return min(bisect.bisect_left(self._user_cdf, rng.random()), self.cfg.users - 1)

    def _text(self, rng: random.Random, length: int) -> str:
        start = rng.randrange(len(self._pool) - length)
        return self._pool[start:start + length]

    def _post(self, rng: random.Random, post_id: int, created: int) -> dict:
        return {"_id": post_id, "user": self._user(rng), "created": created, "likes": 0,
                "body": self._text(rng, self.cfg.post_bytes)}

    def _event(self, rng: random.Random, seq: int) -> dict:
        # Fixed size (int32 fields, fixed text), so the cap holds an exact number of events.
        return {"_id": seq, "user": self._user(rng), "kind": rng.randrange(8), "body": self._text(rng, self.cfg.event_bytes)}

    def event_size(self) -> int:
        import bson
        return len(bson.encode(self._event(random.Random(0), 0)))

    def expected_after_load(self) -> dict:
        events = min(self._load_events(), self.cfg.capped_bytes // self.event_size())
        return {USERS: self.cfg.users, POSTS: self.cfg.posts, COUNTERS: 1, EVENTS: events}

    def _load_events(self) -> int:
        # Fill the log past its cap, so capture starts in the steady state: every insert deletes.
        return int(self.cfg.capped_bytes * 1.25) // self.event_size() + 1

    def load_batches(self, batch: int = 500):
        """(collection, documents) batches of the dataset, deterministic."""
        rng = random.Random(self.cfg.seed * 7919 + 1)
        for start in range(0, self.cfg.users, batch):
            yield USERS, [{"_id": u, "name": f"user{u}", "score": 0, "visits": 0, "updated": 0,
                           "bio": self._text(rng, 150)} for u in range(start, min(start + batch, self.cfg.users))]
        for start in range(0, self.cfg.posts, batch):
            ids = range(start, min(start + batch, self.cfg.posts))
            # Created times spread evenly over the history, in id order (as time-ordered ids are).
            yield POSTS, [self._post(rng, i, i * TIME_SPAN // max(1, self.cfg.posts)) for i in ids]
        yield COUNTERS, [{"_id": "post_id", "seq": self.cfg.posts}]
        for start in range(0, self._load_events(), batch):
            yield EVENTS, [self._event(rng, s) for s in range(start, min(start + batch, self._load_events()))]

    # -- the operation stream ---------------------------------------------------------------
    def operations(self):
        """Op records in time order: {"ts": seconds from the start, "ns", "op", "store"}."""
        cfg = self.cfg
        rng = random.Random(cfg.seed)
        next_post, next_event = cfg.posts, self._load_events()
        removed: set[int] = set()
        t = 0.0
        for k in itertools.count():
            t += rng.expovariate(cfg.rate)
            if t >= cfg.duration_s:
                return
            kind = self._mix_kinds[min(bisect.bisect_left(self._mix_cdf, rng.random()), len(MIX) - 1)]
            settled = max(1, next_post - ID_GAP_OPS) if k >= ID_GAP_OPS else cfg.posts
            if kind == "post":
                created = TIME_SPAN + int(t * 1000)
                record = self._op(POSTS, "insert", "insert_many", docs=[self._post(rng, next_post, created)])
                next_post += 1
            elif kind == "event":
                record = self._op(EVENTS, "insert", "insert_many", docs=[self._event(rng, next_event)])
                next_event += 1
            elif kind == "profile":
                record = self._op(USERS, "query", "get", index=None, key=[self._user(rng)])
            elif kind == "feed":
                record = self._op(POSTS, "query", "scan", index=POST_INDEX.name, prefix=[self._user(rng)],
                                  reverse=True, limit=20)
            elif kind == "user_range":
                width = int(math.exp(rng.uniform(math.log(TIME_SPAN / 2e4), math.log(TIME_SPAN / 4))))
                low = rng.randrange(0, TIME_SPAN - width)
                record = self._op(POSTS, "query", "scan", index=POST_INDEX.name, prefix=[self._user(rng)],
                                  low=low, high=low + width)
            elif kind == "id_range":
                width = int(math.exp(rng.uniform(0, math.log(2000))))
                low = rng.randrange(0, max(1, settled - width))
                record = self._op(POSTS, "query", "scan", index=None, low=low, high=low + width - 1)
            elif kind == "count":
                record = self._op(POSTS, "count", "count", index=POST_INDEX.name, prefix=[self._user(rng)])
            elif kind == "like":
                record = self._op(POSTS, "update", "update", index=None, key=[rng.randrange(settled)], inc={"likes": 1})
            elif kind == "profile_update":
                user = self._user(rng)
                record = self._op(USERS, "update", "update", index=None, key=[user],
                                  set={"updated": int(t * 1000)}, inc={"visits": 1, "score": rng.randrange(1, 10)})
            elif kind == "next_id":
                record = self._op(COUNTERS, "findandmodify", "update", index=None, key=["post_id"], inc={"seq": 1},
                                  return_before=True)
            elif len(removed) >= settled // 2:  # too few settled posts left to remove: count instead
                record = self._op(POSTS, "count", "count", index=POST_INDEX.name, prefix=[self._user(rng)])
            else:  # remove: a settled post not removed before
                victim = rng.randrange(settled)
                while victim in removed:
                    victim = rng.randrange(settled)
                removed.add(victim)
                record = self._op(POSTS, "remove", "delete", index=None, key=[victim])
            record["ts"] = t
            yield record

    @staticmethod
    def _op(collection: str, op: str, method: str, **args) -> dict:
        return {"ns": f"{DATABASE}.{collection}", "op": op, "store": {"method": method, "args": args}}
