"""The stand-in wire-protocol server (tools/standin: mongo-java-server on its H2 MVStore backend),
started on 127.0.0.1 on a free port for the TARGET=uri tests and `make bench`'s client figures,
and stopped afterwards.

`make standin` builds the jar (`make test` does it first). The server prints "port N" once it
listens; it stops when its stdin closes, so even a killed test run leaves no server behind (the
parent-death signal covers the rest). Its data folder is deleted when it stops.
"""
from __future__ import annotations

import select
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from .children import die_with_parent, server_files
from .paths import repo_root

REPO = repo_root()
JAR = REPO / "tools" / "standin" / "target" / "enginebench-standin.jar"
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30


def java() -> str | None:
    return shutil.which("java")


def missing() -> str | None:
    """Why the stand-in cannot start here, or None."""
    if not JAR.is_file():
        return f"no stand-in server jar at {JAR}: run `make standin` (make test builds it)"
    if java() is None:
        return "no java on PATH: `make standin` installs Java 17 (Debian default-jdk-headless)"
    return None


@contextmanager
def standin_server(log_dir: Path):
    """Yields (uri, process, data folder). The server's log goes to log_dir/standin.log."""
    with server_files(missing(), "enginebench-standin-", log_dir / "standin.log") as (dbpath, log):
        proc = subprocess.Popen([java(), "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-jar", str(JAR),
                                 "--dbpath", str(dbpath), "--port", "0"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                                preexec_fn=die_with_parent)
        try:
            port = _read_port(proc, Path(log.name))
            yield f"mongodb://127.0.0.1:{port}/", proc, dbpath
        finally:
            proc.stdin.close()   # the server's signal to stop
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()


def _read_port(proc: subprocess.Popen, log: Path) -> int:
    """The port from the server's "port N" line, waiting at most START_TIMEOUT_S."""
    deadline = time.time() + START_TIMEOUT_S
    while time.time() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if line.startswith("port "):
                return int(line.split()[1])
        if proc.poll() is not None:
            raise RuntimeError(f"the stand-in server exited with code {proc.returncode}; see {log}")
    raise RuntimeError(f"the stand-in server did not report its port within {START_TIMEOUT_S} s; see {log}")
