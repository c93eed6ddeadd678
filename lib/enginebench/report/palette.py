"""One colour per system, the same in every chart of every report.

The rule: a system's label is `stem[.variant]` (wt.op1, rx.16-32, wt900.s, lmdb; an engine name
such as sysbench's "RocksDB" stands for its stem, ENGINE_NAMES). The stem
names the engine setup and picks the hue from STEM_COLORS (wt blue, wtlsm teal, rx orange,
lmdb green, ...); a stem not listed there takes a hue from the same palette by a stable hash of
its name, so it too keeps its colour from run to run. The variant (after the first dot) picks
a lightness step of that hue: no variant, or op1, is the hue itself; a variant that starts with a
number (a memory size: rx.8-16, lmdb.32) steps by that number's power of two, so sizes that
double get different shades; any other variant steps by a stable hash of its text.
Nothing depends on which other systems a chart shows or on their order, unlike altair's default
scheme, which assigns colours in the order the labels sort.
"""
from __future__ import annotations

import colorsys
import hashlib
import math
import re

import altair as alt

# Tableau 10: distinct hues readable on white and for the common colour-vision deficiencies.
STEM_COLORS = {
    "wt": "#4c78a8", "wtlsm": "#72b7b2", "wt60": "#5b5fc7", "wt900": "#9d755d", "rx": "#f58518",
    "lmdb": "#54a24b", "mmapv1": "#b279a2", "tokumx": "#e45756", "tokumxse": "#eeca3b",
}
SPARE_HUES = ("#bab0ac", "#ff9da6", "#17becf", "#bcbd22", "#7f7f7f")
# Lightness offsets of variants, alternately darker and lighter than the hue.
SHADES = (-0.13, 0.14, -0.24, 0.25)
BASE_VARIANTS = {"", "op1"}


def _stable_index(text: str, modulo: int) -> int:
    return int.from_bytes(hashlib.blake2s(text.encode(), digest_size=4).digest(), "big") % modulo


def _shade(hex_color: str, offset: float) -> str:
    r, g, b = (int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, light, s = colorsys.rgb_to_hls(r, g, b)
    r, g, b = colorsys.hls_to_rgb(h, min(0.9, max(0.15, light + offset)), s)
    return "#" + "".join(f"{round(c * 255):02x}" for c in (r, g, b))


# Reports that name a system by its engine configuration (sysbench's "RocksDB") use its stem's colour.
ENGINE_NAMES = {"wiredTiger": "wt", "wiredTiger LSM": "wtlsm", "RocksDB": "rx", "LMDB (mmap)": "lmdb", "TokuMX": "tokumx",
                "TokuMXse": "tokumxse"}


def _as_label(name: str) -> str:
    checkpoint = re.fullmatch(r"wiredTiger \(checkpoint (\d+)s\)", name)
    return f"wt{checkpoint.group(1)}" if checkpoint else ENGINE_NAMES.get(name, name)


def system_color(label: str) -> str:
    """The colour of the system `label` (see the module's rule)."""
    stem, _, variant = _as_label(label).partition(".")
    hue = STEM_COLORS.get(stem) or SPARE_HUES[_stable_index(stem, len(SPARE_HUES))]
    if variant in BASE_VARIANTS:
        return hue
    number = re.match(r"\d+", variant)
    step = (round(math.log2(int(number.group()))) if number and int(number.group()) > 0
            else _stable_index(variant, len(SHADES)))
    return _shade(hue, SHADES[step % len(SHADES)])


def color(field: str, labels, title: str | None = "setup", legend: bool = True) -> alt.Color:
    """An altair colour encoding of `field` whose values are system labels, coloured by system_color."""
    domain = list(dict.fromkeys(labels))
    return alt.Color(f"{field}:N", title=title, legend=alt.Legend() if legend else None,
                     scale=alt.Scale(domain=domain, range=[system_color(label) for label in domain]))
