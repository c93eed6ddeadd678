"""Params files: loading and validating them (loader.py), their schema (schema.py).

The loader is imported on first use: the schema is built from every family's workload model,
and those models import params.phases, which must not pull the schema in while they load."""
from __future__ import annotations

_FROM_LOADER = ("ParamsError", "experiments", "load_params", "load_every_scale")


def __getattr__(name: str):
    if name in _FROM_LOADER:
        from . import loader
        return getattr(loader, name)
    if name == "SCALES":
        from .schema import SCALES
        return SCALES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ParamsError", "experiments", "load_params", "load_every_scale", "SCALES"]
