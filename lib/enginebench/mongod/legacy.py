"""Which client speaks to a server: the runner's Rust driver or the legacy executor for the
workload's commands, and today's pymongo or the legacy environment's for the companion.

The workload's commands go through the official Rust driver (the runner's `mongodb` crate) for
every server it speaks to, from DRIVER_MIN_WIRE up; older servers (the posts' 3.0 and 3.2) get the
legacy executor, pymongo 3 in .venv-legacy (`make setup-legacy`). The companion (companion.py:
capabilities, serverStatus, sizes) runs in this environment where its pymongo 4 speaks the
server (MongoDB 4.4 up) and in the legacy one below that (pymongo 3.x speaks to 2.6 to 5.0).
The choice is made from the server's version before anything starts, and the manifest records it.
"""
from __future__ import annotations

import functools
import os
import subprocess
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


# The oldest wire version the runner's Rust driver speaks: mongodb 3.8.2 (lib/native/Cargo.toml)
# accepts wire version 8 (MongoDB 4.2) and up (its src/sdam/description/server.rs; 3.9 starts at 9).
DRIVER_MIN_WIRE = 8


# ENGINEBENCH_EXECUTOR=legacy sends any server's commands through the legacy executor (the tests
# run every family through both executors against the same server); =driver insists on the driver.
EXECUTOR_ENV = "ENGINEBENCH_EXECUTOR"


def forced_executor() -> str | None:
    value = os.environ.get(EXECUTOR_ENV) or None
    if value not in (None, "driver", "legacy"):
        raise LegacyError(f"{EXECUTOR_ENV}={value!r} is not allowed; allowed values: driver, legacy (unset: by the "
                          "server's wire version)")
    return value


def modern_min_wire() -> int:
    from pymongo import common
    return common.MIN_SUPPORTED_WIRE_VERSION


def legacy_python() -> Path:
    env = os.environ.get("ENGINEBENCH_LEGACY_PYTHON")
    return Path(env) if env else repo_root() / ".venv-legacy" / "bin" / "python"


class NoClient(LegacyError):
    """No client environment here speaks this server's wire version."""


@functools.lru_cache(maxsize=None)
def wire_range(python: str) -> tuple[int, int]:
    """(min, max) wire versions the pymongo of an interpreter supports, asked of it."""
    code = "from pymongo import common; print(common.MIN_SUPPORTED_WIRE_VERSION, common.MAX_SUPPORTED_WIRE_VERSION)"
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LegacyError(f"{python}: cannot ask its pymongo for its wire versions: {exc}") from exc
    if done.returncode != 0:
        raise LegacyError(f"{python}: its pymongo does not import: {done.stderr.strip().splitlines()[-1:]}; "
                          "run `make setup-legacy`")
    low, high = done.stdout.split()
    return int(low), int(high)


def check_client(wire: int, what: str) -> None:
    """Raise NoClient when neither this environment nor the legacy one speaks `wire`."""
    if wire < 2:
        raise NoClient(f"{what} announces no wire version (maxWireVersion {wire}), as MongoDB 2.4 and TokuMX 2.x do; "
                       "no installable client speaks to it: pymongo 3.6+ needs wire version 2, and pymongo 3.5.1 does "
                       "not import on Python 3.10+ (collections.MutableMapping)")


def runner_python(info: BinaryInfo, label: str) -> dict:
    """{'python': interpreter, 'client': 'pymongo 4' | 'legacy', 'wire_version': n}; raises when
    the server needs the legacy environment and it has not been made."""
    wire = wire_version(info)
    return client_for(wire, f"system {label}: {info.flavour} {info.version}")


def client_for(wire: int, what: str) -> dict:
    """How to reach a server announcing `wire`: {'executor': 'driver' | 'legacy', 'python': the
    companion's interpreter, 'client': 'current' | 'legacy' (the companion's pymongo),
    'legacy_python': the legacy executor's interpreter (executor legacy), 'wire_version'}."""
    check_client(wire, what)
    executor = forced_executor() or ("driver" if wire >= DRIVER_MIN_WIRE else "legacy")
    if executor == "driver" and wire < DRIVER_MIN_WIRE:
        raise NoClient(f"{what} speaks wire version {wire}; the runner's Rust driver speaks {DRIVER_MIN_WIRE} and up "
                       f"({EXECUTOR_ENV}=driver asked for it)")
    if wire >= modern_min_wire() and executor == "driver":
        return {"python": sys.executable, "client": "current", "executor": executor, "wire_version": wire}
    python = legacy_python()
    if not (python.is_file() and os.access(python, os.X_OK)):
        raise LegacyError(f"{what} speaks wire version {wire}, older than this environment's pymongo supports "
                          f"(>= {modern_min_wire()}); its companion{' and its commands' if executor == 'legacy' else ''} "
                          f"run in the legacy environment, which is missing: run `make setup-legacy` (creates {python})")
    low, high = wire_range(str(python))
    if not low <= wire <= high:
        raise NoClient(f"{what} speaks wire version {wire}; the legacy environment's pymongo ({python}) speaks "
                       f"{low}-{high}, this environment's {modern_min_wire()} and up")
    out = {"python": str(python), "client": "legacy", "executor": executor, "wire_version": wire}
    if executor == "legacy":
        out["legacy_python"] = str(python)
    return out
