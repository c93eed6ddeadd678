"""Which Python runs the client workers for a server: today's, or the legacy environment.

pymongo 4 speaks to servers from its minimum wire version up (MongoDB 4.4 for the pymongo in
this project's environment); pymongo 3.x speaks to 2.6 to 5.0. So a 3.0-4.2 server's workers
run in .venv-legacy (`make setup-legacy`: pymongo<4 and this project). The choice is made from
the server's version before anything starts, and the manifest records it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from ..paths import repo_root
from .binary import BinaryInfo

# Server release -> its maxWireVersion (the MongoDB wire protocol's own numbering).
WIRE_VERSIONS = {(2, 6): 2, (3, 0): 3, (3, 2): 4, (3, 4): 5, (3, 6): 6, (4, 0): 7, (4, 2): 8, (4, 4): 9,
                 (5, 0): 13, (5, 1): 14, (5, 2): 15, (5, 3): 16, (6, 0): 17, (6, 1): 18, (6, 2): 19,
                 (6, 3): 20, (7, 0): 21, (7, 1): 22, (7, 2): 23, (7, 3): 24, (8, 0): 25}


class LegacyError(RuntimeError):
    pass


def wire_version(info: BinaryInfo) -> int:
    if info.flavour == "TokuMX":
        return 0  # MongoDB 2.4 based: before wire versions were announced
    key = info.version_tuple[:2]
    if key in WIRE_VERSIONS:
        return WIRE_VERSIONS[key]
    if key < (2, 6):
        return 0
    # a development release (3.1, 4.1, ...) speaks its next stable release's version at most
    return max(v for k, v in WIRE_VERSIONS.items() if k <= key)


def modern_min_wire() -> int:
    from pymongo import common
    return common.MIN_SUPPORTED_WIRE_VERSION


def legacy_python() -> Path:
    env = os.environ.get("ENGINEBENCH_LEGACY_PYTHON")
    return Path(env) if env else repo_root() / ".venv-legacy" / "bin" / "python"


def runner_python(info: BinaryInfo, label: str) -> dict:
    """{'python': interpreter, 'client': 'pymongo 4' | 'legacy', 'wire_version': n}; raises when
    the server needs the legacy environment and it has not been made."""
    wire = wire_version(info)
    if wire >= modern_min_wire():
        return {"python": sys.executable, "client": "current", "wire_version": wire}
    python = legacy_python()
    if not (python.is_file() and os.access(python, os.X_OK)):
        raise LegacyError(f"system {label}: {info.flavour} {info.version} speaks wire version {wire}, older than "
                          f"this environment's pymongo supports (>= {modern_min_wire()}); its client workers "
                          f"run in the legacy environment, which is missing: run `make setup-legacy` "
                          f"(creates {python})")
    return {"python": str(python), "client": "legacy", "wire_version": wire}
