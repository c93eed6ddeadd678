"""The second stand-in wire-protocol server: FerretDB v1.24.2 (Go, announcing wire version 21) on
its SQLite backend, started on 127.0.0.1 on a free port and stopped afterwards.

`make ferretdb` builds .build/ferretdb/ferretdb from the Go module proxy (tools/build_ferretdb.sh;
`make test` does it first). The server is ready once it answers isMaster; it stops on SIGTERM
(SIGKILL after STOP_TIMEOUT_S), and the parent-death signal stops it if the test run is killed.
Its SQLite files and state folder live in one temporary folder, deleted when it stops.
"""
from __future__ import annotations

import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from .children import die_with_parent, server_files
from .mongod import wire
from .mongod.topology import HOST, free_ports
from .paths import repo_root

REPO = repo_root()
BINARY = REPO / ".build" / "ferretdb" / "ferretdb"
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30


def missing() -> str | None:
    """Why FerretDB cannot start here, or None."""
    if not BINARY.is_file():
        return f"no FerretDB binary at {BINARY}: run `make ferretdb` (make test builds it; it needs Go)"
    return None


def argv(port: int, folder: Path) -> list[str]:
    # SQLite needs no other server; no telemetry and no debug HTTP listener (its default port is fixed).
    return [str(BINARY), "--handler=sqlite", f"--sqlite-url=file:{folder / 'data'}/",
            f"--listen-addr={HOST}:{port}", f"--state-dir={folder / 'state'}",
            "--telemetry=disable", "--debug-addr=-", "--log-level=warn"]


@contextmanager
def ferretdb_server(log_dir: Path):
    """Yields (uri, process, state folder). The server's log goes to log_dir/ferretdb.log."""
    with server_files(missing(), "enginebench-ferretdb-", log_dir / "ferretdb.log") as (folder, log):
        (folder / "data").mkdir()
        (folder / "state").mkdir()
        port = free_ports(1)[0]
        proc = None
        try:
            proc = subprocess.Popen(argv(port, folder), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
            _wait_ready(proc, port, Path(log.name))
            yield f"mongodb://{HOST}:{port}/", proc, folder
        finally:
            if proc is not None:
                _stop(proc)


def _wait_ready(proc: subprocess.Popen, port: int, log: Path) -> None:
    """Until the server answers isMaster on port, at most START_TIMEOUT_S."""
    deadline = time.time() + START_TIMEOUT_S
    last = None
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"FerretDB exited with code {proc.returncode} before it listened; see {log}")
        try:
            if wire.command(HOST, port, {"isMaster": 1}, timeout_s=2.0).get("ok"):
                return
        except (OSError, wire.CommandError) as exc:
            last = exc
        time.sleep(0.1)
    raise RuntimeError(f"FerretDB did not answer isMaster on {HOST}:{port} within {START_TIMEOUT_S} s "
                       f"(last error: {last}); see {log}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
