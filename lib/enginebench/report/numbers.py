"""Numbers as people read them, one format for every table, caption and alt text of a report."""
from __future__ import annotations

import numpy as np


def number(value: float) -> str:
    """A measured number as people read one: whole above 100 (with thousands separators), one
    decimal from 10, three significant digits below, never in exponent notation."""
    size = abs(round(value, 1))  # 99.96 reads as 100, not 100.0
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if value == 0:
        return "0"
    return np.format_float_positional(value, precision=3, unique=False, fractional=False, trim="-")
