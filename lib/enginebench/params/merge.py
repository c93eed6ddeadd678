"""How params files combine: a scale block over the file's top level, and a file over the one
it `extends:`.

Mappings merge key by key. `systems:` merges by label: an entry names a system of the level
below and gives only what differs (`- {label: wt.op1, options: {cache_size_mb: 640}}`); a list
of systems also says which run at that level, in its order (an entry with a new label is a new
system). Any other list replaces the one below.
"""
from __future__ import annotations

import copy
from pathlib import Path

import yaml

from .origins import did_you_mean, read_yaml


class MergeError(ValueError):
    """A params file cannot be combined with what it overrides; the message says where."""


def merge(base: dict, override: dict, where: str = "") -> dict:
    out = copy.deepcopy(base)
    for key, value in override.items():
        if key == "systems" and isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = merge_systems(out[key], value, f"{where}systems")
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value, f"{where}{key}.")
        else:
            out[key] = copy.deepcopy(value)
    return out


def merge_systems(base: list, override: list, where: str) -> list:
    by_label = {s.get("label"): s for s in base if isinstance(s, dict)}
    merged = []
    for i, entry in enumerate(override):
        if not isinstance(entry, dict) or "label" not in entry:
            raise MergeError(f"{where}.{i}: each system needs a label (it names the system it overrides, "
                             f"or a new one); labels below: {', '.join(map(str, by_label)) or '(none)'}")
        below = by_label.get(entry["label"])
        merged.append(merge(below, entry, f"{where}.{entry['label']}.") if below else copy.deepcopy(entry))
    return merged


def read_with_extends(path: Path, seen: tuple[Path, ...] = ()) -> tuple[dict, dict]:
    """The file's mapping, over the file it `extends:` (a name in the same folder), recursively;
    and where each key was written (origins.py), the extending file's origins over its base's."""
    if path in seen:
        raise MergeError(f"{path}: extends: a cycle ({' -> '.join(p.name for p in seen + (path,))})")
    try:
        raw, origins = read_yaml(path)
    except yaml.YAMLError as exc:
        raise MergeError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise MergeError(f"{path}: must be a mapping of keys to values")
    parent = raw.pop("extends", None)
    origins.pop(("extends",), None)
    if parent is None:
        return raw, origins
    base_path = path.parent / f"{parent}.yaml"
    if not base_path.is_file():
        known = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise MergeError(f"{path}: extends: no params file {parent!r} in {path.parent};"
                         f"{did_you_mean(parent, known)} allowed: {', '.join(known)}")
    base, base_origins = read_with_extends(base_path, seen + (path,))
    return merge(base, raw), {**base_origins, **origins}
