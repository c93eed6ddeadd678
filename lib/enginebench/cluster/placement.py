"""Which waiting unit a free host takes: repeats of an experiment go to hosts that have not run
it yet, so the spread between hosts is measured; a host waits rather than take a repeat another
host could give a new machine, and takes it when every live host has run that experiment."""
from __future__ import annotations

from typing import NamedTuple


class Unit(NamedTuple):
    experiment: str
    index: int   # 1..REPEAT

    @property
    def id(self) -> str:
        return f"{self.experiment}-{self.index}"


def next_unit(waiting: list[Unit], host: str, ran: dict[str, set[str]], live_hosts: set[str]) -> Unit | None:
    """The unit host should run next, or None to stay idle for now. ran: per experiment, the
    hosts that have run it or are running it (in this collection, and its runs merged before)."""
    for unit in waiting:
        if host not in ran.get(unit.experiment, set()):
            return unit
    for unit in waiting:
        if live_hosts <= ran.get(unit.experiment, set()):
            return unit
    return None
