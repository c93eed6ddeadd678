"""Running captured ops against a mongod, as the commands they were (pymongo `Database.command`).

Where Flashback's replayer narrowed every op to what its driver calls expressed (single-document
updates and removes, count of the whole collection, findAndModify without its options, getMore as
a no-op, other commands dropped), the command is sent as captured: multi updates and removes,
count with its query, findAndModify with sort/upsert/new/remove/fields, and any other command. A
getMore continues the cursor its replayed find opened (the capture's cursor id is mapped to the
replayed one); a find whose cursor is exhausted leaves nothing to continue, and that getMore is
counted as an error, not faked. Store-level captures replay through MongoStore's Store calls.

A find and its getMores share one explicit session: with implicit sessions, each command gets
whichever session the pool hands out, and with several workers a getMore can land in another
session than its find, which mongod (3.6+) refuses: error 50738 "Cannot run getMore on cursor
..., which was created in session ..., in session ..." (src/mongo/db/commands/getmore_cmd.cpp).
The session ends with its cursor. Servers without sessions (before 3.6) need none.
"""
from __future__ import annotations

import threading
from typing import Callable

from .execute_store import NotReplayable, prepare as prepare_store


class CursorMap:
    """Captured cursor id -> (the id the replayed find got back, its session), shared by all workers."""

    def __init__(self):
        self._ids: dict[int, tuple[int, object]] = {}
        self._lock = threading.Lock()

    def put(self, original: int, replayed: int, session=None) -> None:
        with self._lock:
            self._ids[original] = (replayed, session)

    def get(self, original: int) -> tuple[int, object] | None:
        with self._lock:
            return self._ids.get(original)

    def drop(self, original: int) -> None:
        with self._lock:
            entry = self._ids.pop(original, None)
        if entry is not None and entry[1] is not None:
            entry[1].end_session()


def _start_session(client):
    """An explicit session, or None where the deployment has none (before 3.6)."""
    from pymongo.errors import ConfigurationError
    try:
        return client.start_session()
    except ConfigurationError:
        return None


def prepare_command(record: dict, client, cursors: CursorMap) -> Callable:
    """A function store -> documents returned or affected, for a command captured from a mongod."""
    database = record["ns"].split(".", 1)[0]
    command = dict(record["command"])
    op = record["op"]
    if op == "getmore":
        original = int(command.get("getMore") or 0)

        def get_more(_store) -> int:
            entry = cursors.get(original)
            if entry is None:
                raise RuntimeError(f"cursor {original}: its find was not replayed or returned everything at once")
            replayed, session = entry
            reply = client[database].command({**command, "getMore": replayed}, session=session)
            if not reply["cursor"].get("id"):
                cursors.drop(original)   # exhausted: its session ends with it
            return len(reply["cursor"]["nextBatch"])
        return get_more
    if op == "query":
        original = record.get("cursor_id")

        def find(_store) -> int:
            session = _start_session(client) if original else None
            try:
                reply = client[database].command(command, session=session)
            except BaseException:
                if session is not None:
                    session.end_session()
                raise
            cursor = reply["cursor"]
            if original and cursor.get("id"):
                cursors.put(original, cursor["id"], session)
            elif session is not None:
                session.end_session()
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
