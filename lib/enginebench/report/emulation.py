"""Which latency percentiles the emulated device sets, not the engine.

A storage profile is a block throttle (resources/slice.py): an IO either goes at once or waits
for the next throttle slice, so a capped system's slow operations take about one slice, or two,
whatever the engine. A percentile within FLAG_TOLERANCE of one, two or three slices is therefore
marked as set by the emulation; one far from those (below the first, between two, or beyond
MAX_SLICES, where the tolerance bands would cover much of the axis by chance) is the engine's. Runs recorded before the slice was written in the manifest were capped with the
kernel default slice, which is what is assumed for them.
"""
from __future__ import annotations

from ..resources.slice import KERNEL_DEFAULT_MS

# A wait for the next slice ends anywhere from a jiffy to the whole slice after the IO was
# queued, and the engine adds its own time on top: +-15% of the slice covers both (the measured
# p99 of 89-103 ms and p99.9 of 188-201 ms under a 100 ms slice fall inside it).
FLAG_TOLERANCE = 0.15
MAX_SLICES = 3
PERCENTILE_COLUMNS = ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "p99.9_ms")


def emulation_slice_ms(system: dict) -> float | None:
    """The throttle slice a system ran under, from its recorded resources; None when uncapped."""
    resources = system.get("resources") or {}
    if not resources.get("io_method") or not resources.get("io_caps"):
        return None
    return float(resources.get("throttle_slice_ms") or KERNEL_DEFAULT_MS)


def set_by_emulation(value_ms: float | None, slice_ms: float | None) -> bool:
    """Whether a latency sits at a whole number of throttle slices (and so is the throttle's)."""
    if value_ms is None or not slice_ms:
        return False
    slices = round(value_ms / slice_ms)
    return 1 <= slices <= MAX_SLICES and abs(value_ms - slices * slice_ms) <= FLAG_TOLERANCE * slice_ms


def flagged_percentiles(entry: dict, system: dict) -> str:
    """The entry's percentile columns set by the emulation, as a cell for a latency table."""
    slice_ms = emulation_slice_ms(system)
    flagged = [column.removesuffix("_ms") for column in PERCENTILE_COLUMNS
               if column in entry and set_by_emulation(entry[column], slice_ms)]
    return ", ".join(flagged)


def flag_note(systems: list[dict]) -> str | None:
    """One sentence for under a latency table, when any system ran on an emulated device."""
    slices = sorted({s for s in (emulation_slice_ms(system) for system in systems) if s})
    if not slices:
        return None
    shown = " / ".join(f"{s:.0f} ms" for s in slices)
    return (f"The emulated device is a block throttle that works in {shown} slices. In the response-time "
            f"tables, 'set by emulation' lists each percentile within {FLAG_TOLERANCE:.0%} of one, two or "
            "three slices: the throttle's period sets those, not the engine.")
