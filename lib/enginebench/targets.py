"""Which kind of system an experiment runs on: embedded engines or a mongod binary."""
from __future__ import annotations

import os
import shutil


def find_mongod() -> str | None:
    path = os.environ.get("MONGOD") or shutil.which("mongod")
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def resolve_target(target: str) -> dict:
    """{'kind': 'embedded'|'mongod', 'banner': [lines for the top of the report], ...}."""
    mongod = find_mongod()
    if target == "mongod":
        if mongod is None:
            raise RuntimeError("TARGET=mongod: no mongod binary found; set MONGOD=/path/to/mongod or put mongod "
                               "on PATH (see README: Getting mongod)")
        raise RuntimeError(f"TARGET=mongod: found {mongod}, but launching mongod is not available in this "
                           "version of enginebench; use TARGET=embedded")
    if target == "auto" and mongod is not None:
        return {"kind": "embedded", "requested": target, "mongod": mongod,
                "banner": [f"TARGET=auto found mongod at {mongod}, but this version cannot launch it yet: "
                           "the embedded engines ran instead."]}
    note = [] if target == "embedded" else ["TARGET=auto: no mongod binary was found, so the embedded engines ran "
                                            "(WiredTiger, RocksDB and LMDB inside the runner process)."]
    return {"kind": "embedded", "requested": target, "mongod": mongod, "banner": note}
