"""Replication lag per secondary and the detection of a secondary that fell off the oplog.

The TokuMX post's MongoDB replica set lost a secondary under the insert load: it logged
"replSet error RS102 too stale to catch up" and stayed in RECOVERING. That is a finding, not a
crash: `StaleWatch` samples replSetGetStatus every interval, keeps the lag per secondary, and
when a member is too stale it calls `on_stale` once with the evidence, so the runner can stop
the phase and record {"event": "stale_secondary", ...}. Works with any client whose
`admin.command` speaks to the server (pymongo 3.x or 4.x), so the runner needs nothing else.

How a too-stale member shows, by version (mongod's src/mongo/db/repl/bgsync.cpp):
  2.x/TokuMX  "replSet error RS102 too stale to catch up", also in heartbeat messages
  3.2-4.2     error() "too stale to catch up -- entering maintenance mode": the member enters
              RECOVERING through maintenance mode; no heartbeat message carries it, so the
              primary's replSetGetStatus shows nothing but state 3
  4.4+        the same in structured logs, "Too stale to catch up" (capital T)
So besides the members' messages, a RECOVERING member counts as too stale when its own log says so
(getLog "global", matched case-insensitively) or when its optime is older than the primary's
oldest oplog entry (it can never catch up from there).
"""
from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Callable

RECOVERING = 3
STALE_PATTERNS = re.compile(r"too stale|RS102|TooStaleToSyncFromSource|maintenance mode", re.I)
STALE_LINE = re.compile(r"too stale to catch up|RS102|TooStaleToSyncFromSource", re.I)


def _seconds(optime) -> float | None:
    """An optime as seconds: {ts: Timestamp, t: term} (3.2+ protocol 1), a bare Timestamp (older),
    or optimeDate (a datetime)."""
    if optime is None:
        return None
    if isinstance(optime, dict):
        optime = optime.get("ts")
    if hasattr(optime, "time") and hasattr(optime, "inc"):
        return optime.time + optime.inc / 1e6   # ordering within a second, not wall time
    if hasattr(optime, "timestamp"):
        return optime.timestamp()
    return None


def lag_from_status(status: dict) -> dict[str, float]:
    """Seconds each secondary is behind the primary, from one replSetGetStatus reply."""
    members = status.get("members", [])
    primary = next((m for m in members if m.get("stateStr") == "PRIMARY"), None)
    if primary is None:
        return {}
    head = _seconds(primary.get("optime")) or _seconds(primary.get("optimeDate"))
    out = {}
    for m in members:
        if m.get("stateStr") == "SECONDARY" or m.get("state") == RECOVERING:
            mine = _seconds(m.get("optime")) or _seconds(m.get("optimeDate"))
            if head is not None and mine is not None:
                out[m["name"]] = max(0.0, round(head - mine, 3))
    return out


def stale_members(status: dict) -> list[dict]:
    """Members that say they are too stale to catch up (RECOVERING with the RS102 message)."""
    found = []
    for m in status.get("members", []):
        message = " ".join(str(m.get(k, "")) for k in ("infoMessage", "errmsg", "lastHeartbeatMessage"))
        if m.get("state") == RECOVERING and STALE_PATTERNS.search(message):
            found.append({"member": m.get("name"), "state": m.get("stateStr"), "message": message.strip()})
    return found


def stale_line(lines) -> str | None:
    """The first line saying the member is too stale (any version's spelling), or None."""
    return next((line.strip() for line in lines if STALE_LINE.search(line)), None)


def stale_by_optime(status: dict, oldest) -> list[dict]:
    """RECOVERING members whose optime is older than the primary's oldest oplog entry."""
    floor = _seconds(oldest)
    found = []
    for m in status.get("members", []):
        mine = _seconds(m.get("optime")) or _seconds(m.get("optimeDate"))
        if m.get("state") == RECOVERING and floor is not None and mine is not None and mine < floor:
            found.append({"member": m.get("name"), "state": m.get("stateStr"),
                          "message": f"optime {mine:.6f} is older than the primary's oldest oplog entry {floor:.6f}"})
    return found


def stale_in_log(path: Path, start: int = 0) -> tuple[str | None, int]:
    """The first too-stale line in a server log after byte offset `start` (the member itself logs
    it, even when replSetGetStatus on the primary shows only RECOVERING); and the new offset."""
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read()
    except OSError:
        return None, start
    return stale_line(data.decode(errors="replace").splitlines()), start + len(data)


class StaleWatch:
    """Samples replication every `interval_s` in a thread; `lag` holds the last lag per member."""

    def __init__(self, client, interval_s: float, on_stale: Callable[[dict], None]):
        self.client = client
        self.interval_s = interval_s
        self.on_stale = on_stale
        self.lag: dict[str, float] = {}
        self.max_lag: dict[str, float] = {}
        self.found: dict | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _oldest_oplog_ts(self):
        entry = self.client.local["oplog.rs"].find_one({}, {"ts": 1}, sort=[("$natural", 1)])
        return entry.get("ts") if entry else None

    @staticmethod
    def _from_member_log(member: dict) -> dict | None:
        """A RECOVERING member's own log (getLog "global"), read over the wire client."""
        from . import wire
        host, _, port = str(member.get("name", "")).rpartition(":")
        try:
            lines = wire.command(host, int(port), {"getLog": "global"}, timeout_s=5).get("log") or []
        except (OSError, ValueError, ConnectionError, wire.CommandError):
            return None
        line = stale_line(lines)
        return {"member": member["name"], "state": member.get("stateStr"), "message": line} if line else None

    def check(self) -> dict | None:
        status = self.client.admin.command("replSetGetStatus")
        self.lag = lag_from_status(status)
        for member, lag in self.lag.items():
            self.max_lag[member] = max(lag, self.max_lag.get(member, 0.0))
        stale = stale_members(status)
        recovering = [m for m in status.get("members", []) if m.get("state") == RECOVERING]
        if not stale and recovering:
            stale = [found for m in recovering if (found := self._from_member_log(m))]
        if not stale and recovering:
            stale = stale_by_optime(status, self._oldest_oplog_ts())
        if stale and self.found is None:
            self.found = {"event": "stale_secondary", "t": time.time(), "members": stale, "lag_s": dict(self.lag),
                          "max_lag_s": dict(self.max_lag)}
            self.on_stale(self.found)
        return self.found

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                if self.check():
                    return
            except Exception:
                continue  # an election or a busy primary: try again next interval

    def start(self) -> "StaleWatch":
        self._thread = threading.Thread(target=self._loop, name="stale-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
