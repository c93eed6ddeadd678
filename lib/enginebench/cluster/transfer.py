"""A run folder moved from a host to the collection's results folder: packed as a tar archive and
unpacked on the submitting machine, or copied by the host into a shared folder. Either way it
lands as data/results/<exp>/<run id>/, the layout of a local run, and never over an existing
folder."""
from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path


def pack(run: Path) -> bytes:
    """The run folder as a gzip'd tar, its members under <exp>/<run id>/."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(run, arcname=f"{run.parent.name}/{run.name}")
    return buffer.getvalue()


def _same_run(a: Path, b: Path) -> bool:
    """Whether two folders hold the same run (a host that is also the submitting machine, or a
    unit merged before): same id and start."""
    try:
        ma, mb = (json.loads((p / "manifest.json").read_text()) for p in (a, b))
    except (OSError, ValueError):
        return False
    return (ma.get("run_id"), ma.get("started_at")) == (mb.get("run_id"), mb.get("started_at"))


def unpack(data: bytes, results: Path) -> tuple[Path, bool]:
    """Unpacks a packed run under results; (its folder, whether it is new). The archive is
    unpacked beside its place and renamed into it, so a half-unpacked run is never seen; a folder
    already there is kept as it is (the same run merged before), and a different run under the
    same id is refused."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        names = {Path(m.name).parts[:2] for m in archive.getmembers()}
        if len(names) != 1 or len(next(iter(names))) != 2:
            raise ValueError(f"a packed run holds one <experiment>/<run id> folder; this one holds {sorted(names)}")
        exp, run_id = next(iter(names))
        final = results / exp / run_id
        incoming = results / exp / f".incoming-{run_id}"
        shutil.rmtree(incoming, ignore_errors=True)
        incoming.mkdir(parents=True)
        try:
            archive.extractall(incoming, filter="data")  # refuses links and paths out of the folder
            if final.exists():
                if _same_run(final, incoming / exp / run_id):
                    return final, False
                raise ValueError(f"{final} already holds another run of that id; the host's run is left on the host")
            (incoming / exp / run_id).rename(final)
        finally:
            shutil.rmtree(incoming, ignore_errors=True)
    return final, True


def copy_to_shared(run: Path, shared: Path) -> Path:
    """The run folder copied to <shared>/<exp>/<run id> (under a temporary name, then renamed);
    an existing folder of that name is never written over."""
    final = shared / run.parent.name / run.name
    if final.exists():
        if _same_run(final, run):
            return final
        raise ValueError(f"{final} already holds another run of that id")
    # One level deeper than a run folder, so no reader of the shared folder takes it for a run.
    incoming = final.parent / f".incoming-{run.name}"
    shutil.rmtree(incoming, ignore_errors=True)
    try:
        shutil.copytree(run, incoming / run.name)
        (incoming / run.name).rename(final)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
    return final
