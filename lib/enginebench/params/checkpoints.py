"""Checkpoints inside the measured time, in the post's proportion.

A post measured for hours with its engines' checkpoints every few minutes: the LinkBench post's
1-hour intervals each held six of WiredTiger's checkpoints (storage.syncPeriodSecs 600). A scale
that measures for minutes with the same interval would hold none, and its verdicts would compare
engines with the cost of checkpointing left out. So a measured phase that says which span of the
post's it stands for (`phases.measure.stands_for_s`) shrinks every system's checkpoint interval
by the same factor as the time:

    checkpoint_s here = checkpoint_s × duration_s / stands_for_s   (rounded, at least 1 s)

The rule applies to whatever interval a system has, by its settings or by hand (`make explain`'s
60 s / 600 s factor compares the two scaled alike), and to the whole run: an engine has one
interval from its open, so the load is checkpointed as often, in the same proportion to its own
shorter time. The system records the interval it was given (`checkpoint_scaled_from_s`).
"""
from __future__ import annotations

# An engine's checkpoint interval is whole seconds (WiredTiger's checkpoint=(wait=N), mongod's
# --syncdelay); 0 (PerconaFT: none) stays 0.
FLOOR_S = 1


def scaled_interval(checkpoint_s: int, duration_s: float, stands_for_s: float) -> int:
    """The checkpoint interval that keeps `checkpoint_s`'s count per `stands_for_s` seconds in a
    phase of `duration_s`."""
    if checkpoint_s <= 0:
        return checkpoint_s
    return max(FLOOR_S, round(checkpoint_s * duration_s / stands_for_s))


def scale_systems(measure: dict | None, systems: list) -> None:
    """Every system with a checkpoint interval gets the scaled one (System models, in place)."""
    if not measure or measure.get("stands_for_s") is None:
        for system in systems:  # a resolved dump validated again without the rule: as given
            if system.checkpoint_scaled_from_s is not None:
                system.options["checkpoint_s"], system.checkpoint_scaled_from_s = system.checkpoint_scaled_from_s, None
        return
    for system in systems:
        # Params validated again from a resolved dump (which records the interval given) scale
        # from that interval, not from the scaled one.
        given = system.checkpoint_scaled_from_s
        if given is None:
            given = system.options.get("checkpoint_s")
        if given is None:
            continue
        system.checkpoint_scaled_from_s = given
        system.options["checkpoint_s"] = scaled_interval(given, measure["duration_s"], measure["stands_for_s"])


def describe(systems: list[dict], measure: dict) -> str:
    """For a report: the interval each system ran with and why (systems given alike, together)."""
    by_interval: dict[tuple, list[str]] = {}
    for system in systems:
        given = system.get("checkpoint_scaled_from_s")
        if given is not None:
            by_interval.setdefault((given, system["options"].get("checkpoint_s")), []).append(system["label"])
    duration, span = measure.get("duration_s"), measure.get("stands_for_s")
    said = []
    for (given, now), labels in by_interval.items():
        if not given or not now:
            continue
        said.append(f"{', '.join(labels)} checkpointed every {now:g} s, {given:g} s × {duration:g} / {span:g}"
                    f"{' (the floor)' if now == FLOOR_S else ''}: a {duration:g}-s measured phase standing for "
                    f"{span:g} s of the post's, which held {span / given:g} checkpoints, holds up to {duration / now:g}")
    return "; ".join(said)
