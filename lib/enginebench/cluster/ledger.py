"""Each unit's outcome in one collection on a cluster, kept as it changes in
data/results/cluster/<stamp>.json: unit, host, status, run id, error. It says which unit failed
and how to re-run it alone, and what an interrupted collection had done."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from ..paths import results_dir


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Ledger:
    def __init__(self, settings: dict):
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        folder = results_dir() / "cluster"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{stamp}.json"
        n = 1
        while self.path.exists():
            n += 1
            self.path = folder / f"{stamp}-{n}.json"
        self.data = {"started_at": _now(), "finished_at": None, **settings, "units": {}}
        self.write()

    def note(self, unit_id: str, **fields) -> dict:
        """Records what changed for a unit (status, host, run id, error) and writes the ledger."""
        entry = self.data["units"].setdefault(unit_id, {"unit": unit_id})
        entry.update(fields, updated_at=_now())
        self.write()
        return entry

    def finish(self) -> None:
        self.data["finished_at"] = _now()
        self.write()

    def write(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=str))
        tmp.replace(self.path)

    @staticmethod
    def read(path: Path) -> dict:
        return json.loads(Path(path).read_text())
