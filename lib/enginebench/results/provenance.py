"""Facts that make a result reproducible by a stranger: host, software, code version."""
from __future__ import annotations

import os
import platform
import socket
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import psutil

from ..paths import repo_root
from .owner import HOST_NAME_ENV, hostname
from .reclaim import proactive_pageout

PACKAGES = ("enginebench", "pymongo", "polars", "altair", "vl-convert-python", "papermill", "hdrhistogram",
            "psutil", "numpy", "pydantic")


def git_state() -> dict:
    def git(*args):
        return subprocess.run(["git", *args], cwd=repo_root(), capture_output=True, text=True, timeout=10)
    try:
        sha = git("rev-parse", "HEAD")
        status = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"sha": None, "dirty": None, "error": str(exc)}
    if sha.returncode != 0:
        return {"sha": None, "dirty": None, "error": sha.stderr.strip()}
    return {"sha": sha.stdout.strip(), "dirty": bool(status.stdout.strip())}


def package_versions() -> dict:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    try:  # the native runner and the engine releases built into it
        from ..native import builds
        out["native"] = builds()
    except (OSError, ValueError, RuntimeError, subprocess.TimeoutExpired) as exc:  # reported, not fatal: server targets need none
        out["native"] = f"unavailable: {exc}"
    return out


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _filesystem(path: Path) -> dict:
    best = None
    for part in psutil.disk_partitions(all=True):
        if str(path).startswith(part.mountpoint) and (best is None or len(part.mountpoint) > len(best.mountpoint)):
            best = part
    if best is None:
        return {}
    return {"mountpoint": best.mountpoint, "device": best.device, "fstype": best.fstype, "options": best.opts}


def host_facts(data_dir: Path) -> dict:
    vm = psutil.virtual_memory()
    named = os.environ.get(HOST_NAME_ENV)
    return {
        # A host named by ENGINEBENCH_HOST_NAME keeps its machine's own name beside it.
        "hostname": hostname() if named else socket.gethostname(),
        **({"machine": socket.gethostname()} if named else {}),
        "cpu_model": _cpu_model(),
        "logical_cpus": psutil.cpu_count(logical=True),
        "physical_cpus": psutil.cpu_count(logical=False),
        "memory_bytes": vm.total,
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "data_filesystem": _filesystem(data_dir),
        "proactive_reclaim": proactive_pageout(),
        "cgroup": Path("/proc/self/cgroup").read_text().strip().splitlines() if os.path.exists("/proc/self/cgroup") else None,
    }
