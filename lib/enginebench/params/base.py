"""What every params model shares: unknown keys are errors, never silently ignored."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

# What a system stands for in the posts' comparisons: claims name roles, not engines.
Role = Literal["btree", "lsm", "mmap", "fractal", "memory"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def fields_set(model: BaseModel, prefix: str = "") -> set[str]:
    """The dotted paths of every key a params file set in this model and its sub-models."""
    out = set()
    for name in model.model_fields_set:
        path = f"{prefix}{name}"
        out.add(path)
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            out |= fields_set(value, path + ".")
    return out
