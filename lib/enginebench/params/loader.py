"""Loading params/<exp>.yaml: merge a scale's overrides, validate, and explain any error.

Errors name the file, the scale, the line and the key's path as written (a system by its
label, a key of a scale block under `scales.<scale>`, a key of an extended file in that file),
the closest allowed name to a misspelt one, and what is allowed, e.g.
  params/linkbench_cached.yaml [scale smoke]: line 57: scales.smoke.phases.lodaers: unknown key;
  did you mean 'load'? allowed keys: ...
"""
from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ..paths import params_dir
from . import overrides
from .merge import MergeError, merge, read_with_extends
from .origins import at_scale, did_you_mean, locate
from .schema import SCALES, WORKLOAD_MODELS, Experiment


class ParamsError(ValueError):
    """A params file or its experiment name is wrong; the message says exactly how."""


def experiments() -> list[str]:
    return sorted(p.stem for p in params_dir().glob("*.yaml"))


def params_path(exp: str) -> Path:
    path = params_dir() / f"{exp}.yaml"
    if not path.is_file():
        known = experiments()
        raise ParamsError(f"unknown experiment {exp!r}: there is no {path};{did_you_mean(exp, known)} "
                          f"allowed: {', '.join(known) or '(none)'}")
    return path


def _allowed_keys(model: type[BaseModel], loc: tuple) -> list[str]:
    """The field names of the model that holds the key at `loc` (for unknown-key errors)."""
    current = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if isinstance(current, type) and issubclass(current, BaseModel) else None
        if field is None:
            return []
        annotation = field.annotation
        args = getattr(annotation, "__args__", None)
        candidates = [annotation] + list(args or [])
        nxt = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if nxt is None:
            return []
        current = nxt
    return sorted(current.model_fields) if isinstance(current, type) and issubclass(current, BaseModel) else []


def _problem(error: dict, data: dict, origins: dict, params_file: Path) -> str:
    """One validation error as `line N: <key as written>: what is wrong`, the line and path
    being those of the file and block that hold the key (the base file, or a scale block)."""
    loc = tuple(error["loc"])
    workload_model = None
    if len(loc) > 1 and loc[0] == "workload" and loc[1] in WORKLOAD_MODELS:
        # pydantic puts the workload's name (the union's tag) into the path; the file has none.
        workload_model = WORKLOAD_MODELS[loc[1]]
        loc = (loc[0],) + loc[2:]
    origin, path = locate(origins, _by_label(loc, data) + _inner_key(error))
    where = "" if origin is None else f"line {origin.line}: "
    if origin is not None and origin.file != params_file:
        where = f"{origin.file} line {origin.line} (extended by this file): "
    return where + _explain(error, loc, path, workload_model)


def _set_problem(error: dict, data: dict, sets: list | None) -> str | None:
    """An error in a key set by hand names that --set, not a line of the file."""
    if not sets:
        return None
    loc = tuple(error["loc"])
    if len(loc) > 1 and loc[0] == "workload" and loc[1] in WORKLOAD_MODELS:
        loc = (loc[0],) + loc[2:]
    loc = _by_label(loc, data) + _inner_key(error)
    dotted = ".".join(str(p) for p in loc)
    for key, _ in sets:
        found = overrides.SYSTEM_KEY.match(key)
        normal = f"systems.{found.group(1)}.{found.group(2)}" if found else key
        if dotted == normal or (found and found.group(1) == "*" and dotted.endswith("." + found.group(2))):
            return f"--set {key}: " + _explain(error, loc, key, None).split(": ", 1)[-1]
    return None


def _by_label(loc: tuple, data: dict) -> tuple:
    """`systems.1` as the label the file gives that system (origins are keyed by label)."""
    if len(loc) > 1 and loc[0] == "systems" and isinstance(loc[1], int):
        systems = data.get("systems") or []
        if loc[1] < len(systems) and isinstance(systems[loc[1]], dict) and "label" in systems[loc[1]]:
            return ("systems", systems[loc[1]]["label"]) + loc[2:]
    return loc


def _inner_key(error: dict) -> tuple:
    """A system's engine options are checked by its own validator, whose message starts with
    the option's key (options.<key>: ...): point at that key's line, not the system's."""
    found = re.match(r"(?:Value error, )?options\.([A-Za-z0-9_]+):", error["msg"])
    return ("options", found.group(1)) if found and len(error["loc"]) == 2 else ()


