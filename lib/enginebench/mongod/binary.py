"""Finding a mongod and learning from the binary itself what it is.

Discovery order for a system: its params (`mongod.binary`), then MONGOD (MONGOS for mongos),
then PATH. Identification runs `<binary> --version` and `<binary> --help` (argv lists, never a
shell) and parses them: version, git version, flavour (MongoDB, Percona Server for MongoDB,
TokuMX), the storage engines it can run and the options it accepts. Reading the binary, not a
table of releases, is what lets custom builds (the posts' MongoRocks branches) be used as they are.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

IDENTIFY_TIMEOUT_S = 30


class BinaryError(RuntimeError):
    """A binary could not be found or identified; nothing was started."""


@dataclass(frozen=True)
class BinaryInfo:
    path: str
    version: str                         # as the binary prints it, e.g. "3.2.0-rc0"
    git_version: str | None
    flavour: str
    engines: tuple[str, ...]             # storage engines this binary can run
    options: frozenset[str] = field(default_factory=frozenset)   # command-line option names
    default_engine: str | None = None
    tokumx_version: str | None = None
    modules: tuple[str, ...] = ()

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        return version_tuple(self.version)

    def at_least(self, major: int, minor: int = 0) -> bool:
        return self.version_tuple[:2] >= (major, minor)

    def describe(self) -> dict:
        return {"path": self.path, "version": self.version, "git_version": self.git_version,
                "flavour": self.flavour, "engines": list(self.engines), "default_engine": self.default_engine,
                "tokumx_version": self.tokumx_version, "modules": list(self.modules)}


def version_tuple(text: str) -> tuple[int, int, int]:
    match = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not match:
        raise BinaryError(f"not a version: {text!r}")
    return int(match[1]), int(match[2]), int(match[3] or 0)


# -- parsing (unit-tested on recorded texts) -------------------------------------------------------
def parse_version(text: str) -> dict:
    """Fields of `mongod --version`: 2.x/3.x print `git version:` lines, 4.4+ a Build Info JSON.

    TokuMX 2.0.1 prints no `db version` line: its first line is `TokuMX mongod server
    v2.0.1-mongodb-2.4.10, using TokuKV rev ...` (Tokutek/mongo at tokumx-2.0.1,
    src/mongo/util/version.cpp mongodVersion(), printed by db.cpp for --version). MongoDB 2.4 and
    TokuMX print `git version:` through log(), which prefixes a ctime timestamp with milliseconds
    (util/log.cpp, time_support.cpp curTimeString: "Thu Aug 22 12:20:26.441 git version: ...")."""
    out: dict = {"version": None, "git_version": None, "modules": (), "tokumx_version": None, "percona": False}
    match = re.search(r"^db version v(\S+)", text, re.M)
    if match:
        out["version"] = match[1]
    match = re.search(r"^(?:\w{3} \w{3} +\d+ [\d:.]+ )?(?:\[\w+\] )?git version: (\S+)", text, re.M)
    if match:
        out["git_version"] = match[1]
    match = re.search(r"^modules: (.+)$", text, re.M)
    if match and match[1].strip() != "none":
        out["modules"] = tuple(match[1].split())
    build = re.search(r"^Build Info: (\{.*\})", text, re.M | re.S)
    if build:
        try:
            info = json.loads(build[1])
            out["version"] = out["version"] or info.get("version")
            out["git_version"] = info.get("gitVersion", out["git_version"])
            out["modules"] = tuple(info.get("modules") or ())
            out["percona"] = "psmdbVersion" in info
        except ValueError:
            pass  # a build whose JSON we cannot read still has its first line
    match = re.search(r"tokumx\S* (?:mongod )?server v(\d+\.\d+\.\d+)(?:-mongodb-(\d+\.\d+\.\d+))?", text, re.I)
    if match:
        out["tokumx_version"] = match[1]
        # The MongoDB release it is based on stands for its version (wire protocol, options).
        out["version"] = out["version"] or match[2]
    if re.search(r"percona", text, re.I):
        out["percona"] = True
    if out["version"] is None:
        raise BinaryError("no `db version` line (nor TokuMX's `mongod server v...`) in the output of --version: "
                          + (text.strip().splitlines() or ["(empty)"])[0])
    return out


_OPTION = re.compile(r"^\s{2}(?:-\w \[ )?--([A-Za-z_][\w.]*)")
_DEFAULT_ENGINE = re.compile(r"--storageEngine arg(?: \(=(\w+)\))?\s+(.*)$", re.I)


def parse_help(text: str) -> dict:
    """Option names listed by `mongod --help`, and the default storage engine if it says."""
    options = set()
    default = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = _OPTION.match(line)
        if match:
            options.add(match[1])
        engine = _DEFAULT_ENGINE.search(line)
        if engine:
            default = engine[1]
            if default is None:
                # "defaults to wiredTiger if no data files present", possibly wrapped
                tail = " ".join([engine[2]] + [l.strip() for l in lines[i + 1:i + 3]])
                found = re.search(r"defaults\s+to\s+(\w+)", tail)
                default = found[1] if found else None
    return {"options": frozenset(options), "default_engine": default}


def _is_percona_release(version: str) -> bool:
    # Percona Server for MongoDB appends its release: 3.0.15-2.0, 3.4.24-10, 4.4.29-28.
    # MongoDB's own suffixes are words: -rc0, -pre-, -alpha.
    return re.fullmatch(r"\d+\.\d+\.\d+-\d+(?:\.\d+)?", version) is not None


def engines_from(version: str, flavour: str, options: frozenset[str]) -> tuple[str, ...]:
    if flavour == "TokuMX":
        return ("tokumx",)
    major_minor = version_tuple(version)[:2]
    if major_minor < (3, 0):
        return ("mmapv1",)  # before 3.0 the storage layer had no name and no choice
    engines = []
    prefixes = (("wiredTiger", "wiredTiger"), ("rocksdb", "rocksdb"), ("tokuft", "tokuft"),
                ("PerconaFT", "tokuft"), ("inMemory", "inMemory"))
    for prefix, engine in prefixes:
        if any(o.startswith(prefix) for o in options) and engine not in engines:
            engines.append(engine)
    # mmapv1 shipped from 3.0 to 4.0 and lists its own storage options.
    if major_minor < (4, 2) and options & {"smallfiles", "nssize", "noprealloc"}:
        engines.append("mmapv1")
    if not options and major_minor >= (3, 2):
        engines.append("wiredTiger")  # --help unreadable: 3.2+ always has wiredTiger
    return tuple(engines)


def _fractal_tree_flavour(options: frozenset[str]) -> str | None:
    """Only Percona's builds register the fractal-tree engine's options: PerconaFT* in Percona
    Server for MongoDB 3.0 (percona-server-mongodb psmdb-3.0.8-1.2,
    src/mongo/db/storage/tokuft/tokuft_engine_options.cpp), tokuft* in the TokuMXse release
    candidates (tokumxse-1.0.0-rc.6). Their `--version` says nothing of Percona (3.0 prints
    "db version v" and the git hash, src/mongo/db/mongod_options.cpp), so the options tell."""
    if any(o.startswith("PerconaFT") for o in options):
        return "Percona Server for MongoDB"
    if any(o.startswith("tokuft") for o in options):
        return "Percona TokuMXse"
    return None


def identify_texts(path: str, version_text: str, help_text: str) -> BinaryInfo:
    fields = parse_version(version_text)
    helped = parse_help(help_text)
    if fields["tokumx_version"]:
        flavour = "TokuMX"
    elif _fractal_tree_flavour(helped["options"]):
        flavour = _fractal_tree_flavour(helped["options"])
    elif fields["percona"] or _is_percona_release(fields["version"]):
        flavour = "Percona Server for MongoDB"
    else:
        flavour = "MongoDB"
    engines = engines_from(fields["version"], flavour, helped["options"])
    default = helped["default_engine"] or (engines[0] if len(engines) == 1 else None)
    return BinaryInfo(path=path, version=fields["version"], git_version=fields["git_version"], flavour=flavour,
                      engines=engines, options=helped["options"], default_engine=default,
                      tokumx_version=fields["tokumx_version"], modules=fields["modules"])


# -- running the binary ------------------------------------------------------------------------
def _run(path: str, flag: str) -> str:
    try:
        done = subprocess.run([path, flag], capture_output=True, text=True, timeout=IDENTIFY_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BinaryError(f"{path} {flag}: {exc}") from exc
    return done.stdout + done.stderr


_CACHE: dict[tuple[str, float], BinaryInfo] = {}


def identify(path: str) -> BinaryInfo:
    """Run the binary's --version and --help once per file version and parse them."""
    real = os.path.realpath(path)
    key = (real, os.stat(real).st_mtime)
    if key not in _CACHE:
        version_text = _run(path, "--version")
        help_text = _run(path, "--help")
        _CACHE[key] = identify_texts(path, version_text, help_text)
    return _CACHE[key]


