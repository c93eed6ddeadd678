"""Named gaps: what a server under TARGET=mongod or uri could not provide (its statistics, the
profiler, the oplog, transactions, hints, capped collections), as MongoStore probed it when the
system opened (mongod/capabilities.py). The banner lists them, so a figure that depends on a
missing feature reads as missing for that reason, not as silently absent."""
from __future__ import annotations

import html

from ..mongod.capabilities import MONGODB_PROCESSES


def gap_lines(run) -> list[str]:
    """One banner line per distinct set of gaps, naming the systems it applies to."""
    by_server: dict[tuple, list[str]] = {}
    for label, info in (run.manifest.get("systems") or {}).items():
        config = info.get("engine_config") or {}
        gaps = tuple(config.get("gaps") or ())
        if gaps or config.get("server_process") not in (None, *MONGODB_PROCESSES):
            by_server.setdefault((config.get("server_process"), gaps), []).append(label)
    lines = []
    for (process, gaps), labels in by_server.items():
        line = f"<b>Named gaps</b> of the server that ran {', '.join(labels)}"
        if process not in MONGODB_PROCESSES:
            line += f" (not a mongod: its serverStatus names it {html.escape(repr(process))})"
        lines.append(line + ": it lacks " + "; ".join(html.escape(g) for g in gaps) + "." if gaps else line + ".")
    return lines