def _explain(error: dict, loc: tuple, path: str, workload_model) -> str:
    kind = error["type"]
    if _inner_key(error):
        # The message already names options.<key>; the path shown is the system's.
        path = path.rsplit(".options.", 1)[0]
    if kind == "extra_forbidden":
        allowed = (sorted(workload_model.model_fields) if workload_model and len(loc) == 2
                   else _allowed_keys(Experiment, loc))
        return (f"{path}: unknown key;{did_you_mean(loc[-1], allowed)} "
                f"allowed keys: {', '.join(allowed) or '(none)'}")
    if kind == "missing":
        return f"{path}: required key is missing"
    if kind in ("literal_error", "enum"):
        expected = error.get("ctx", {}).get("expected", "")
        choices = re.findall(r"'([^']*)'", expected)
        return (f"{path}: {error['input']!r} is not allowed;{did_you_mean(error['input'], choices)} "
                f"allowed values: {expected}")
    value = error.get("input")
    message = error["msg"].removeprefix("Value error, ")
    shown = "" if isinstance(value, (dict, list)) else f" (got {value!r})"
    return f"{path}: {message}{shown}"


def _only_in_scales(error: dict, top: dict, scales: dict) -> str:
    """A key missing at the top level that some scale block sets: the top level is the paper
    scale, and a scale block overrides it only for its own scale."""
    loc = tuple(error["loc"])
    if error["type"] != "missing" or len(loc) != 1 or loc[0] in top:
        return ""
    setting = sorted(name for name, block in scales.items() if isinstance(block, dict) and loc[0] in block)
    if not setting:
        return ""
    return (f" at the top level, which is the paper scale (only {', '.join(f'scales.{n}' for n in setting)} "
            f"{'sets' if len(setting) == 1 else 'set'} it, for {'that scale' if len(setting) == 1 else 'those scales'})")


def load_params(exp: str, scale: str = "default", sets: list[str] | None = None) -> dict:
    """The resolved, validated params of an experiment at a scale, as plain data; `sets`: keys
    set by hand for this run (overrides.py), over that scale."""
    if scale not in SCALES:
        raise ParamsError(f"unknown scale {scale!r};{did_you_mean(scale, SCALES)} allowed: {', '.join(SCALES)}")
    resolved = load_every_scale(exp)
    if not sets:
        return resolved[scale]
    try:
        parsed = overrides.parse(sets)
    except overrides.SetError as exc:
        raise ParamsError(str(exc)) from None
    out = _resolve(params_path(exp), scale, parsed)
    out["sets"] = [f"{k}={v}" for k, v in parsed]
    return out


def load_every_scale(exp: str) -> dict[str, dict]:
    """The experiment's resolved params at each scale."""
    path = params_path(exp)
    # Every scale must be valid, not only the one asked for: a smoke run must not pass on a file
    # whose paper scale cannot run.
    resolved = {s: _resolve(path, s) for s in SCALES}
    for name, params in resolved.items():
        if params["experiment"] != exp:
            raise ParamsError(f"{path} [scale {name}]: experiment: {params['experiment']!r} must equal the file "
                              f"name {exp!r}")
    return resolved


def _resolve(path: Path, scale: str, sets: list | None = None) -> dict:
    try:
        raw, origins = read_with_extends(path)
        scales = raw.pop("scales", {}) or {}
        unknown = sorted(set(scales) - set(SCALES))
        if unknown:
            where = origins[("scales", unknown[0])]
            raise ParamsError(f"{where.file} line {where.line}: scales.{unknown[0]}: unknown scale;"
                              f"{did_you_mean(unknown[0], SCALES)} allowed: {', '.join(SCALES)}")
        merged = merge(raw, scales.get(scale) or {}, f"scales.{scale}.")
        if sets:
            labels = [s.get("label") for s in merged.get("systems") or [] if isinstance(s, dict)]
            merged = merge(merged, overrides.block(sets, labels), "--set ")
    except overrides.SetError as exc:
        raise ParamsError(f"{path} [scale {scale}]: {exc}") from None
    except MergeError as exc:
        raise ParamsError(str(exc) if str(exc).startswith(str(path)) else f"{path} [scale {scale}]: {exc}") from None
    try:
        model = Experiment(**merged)
    except ValidationError as exc:
        problems = [_set_problem(e, merged, sets) or
                    _problem(e, merged, at_scale(origins, scale), path) + _only_in_scales(e, raw, scales)
                    for e in exc.errors()]
        joined = f" {problems[0]}" if len(problems) == 1 else "".join(f"\n  {p}" for p in problems)
        raise ParamsError(f"{path} [scale {scale}]:{joined}") from None
    out = model.model_dump()
    out["notebook"] = out["workload"]["name"]  # a family's notebook renders its experiments
    out["scale"] = scale
    out["params_file"] = str(path)
    return out
