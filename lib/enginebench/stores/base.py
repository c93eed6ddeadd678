"""The Store interface every workload talks to (in the spirit of YCSB's DB class).

One Store object is shared by all worker threads of a process; implementations keep per-thread
state (sessions, transactions) themselves. The semantics are MongoDB's for the subset the
workloads use, and every implementation must give identical answers for the same sequence of
calls (lib/tests/test_store_equivalence.py checks that).

Keys: `index=None` means the collection's `_id`; otherwise the name of an index created with
`create_index`, and a key is a tuple of that index's field values in index order.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence


class StoreError(Exception):
    """A store could not be opened or an operation is not supported."""


class DuplicateKey(StoreError):
    """An insert would violate a unique index."""


@dataclass(frozen=True)
class IndexSpec:
    name: str
    fields: tuple[tuple[str, int], ...]  # (field name, 1 or -1)
    unique: bool = False

    def __post_init__(self):
        # Derived once: these are read for every index entry written.
        object.__setattr__(self, "field_names", tuple(f for f, _ in self.fields))
        object.__setattr__(self, "directions", tuple(d for _, d in self.fields))


@dataclass
class UpdateResult:
    matched: bool | None  # None: an unacknowledged write (w:0) never says whether it matched
    upserted: bool = False
    before: dict | None = None  # the document before the update, when asked for


@dataclass
class StoreInfo:
    """What a store reports about itself, for the manifest."""
    engine: str
    version: str
    config: dict = field(default_factory=dict)


class Store(ABC):
    """Document operations over collections and their indexes."""

    # -- schema ---------------------------------------------------------------------------
    @abstractmethod
    def create_collection(self, name: str, capped_bytes: int | None = None) -> None: ...

    @abstractmethod
    def create_index(self, collection: str, spec: IndexSpec) -> None: ...

    # -- writes ---------------------------------------------------------------------------
    @abstractmethod
    def insert_many(self, collection: str, docs: Sequence[dict]) -> int:
        """Insert documents (each with an `_id`); raises DuplicateKey on a unique violation."""

    @abstractmethod
    def update(self, collection: str, index: str | None, key: tuple, *,
               set: dict | None = None, inc: dict | None = None,
               set_on_insert: dict | None = None, where: dict | None = None,
               upsert: bool = False, return_before: bool = False, replace: dict | None = None) -> UpdateResult:
        """Update the one document with this key (and matching `where`: equalities, or
        {"field": {"$lt": v}}).

        With upsert and no match, insert the key's fields + set + inc + set_on_insert. `replace`
        replaces the document (keeping its `_id`), as an update without operators does.
        """

    def upsert_many(self, collection: str, index: str, upserts: Sequence[tuple[tuple, dict]]) -> int:
        """Unordered upserts, each a (key, update() arguments) pair: one bulk request on a server
        (as LinkbenchX loaded its links and counts), an update each on an embedded store."""
        for key, arguments in upserts:
            self.update(collection, index, key, upsert=True, **arguments)
        return len(upserts)

    @abstractmethod
    def delete(self, collection: str, index: str | None, key: tuple, *,
               where: dict | None = None) -> bool: ...

    # -- reads ----------------------------------------------------------------------------
    @abstractmethod
    def get(self, collection: str, index: str | None, key: tuple) -> dict | None: ...

    @abstractmethod
    def get_many(self, collection: str, index: str, prefix: tuple, last_values: Sequence) -> list[dict]:
        """Documents whose index key is prefix + (v,) for v in last_values ($in on the last field),
        in index order."""

    @abstractmethod
    def scan(self, collection: str, index: str | None, prefix: tuple = (), *,
             low: Any = None, high: Any = None, reverse: bool = False,
             skip: int = 0, limit: int | None = None,
             fields: tuple[str, ...] | None = None) -> list[dict]:
        """Documents with an index key starting with `prefix` and what follows in [low, high]
        (None = unbounded), in index order (or reversed). A bound is a value for the next field,
        or a tuple over the next fields compared as a tuple ("seek to this key and scan on").
        `fields` projects (without _id); inside the index it is a covered, index-only read."""

    @abstractmethod
    def count(self, collection: str, index: str | None, prefix: tuple = (), *,
              low: Any = None, high: Any = None, limit: int | None = None) -> int: ...

    @abstractmethod
    def iter_index(self, collection: str, index: str | None) -> Iterator[tuple]:
        """Every key tuple of an index (or every `_id` as a 1-tuple), in order."""

    # -- transactions and lifecycle -------------------------------------------------------
    atomic: bool = True  # False: run_in_transaction gives no atomicity on this system

    def run_in_transaction(self, fn, *args, **kwargs):
        """Call fn(*args, **kwargs) atomically where the system supports it, and return its result.

        fn may be called again after a write conflict, so it must have no side effects other
        than Store calls. Stores without transactions call it once and set `atomic = False`.
        """
        return fn(*args, **kwargs)

    @abstractmethod
    def info(self) -> StoreInfo: ...

    def stats(self) -> dict:
        """Engine counters (cumulative), sampled per interval. Empty when there are none."""
        return {}

    def checkpoint(self) -> None:
        """Make all data durable (quiesce between phases)."""

    @abstractmethod
    def close(self) -> None: ...
