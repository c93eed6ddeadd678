"""Running captured ops against a mongod, as the commands they were (pymongo `Database.command`).

Where Flashback's replayer narrowed every op to what its driver calls expressed (single-document
updates and removes, count of the whole collection, findAndModify without its options, getMore as
a no-op, other commands dropped), the command is sent as captured: multi updates and removes,
count with its query, findAndModify with sort/upsert/new/remove/fields, and any other command. A
getMore continues the cursor its replayed find opened (the capture's cursor id is mapped to the
replayed one); a find whose cursor is exhausted leaves nothing to continue, and that getMore is
counted as an error, not faked. Store-level captures replay through MongoStore's Store calls.
"""
from __future__ import annotations

import threading
from typing import Callable

from .execute_store import NotReplayable, prepare as prepare_store


class CursorMap:
    """Captured cursor id -> the id the replayed find got back (shared by all workers)."""

    def __init__(self):
        self._ids: dict[int, int] = {}
        self._lock = threading.Lock()

    def put(self, original: int, replayed: int) -> None:
        with self._lock:
            self._ids[original] = replayed

    def get(self, original: int) -> int | None:
        with self._lock:
            return self._ids.get(original)


def prepare_command(record: dict, client, cursors: CursorMap) -> Callable:
    """A function store -> documents returned or affected, for a command captured from a mongod."""
    database = record["ns"].split(".", 1)[0]
    command = dict(record["command"])
    op = record["op"]
    if op == "getmore":
        original = int(command.get("getMore") or 0)

        def get_more(_store) -> int:
            replayed = cursors.get(original)
            if replayed is None:
                raise RuntimeError(f"cursor {original}: its find was not replayed or returned everything at once")
            command["getMore"] = replayed
            reply = client[database].command(command)
            return len(reply["cursor"]["nextBatch"])
        return get_more
    if op == "query":
        original = record.get("cursor_id")

        def find(_store) -> int:
            reply = client[database].command(command)
            cursor = reply["cursor"]
            if original and cursor.get("id"):
                cursors.put(original, cursor["id"])
            return len(cursor["firstBatch"])
        return find

    def run(_store) -> int:
        reply = client[database].command(command)
        if op == "findandmodify":
            return int(reply.get("value") is not None)
        return int(reply.get("n", 0))
    return run


def executor_for(store) -> Callable[[dict], Callable]:
    """prepare(record) for this target: commands on a MongoStore, Store calls elsewhere."""
    client = getattr(store, "client", None)
    if client is None:
        return prepare_store
    cursors = CursorMap()

    def prepare(record: dict) -> Callable:
        if record.get("store") is not None:
            return prepare_store(record)
        if not record.get("command"):
            raise NotReplayable(f"{record['op']}: no command captured")
        return prepare_command(record, client, cursors)
    return prepare