def executable(path: str | None) -> str | None:
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def find_mongod(configured: str | None = None, *, where: str = "") -> str | None:
    """The mongod for a system: params, then MONGOD, then PATH. A configured path that is not
    an executable file is an error, not a fall-through: the params named that binary."""
    if configured:
        found = executable(os.path.expanduser(configured))
        if found is None:
            raise BinaryError(f"{where}mongod.binary: {configured!r} is not an executable file")
        return found
    return executable(os.environ.get("MONGOD")) or executable(shutil.which("mongod"))


def find_mongos(mongod: str, configured: str | None = None, *, where: str = "") -> str:
    """mongos for a sharded system: params, MONGOS, the mongos beside this mongod, PATH."""
    if configured:
        found = executable(os.path.expanduser(configured))
        if found is None:
            raise BinaryError(f"{where}mongod.mongos: {configured!r} is not an executable file")
        return found
    for candidate in (os.environ.get("MONGOS"), str(Path(mongod).with_name("mongos")), shutil.which("mongos")):
        if executable(candidate):
            return candidate
    raise BinaryError(f"{where}topology sharded needs mongos: set mongod.mongos in the params or MONGOS, or put "
                      f"mongos beside {mongod} or on PATH")


def parse_mongos_version(text: str) -> str:
    """The version `mongos --version` prints: "mongos version v<version>" (mongod's
    src/mongo/util/version.cpp mongosVersion(), beside mongodVersion()'s "db version v")."""
    match = re.search(r"^mongos version v(\S+)", text, re.M)
    if not match:
        raise BinaryError("not a mongos: no `mongos version` line in its --version: "
                          + (text.strip().splitlines() or ["(empty)"])[0])
    return match[1]


def identify_mongos(path: str, mongod: BinaryInfo, *, where: str = "") -> str:
    """Check that `path` is a mongos of the mongod's release line (major.minor); its version."""
    version = parse_mongos_version(_run(path, "--version"))
    if version_tuple(version)[:2] != mongod.version_tuple[:2]:
        raise BinaryError(f"{where}mongod.mongos: {path} is mongos {version}, but the shards run {mongod.flavour} "
                          f"{mongod.version}; allowed: a mongos of the same release ({'.'.join(map(str, mongod.version_tuple[:2]))}.x)")
    return version
