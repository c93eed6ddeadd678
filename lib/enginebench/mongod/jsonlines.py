"""The JSON-lines protocol between the native runner and the Python processes it runs beside a
server (companion.py, legacy_executor.py): the same shape as the runner's own `serve` mode.

Request:  {"id": n, "op": "<name>", ...arguments}
Response: {"id": n, "ok": <result>} or {"id": n, "error": {"type", "message", "code"}}
Values are MongoDB Extended JSON (canonical), so every BSON type survives the trip. One request
at a time: each process serves one runner thread.
"""
from __future__ import annotations

import sys
import traceback
from typing import Callable

from bson import json_util

CANONICAL = json_util.JSONOptions(json_mode=json_util.JSONMode.CANONICAL, tz_aware=True)


def error_reply(exc: BaseException) -> dict:
    """An exception as the runner reads it: duplicate keys by their kind, server errors with
    their code, everything else with its type and message."""
    code = getattr(exc, "code", None)
    details = getattr(exc, "details", None) or {}
    if code in (11000, 11001):
        kind = "DuplicateKey"
    elif code == 112:
        kind = "WriteConflict"
    else:
        kind = type(exc).__name__
    message = details.get("errmsg") if isinstance(details, dict) and details.get("errmsg") else str(exc)
    return {"type": kind, "message": message or repr(exc), "code": code}


def serve(handle: Callable[[str, dict], object], stdin=None, stdout=None) -> int:
    """Answers requests until stdin ends or a `close` request (answered, then the loop ends)."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    for line in stdin:
        if not line.strip():
            continue
        request: dict = {}
        try:
            request = json_util.loads(line, json_options=CANONICAL)
            op = request.get("op", "")
            reply = {"id": request.get("id"), "ok": handle(op, request)}
        except Exception as exc:  # the runner decides what a failed call means
            reply = {"id": request.get("id"), "error": error_reply(exc)}
            if not hasattr(exc, "code"):
                print(traceback.format_exc(), file=sys.stderr, flush=True)
        stdout.write(json_util.dumps(reply, json_options=CANONICAL) + "\n")
        stdout.flush()
        if request.get("op") == "close":
            break
    return 0
