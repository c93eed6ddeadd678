"""What the processes this project starts share: they die with their parent (a killed test run or
notebook kernel leaves no runner or server behind), and a server started for a test or a bench
keeps its files in one temporary folder, removed when it stops, with its log in a named file."""
from __future__ import annotations

import ctypes
import shutil
import signal
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


def die_with_parent() -> None:
    """A preexec_fn: the child gets SIGTERM when its parent dies (PR_SET_PDEATHSIG)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)


@contextmanager
def server_files(missing: str | None, prefix: str, log_path: Path) -> Iterator[tuple[Path, IO[str]]]:
    """(a new temporary folder, the open log) for a server about to start; `missing` (why it
    cannot start here) refuses first. The log is closed and the folder removed on the way out."""
    if missing:
        raise RuntimeError(missing)
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "w")
    try:
        yield folder, log
    finally:
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
