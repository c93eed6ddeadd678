"""Loading params/<exp>.yaml: merge a scale's overrides, validate, and explain any error.

Errors name the file, the scale, the key path and what is allowed, e.g.
  params/linkbench_cached.yaml [scale default]: phases.lodaers: unknown key; allowed keys: ...
"""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ValidationError

from ..paths import params_dir
from .merge import MergeError, merge, read_with_extends
from .schema import SCALES, WORKLOAD_MODELS, Experiment


class ParamsError(ValueError):
    """A params file or its experiment name is wrong; the message says exactly how."""


def experiments() -> list[str]:
    return sorted(p.stem for p in params_dir().glob("*.yaml"))


def params_path(exp: str) -> Path:
    path = params_dir() / f"{exp}.yaml"
    if not path.is_file():
        known = ", ".join(experiments()) or "(none)"
        raise ParamsError(f"unknown experiment {exp!r}: there is no {path}; allowed: {known}")
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


def _explain(error: dict, data: dict) -> str:
    loc = tuple(error["loc"])
    workload_model = None
    if len(loc) > 1 and loc[0] == "workload" and loc[1] in WORKLOAD_MODELS:
        # pydantic puts the workload's name (the union's tag) into the path; the file has none.
        workload_model = WORKLOAD_MODELS[loc[1]]
        loc = (loc[0],) + loc[2:]
    path = ".".join(str(p) for p in loc) or "(top level)"
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = (sorted(workload_model.model_fields) if workload_model and len(loc) == 2
                   else _allowed_keys(Experiment, loc))
        return f"{path}: unknown key; allowed keys: {', '.join(allowed) or '(none)'}"
    if kind == "missing":
        return f"{path}: required key is missing"
    if kind in ("literal_error", "enum"):
        expected = error.get("ctx", {}).get("expected", "")
        return f"{path}: {error['input']!r} is not allowed; allowed values: {expected}"
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


def load_params(exp: str, scale: str = "default") -> dict:
    """The resolved, validated params of an experiment at a scale, as plain data."""
    if scale not in SCALES:
        raise ParamsError(f"unknown scale {scale!r}; allowed: {', '.join(SCALES)}")
    path = params_path(exp)
    # Every scale must be valid, not only the one asked for: a smoke run must not pass on a file
    # whose paper scale cannot run.
    resolved = {s: _resolve(path, s) for s in SCALES}
    for name, params in resolved.items():
        if params["experiment"] != exp:
            raise ParamsError(f"{path} [scale {name}]: experiment: {params['experiment']!r} must equal the file "
                              f"name {exp!r}")
    return resolved[scale]


def _resolve(path: Path, scale: str) -> dict:
    try:
        raw = read_with_extends(path)
        scales = raw.pop("scales", {}) or {}
        unknown = sorted(set(scales) - set(SCALES))
        if unknown:
            raise ParamsError(f"{path}: scales.{unknown[0]}: unknown scale; allowed: {', '.join(SCALES)}")
        merged = merge(raw, scales.get(scale) or {}, f"scales.{scale}.")
    except MergeError as exc:
        raise ParamsError(str(exc) if str(exc).startswith(str(path)) else f"{path} [scale {scale}]: {exc}") from None
    try:
        model = Experiment(**merged)
    except ValidationError as exc:
        lines = [_explain(e, merged) + _only_in_scales(e, raw, scales) for e in exc.errors()]
        raise ParamsError(f"{path} [scale {scale}]: " + "; ".join(lines)) from None
    out = model.model_dump()
    out["notebook"] = out["workload"]["name"]  # a family's notebook renders its experiments
    out["scale"] = scale
    out["params_file"] = str(path)
    return out
