"""Which process a run or a runner is, and whether it is still there.

A driver killed outright (SIGKILL, a crash, a reboot) never marks its run: its manifest says
`running` for ever and its scratch folder stays. Runs record the process that drives them (pid,
start time, host and boot id); whoever finds such a run later asks whether that process still
exists. A pid alone is not enough: pids are reused, and a reboot starts them all over.
"""
from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import psutil

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
# A process's start time as psutil reads it is exact within one boot; leave room for rounding.
START_TOLERANCE_S = 1.0


def boot_id() -> str | None:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return None


# The name a host gives its runs (run ids, provenance) when its machine name would not tell it
# apart: cloud VMs cloned from one image, or two cluster workers on one machine (docs/cluster.md).
HOST_NAME_ENV = "ENGINEBENCH_HOST_NAME"
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,62}")


def hostname() -> str:
    given = os.environ.get(HOST_NAME_ENV)
    if given:
        if not HOST_NAME.fullmatch(given):  # it names folders and cgroups
            raise ValueError(f"{HOST_NAME_ENV}={given!r}: letters, digits and '-' only (up to 63), "
                             "starting with a letter or digit")
        return given
    return socket.gethostname().split(".")[0] or "host"


def identity(pid: int | None = None) -> dict:
    """What identifies a live process later: pid, start time, host, boot id."""
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "started": psutil.Process(pid).create_time(), "host": hostname(), "boot_id": boot_id()}


def alive(who: dict | None) -> bool | None:
    """True while the process is there; False when it is gone (exited, a zombie, its pid reused,
    or the machine rebooted since); None when this machine cannot tell (no record, or another
    host's process: a results folder may be shared)."""
    if not who or not who.get("pid"):
        return None
    if who.get("host") and who["host"] != hostname():
        return None
    if who.get("boot_id") and boot_id() and who["boot_id"] != boot_id():
        return False
    try:
        process = psutil.Process(who["pid"])
        if who.get("started") is not None and abs(process.create_time() - who["started"]) > START_TOLERANCE_S:
            return False  # the pid now belongs to another process
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
