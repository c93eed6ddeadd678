"""Which kind of system an experiment runs on: embedded engines, a mongod the lib launches, or an
existing deployment (DESIGN §3).

TARGET=mongod   a mongod binary is required (params `mongod.binary`, MONGOD, or PATH); without
                one the run fails at once, starting nothing.
TARGET=auto     mongod when a binary is found, else the embedded engines; the banner says which.
TARGET=uri      the deployment at ENGINEBENCH_URI (a replica set, a sharded cluster, ...).
"""
from __future__ import annotations

import os
import re

from .mongod.binary import find_mongod as _find

TARGETS = ("auto", "embedded", "mongod", "uri")
URI_ENV = "ENGINEBENCH_URI"
NO_MONGOD = ("TARGET=mongod: no mongod binary found; set MONGOD=/path/to/mongod, name one per system with "
             "`mongod: {binary: ...}` in the params, or put mongod on PATH (see docs/mongod.md)")


def find_mongod() -> str | None:
    return _find(None)


def _params_binaries(params: dict | None) -> list[str]:
    if not params:
        return []
    return [s["mongod"]["binary"] for s in params.get("systems", []) if (s.get("mongod") or {}).get("binary")]


def redact(uri: str) -> str:
    """A URI without its password, for banners and manifests."""
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", uri)


REACH_TIMEOUT_S = 5


def reach(uri: str) -> dict:
    """The first seed's handshake, once, before anything starts: an unreachable deployment stops
    the run at once with one line naming it, not after every system's attempts."""
    from pymongo.uri_parser import parse_uri

    from .mongod import wire
    try:
        host, port = parse_uri(uri)["nodelist"][0]
    except Exception as exc:
        raise RuntimeError(f"TARGET=uri: {URI_ENV}={redact(uri)} is not a MongoDB URI: {exc}") from None
    if uri.startswith("mongodb+srv://") or "tls=true" in uri.lower() or "ssl=true" in uri.lower():
        return {}  # TLS and SRV lookups are the driver's to do; its own error names a failure
    try:
        return wire.command(host, port, {"isMaster": 1}, timeout_s=REACH_TIMEOUT_S)
    except Exception as exc:
        raise RuntimeError(f"TARGET=uri: cannot reach {host}:{port} ({URI_ENV}={redact(uri)}): "
                           f"{type(exc).__name__}: {exc}") from None


def server_process(uri: str) -> str | None:
    """The name the server at the URI gives itself (serverStatus.process), or None when it will
    not say before authentication or the connection needs TLS (the driver's to do)."""
    from pymongo.uri_parser import parse_uri

    from .mongod import wire
    if uri.startswith("mongodb+srv://") or "tls=true" in uri.lower() or "ssl=true" in uri.lower():
        return None
    host, port = parse_uri(uri)["nodelist"][0]
    try:
        return wire.command(host, port, {"serverStatus": 1}, timeout_s=REACH_TIMEOUT_S).get("process")
    except Exception:  # refused (auth) or an error reply: the run's companion records what it can
        return None


def resolve_target(target: str, params: dict | None = None) -> dict:
    """{'kind': 'embedded'|'mongod'|'uri', 'banner': [lines for the top of the report], ...}."""
    mongod = find_mongod()
    named = _params_binaries(params)
    if target == "uri":
        uri = os.environ.get(URI_ENV)
        if not uri:
            raise RuntimeError(f"TARGET=uri: set {URI_ENV}=mongodb://host:port/ to the deployment to measure")
        reach(uri)
        return {"kind": "uri", "requested": target, "uri": redact(uri), "mongod": None,
                "server_process": server_process(uri),
                "banner": [f"TARGET=uri: the existing deployment {redact(uri)} ran, in its own database; the params' "
                           "engine options and limits do not apply there, only the server's own statistics "
                           "(serverStatus, dbStats) describe it, and no claim about the post's engines is judged "
                           "from it."]}
    if target == "mongod":
        if mongod is None and not named:
            raise RuntimeError(NO_MONGOD)
        return {"kind": "mongod", "requested": target, "mongod": mongod, "banner": []}
    if target == "auto" and (mongod is not None or named):
        return {"kind": "mongod", "requested": target, "mongod": mongod,
                "banner": [f"TARGET=auto found mongod ({mongod or ', '.join(named)}): the systems ran on mongod."]}
    note = [] if target == "embedded" else ["TARGET=auto: no mongod binary was found, so the embedded engines ran "
                                            "(WiredTiger, RocksDB and LMDB inside the runner process)."]
    return {"kind": "embedded", "requested": target, "mongod": mongod, "banner": note}
