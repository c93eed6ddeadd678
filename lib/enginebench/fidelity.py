"""Where a run departs from its post's own settings: one line each, for the top of the report.

Each point of fidelity is either fixed in the code or a param whose paper-scale value is the
post's; a run that sets it otherwise says so in its banner,
so a reader never compares a variant with the published figure unawares.
"""
from __future__ import annotations

from typing import Callable

# TokuMX ran "compression=zlib" for all of the post's tests (seed 004).
TOKUMX_COMPRESSION = "zlib"
# The record store's compressor when the params name none (engines.py defaults).
DEFAULT_COMPRESSION = "snappy"
COMPRESSION_KEY = {"rocksdb": "compression", "wiredtiger": "block_compressor", "fractal": "compression"}


def _compression(system: dict) -> str | None:
    key = COMPRESSION_KEY.get(system["engine"])
    return None if key is None else (system.get("options") or {}).get(key, DEFAULT_COMPRESSION)


def tokumx_lines(params: dict, target: str) -> list[str]:
    lines = []
    for s in params["systems"]:
        compression = _compression(s) if s.get("engine") == "fractal" else None
        if compression and compression != TOKUMX_COMPRESSION:
            lines.append(f"{s['label']} compresses with {compression}, not the {TOKUMX_COMPRESSION} TokuMX ran "
                         "for the post's tests.")
        w = (s.get("mongod") or {}).get("write_concern", 1)
        if target in ("mongod", "uri") and w != 0:
            lines.append(f"{s['label']}: acknowledged writes (w:{w}); the post's shell loops did not wait for "
                         "theirs (w:0), so its rates counted writes sent, these count writes done.")
    if params["workload"].get("experiment") == "insert" and \
            ((params.get("resources") or {}).get("storage") or {}).get("profile", "none") == "none":
        lines.append("No storage profile: the post's slow VM disk is not emulated, so the insert dips its "
                     "flushes caused need not show.")
    return lines


def linkbench_lines(params: dict, target: str) -> list[str]:
    if params["workload"].get("counts", "linkbenchx") == "linkbenchx":
        return []
    return ["Count rows kept exactly (counts: exact, MySQL's semantics in one transaction); the post's "
            "LinkbenchX wrote them without a transaction (counts: linkbenchx), about 0.7 document writes per "
            "request against about 0.4 here."]


LINES: dict[str, Callable[[dict, str], list[str]]] = {"tokumx": tokumx_lines, "linkbench": linkbench_lines}


def departures(params: dict, target: str) -> list[str]:
    """The banner lines for a run of these params on this target kind (embedded, mongod, uri)."""
    lines = LINES.get(params["workload"]["name"])
    return lines(params, target) if lines else []
