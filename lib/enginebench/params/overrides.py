"""Params set by hand for one run: `--set KEY=VALUE` (make: SET="KEY=VALUE ..."), over the scale's
resolved params, validated with them; the run's manifest and first lines say what was set.

KEY is a dotted path into the params file's structure: `workload.maxid1=2001`, `settings=today`,
`phases.measure.duration_s=60`; a system's key as `systems[<label>].options.version=3.2.1`, every
system's as `systems[*].options.insert_group=64`. VALUE is read as YAML (`3.2.1` is a string,
`64` a number, `null` nothing, `[1, 2]` a list). `make explain` runs its variants this way.
"""
from __future__ import annotations

import re

import yaml

SYSTEM_KEY = re.compile(r"^systems\[([^\]]+)\]\.(.+)$")


class SetError(ValueError):
    """A --set is malformed; the message names it and says how it should read."""


def parse(sets: list[str]) -> list[tuple[str, object]]:
    out = []
    for item in sets or []:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise SetError(f"--set {item!r}: expected KEY=VALUE, e.g. workload.maxid1=2001 or "
                           "systems[wt.op1].options.version=3.2.1")
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError as exc:
            raise SetError(f"--set {item!r}: the value is not valid YAML: {exc}") from None
        out.append((key.strip(), value))
    return out


def _nest(path: list[str], value) -> dict:
    out: dict = {}
    node = out
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value
    return out


def block(sets: list[tuple[str, object]], labels: list[str]) -> dict:
    """The sets as a block in a scale block's shape, to merge over the params: every system of
    `labels` is listed (so none is dropped), each with what was set for it."""
    from .merge import merge
    top: dict = {}
    per_system: dict[str, dict] = {label: {} for label in labels}
    for key, value in sets:
        found = SYSTEM_KEY.match(key)
        if found is None:
            if key.startswith("systems"):
                raise SetError(f"--set {key}: a system's key is systems[<label>].<key> or systems[*].<key>; "
                               f"labels: {', '.join(labels)}")
            top = merge(top, _nest(key.split("."), value))
            continue
        label, rest = found.groups()
        targets = labels if label == "*" else [label]
        if label != "*" and label not in labels:
            raise SetError(f"--set {key}: no system labelled {label!r}; labels: {', '.join(labels)}")
        for target in targets:
            per_system[target] = merge(per_system[target], _nest(rest.split("."), value))
    if any(per_system.values()):
        top["systems"] = [{"label": label, **changes} for label, changes in per_system.items()]
    return top


def describe(sets: list[tuple[str, object]]) -> str:
    return "Set by hand for this run (--set): " + ", ".join(f"{k}={v!r}" for k, v in sets) + "."
