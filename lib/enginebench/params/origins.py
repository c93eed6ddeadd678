"""Where each key of a params file was written: the file, the line and the key's path as written
there, so an error points at the line to fix even when the key came from a scale block or from
the file an experiment `extends:`.

Origins are keyed by the key's path in the resolved params, with a system named by its label
(scale blocks and extending files merge systems by label), so they combine exactly as the
values do: a later level's origin replaces the one below.
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import NamedTuple

import yaml

Key = tuple  # ("systems", "wt.op1", "options", "cache_size_mb")


class Origin(NamedTuple):
    file: Path
    line: int   # 1-based, as editors count
    path: str   # as written in its file, e.g. scales.smoke.systems[wt.op1].options


def read_yaml(path: Path) -> tuple[object, dict[Key, Origin]]:
    """The file's data and where each of its keys was written."""
    loader = yaml.SafeLoader(path.read_text())
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    origins: dict[Key, Origin] = {}
    if node is not None:
        _walk(node, path, (), "", origins)
    return data, origins


def _walk(node, file: Path, key: Key, written: str, out: dict) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            name = key_node.value
            here = f"{written}.{name}" if written else name
            out[key + (name,)] = Origin(file, key_node.start_mark.line + 1, here)
            _walk(value_node, file, key + (name,), here, out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            label = _label(item) if key[-1:] == ("systems",) else None
            part, here = (index, f"{written}.{index}") if label is None else (label, f"{written}[{label}]")
            out[key + (part,)] = Origin(file, item.start_mark.line + 1, here)
            _walk(item, file, key + (part,), here, out)


def _label(node) -> str | None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if key_node.value == "label" and isinstance(value_node, yaml.ScalarNode):
                return value_node.value
    return None


def at_scale(origins: dict[Key, Origin], scale: str) -> dict[Key, Origin]:
    """The origins of the params at one scale: the top level, overridden by that scale's block."""
    top = {k: v for k, v in origins.items() if k[:1] != ("scales",)}
    block = {k[2:]: v for k, v in origins.items() if k[:2] == ("scales", scale) and len(k) > 2}
    return {**top, **block}


def locate(origins: dict[Key, Origin], key: Key) -> tuple[Origin | None, str]:
    """Where the key (or, for a key that is missing, the nearest mapping that holds it) was
    written, and the key's full path as written there."""
    for cut in range(len(key), 0, -1):
        origin = origins.get(key[:cut])
        if origin is not None:
            return origin, ".".join((origin.path,) + tuple(map(str, key[cut:])))
    return None, ".".join(map(str, key)) or "(top level)"


def did_you_mean(word: str, choices) -> str:
    """' did you mean 'x'?' for the closest allowed name to a misspelt one, or ''."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" did you mean {close[0]!r}?" if close else ""
