"""The native runner (lib/native, `enginebench-runner`): the workloads' one implementation, run
against the embedded engines it links or as the client of a server.

The driver writes a system's spec (system, data folder, workload params, the phase plan and, for a
server, how to reach it) and starts `enginebench-runner run SPEC`; the runner reports events, one
JSON line each, on stdout. `describe` tells, before anything runs, what a workload's load leaves.
"""
from __future__ import annotations

import functools
import json
import subprocess

from .paths import native_runner


def command(spec_path) -> list[str]:
    return [str(native_runner()), "run", str(spec_path)]


@functools.lru_cache(maxsize=32)
def _describe(name: str, workload_json: str, load_threads: int) -> str:
    done = subprocess.run([str(native_runner()), "describe", "--workload", workload_json,
                           "--load-threads", str(load_threads)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise ValueError(f"workload {name}: the runner cannot describe it: {done.stderr.strip()}")
    return done.stdout


def describe(name: str, workload: dict, load_threads: int) -> dict:
    """{"expected": documents per collection after the load, "bytes_per_document": mean BSON size
    per sampled collection, "sample_docs": n} (lib/native/src/sample.rs)."""
    text = json.dumps({"name": name, **{k: v for k, v in workload.items() if k != "name"}}, sort_keys=True)
    return json.loads(_describe(name, text, load_threads))


@functools.lru_cache(maxsize=1)
def builds() -> dict:
    """What the runner was built with: {"wiredtiger": [releases], "rocksdb": [...], "lmdb": [...],
    "workloads": [...], "runner": version} (`enginebench-runner engines`)."""
    done = subprocess.run([str(native_runner()), "engines"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"the native runner cannot list its engines: {done.stderr.strip()}")
    return json.loads(done.stdout)


def build_name(engine: str, release: str | None) -> str | None:
    """The build (tools/build_engines.sh EB_BUILDS) an engine release needs beyond what `make setup`
    builds, or None: WiredTiger 2.9.2, the posts' WiredTiger trees and PerconaFT's releases are built
    the first time an experiment's systems name them (`make experiment`, `make native NEEDS=`)."""
    from .engines import FRACTAL_RELEASES, WT_TAG_RELEASES
    if engine == "wiredtiger" and release == "2.9.2":
        return "wiredtiger-2.9.2"
    if engine == "wiredtiger" and release in WT_TAG_RELEASES:
        return f"wiredtiger-tag-{release}"
    if engine == "fractal" and release in FRACTAL_RELEASES:
        return f"perconaft-{release}"
    return None


def builds_needed(params_list) -> list[str]:
    """The builds beyond setup's that these resolved params' systems need, sorted, each once."""
    from .engines import full_options
    return sorted({name for params in params_list for system in params["systems"]
                   if (name := build_name(system["engine"],
                                          full_options(system["engine"], system.get("options") or {}).get("version")))})


def _how_to_build(params: dict, engine: str, release: str) -> str:
    if (engine, release) == ("wiredtiger", "2.9.2"):  # named by no experiment's params
        return "`make wiredtiger-2.9.2` builds it and links it into the runner (about a minute)"
    if build_name(engine, release):
        return (f"`make native NEEDS={params['experiment']}` builds the releases its systems name and links them "
                "into the runner (`make experiment` does it first)")
    if (engine, release) == ("wiredtiger", "3.2.1"):
        return "install Debian's libwiredtiger-dev, then `make native`"
    return "rebuild the runner with it (make setup)"


def check_releases(params: dict) -> None:
    """Raises, before anything starts, when a system asks for an engine release the runner was not
    built with (naming the params file, the system, the key and the releases built)."""
    from .engines import ENGINES, full_options
    built = builds()
    for system in params["systems"]:
        release = full_options(system["engine"], system.get("options") or {}).get("version")
        available = built.get(system["engine"], [])
        if release is None or release in available:
            continue
        how = _how_to_build(params, system["engine"], release)
        raise ValueError(f"{params['params_file']}: systems[{system['label']}].options.version: "
                         f"{ENGINES[system['engine']].display} {release} is not built into the native runner (built: "
                         f"{', '.join(available)}); {how}")


THP_FILE = "/sys/kernel/mm/transparent_hugepage/enabled"


def check_host(params: dict, thp_file: str = THP_FILE) -> None:
    """Raises, before anything starts, when the host cannot run a system's engine: PerconaFT (the
    fractal tree) refuses to open its environment while transparent huge pages are `always`
    (portability/huge_page_detection.cc; TOKUDB_HUGE_PAGES_ENABLED), unless TOKU_HUGE_PAGES_OK is
    set, its own override."""
    import os
    fractal = [s["label"] for s in params["systems"] if s["engine"] == "fractal"]
    if not fractal or "TOKU_HUGE_PAGES_OK" in os.environ:
        return
    try:
        with open(thp_file) as f:
            setting = f.readline().strip()
    except OSError:
        return  # no such file: the kernel has no transparent huge pages
    if "[always]" in setting:
        raise ValueError(
            f"{params['params_file']}: systems[{fractal[0]}].engine: fractal: PerconaFT (the fractal tree) refuses to "
            f"start while transparent huge pages are always on ({thp_file}: {setting}). As root, "
            f"`echo madvise > {thp_file}` (or never), then run again; or set TOKU_HUGE_PAGES_OK=1 to start it "
            "anyway, PerconaFT's own override (its memory may then exceed what it was given)")
