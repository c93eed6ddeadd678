"""Charts from the notebook to the page: PNG in the notebook, SVG (or PNG) with alt text in the HTML.

A notebook shows a chart as `Image(charts.to_png(chart))`. The PNG carries the chart's
Vega-Lite spec in a compressed text chunk (zTXt, keyword SPEC_KEY), so the HTML export
(experiment.to_html) can draw the same chart again as SVG, keep whichever of the two is smaller
(SVG is also sharp at any zoom), and write alt text from the spec: the notebook cells stay as
they are.
"""
from __future__ import annotations

import json
import struct
import urllib.parse
import zlib

import altair as alt
import vl_convert as vlc
from .numbers import number

SPEC_KEY = b"enginebench-vega-lite"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def to_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    spec = chart.to_json(indent=None)
    png = vlc.vegalite_to_png(spec, scale=scale)
    end = png.rindex(b"IEND") - 4  # the IEND chunk starts with its 4-byte length
    text = _chunk(b"zTXt", SPEC_KEY + b"\0\0" + zlib.compress(spec.encode(), 9))
    return png[:end] + text + png[end:]


def _spec_chunk(png: bytes) -> tuple[int, int] | None:
    """(start, end) of the chunk holding the spec, or None for any other PNG."""
    if not png.startswith(PNG_SIGNATURE):
        return None
    at = len(PNG_SIGNATURE)
    while at + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        if kind == b"zTXt" and png[at + 8:at + 8 + length].startswith(SPEC_KEY + b"\0"):
            return at, at + 12 + length
        at += 12 + length
    return None


def spec_of(png: bytes) -> dict | None:
    """The Vega-Lite spec to_png put in the PNG, or None for any other PNG."""
    where = _spec_chunk(png)
    if where is None:
        return None
    start, end = where
    return json.loads(zlib.decompress(png[start + 8 + len(SPEC_KEY) + 2:end - 4]))


def without_spec(png: bytes) -> bytes:
    """The PNG as vl-convert drew it: the page needs no copy of the spec."""
    where = _spec_chunk(png)
    return png if where is None else png[:where[0]] + png[where[1]:]


def svg_data_uri(spec: dict) -> str:
    """The chart as an SVG data: URI for a single-quoted HTML attribute, escaped only where the
    URI or that attribute needs it (% # & ' and line ends): base64 would add a third."""
    svg = vlc.vegalite_to_svg(json.dumps(spec))
    return "data:image/svg+xml;charset=utf-8," + urllib.parse.quote(svg, safe=' <>/=:;,.-_()!*+?@~[]{}|^$`"')


def _title_text(title) -> str:
    if isinstance(title, dict):
        text, subtitle = title.get("text"), title.get("subtitle")
        lines = subtitle if isinstance(subtitle, list) else [subtitle]  # each subtitle line its own sentence
        return ". ".join(p for p in [_title_text(text), *(str(line) for line in lines if line)] if p)
    if isinstance(title, list):
        return " ".join(title)
    return str(title or "")


def _walk(spec: dict):
    yield spec
    for key in ("layer", "concat", "hconcat", "vconcat"):
        for part in spec.get(key) or []:
            yield from _walk(part)
    if isinstance(spec.get("spec"), dict):
        yield from _walk(spec["spec"])


def _series(spec: dict) -> list[str]:
    """The values named in the chart's colour legends (systems, sources), in legend order."""
    out = []
    for part in _walk(spec):
        color = (part.get("encoding") or {}).get("color") or {}
        out += [str(v) for v in (color.get("scale") or {}).get("domain") or [] if isinstance(v, str)]
    return list(dict.fromkeys(out))


def _quantity(encoding: dict) -> tuple[str, str] | None:
    """(field, axis title) of the first quantitative position channel."""
    for key in ("y", "x"):
        channel = encoding.get(key) or {}
        if channel.get("type") == "quantitative" and channel.get("field"):
            return channel["field"], channel.get("title") or channel["field"]
    return None


def _number(value: float) -> str:
    return number(value)


def _faceted(spec: dict, encoding: dict) -> bool:
    return bool(encoding.get("row") or encoding.get("column") or spec.get("facet"))


def _rows(spec: dict, part: dict) -> list[dict]:
    """The inline rows a part draws: its own data, else the top level's (values or a named dataset)."""
    for data in (part.get("data"), spec.get("data")):
        if isinstance(data, dict) and "values" in data:
            return data["values"]
        if isinstance(data, dict) and data.get("name") in (spec.get("datasets") or {}):
            return spec["datasets"][data["name"]]
    return []


def _ranges(spec: dict) -> str:
    """'<axis>: wt 1,200 to 2,900; rx ...': each series' lowest and highest plotted value."""
    for part in _walk(spec):
        encoding = part.get("encoding") or {}
        quantity, series = _quantity(encoding), (encoding.get("color") or {}).get("field")
        rows = _rows(spec, part)
        if not quantity or not series or not rows or _faceted(spec, encoding):
            continue  # one range over a facet's panels would mix their units
        field, title = quantity
        values: dict[str, list[float]] = {}
        for row in rows:
            if isinstance(row.get(field), (int, float)):
                values.setdefault(str(row.get(series)), []).append(row[field])
        return f"{title}: " + "; ".join(f"{name} {_number(min(v))} to {_number(max(v))}" for name, v in values.items())
    return ""


def alt_text(spec: dict) -> str:
    """Alt text: the chart's own description where it has one, else its title, what it plots
    against what, its panels, the series its colours stand for and each one's range."""
    if spec.get("description") and spec["description"] != "Vega-Lite chart":
        return spec["description"]
    pieces, axes = [], []
    for part in _walk(spec):
        pieces.append(_title_text(part.get("title")))
        encoding = part.get("encoding") or {}
        x, y = ((encoding.get(k) or {}).get("title") or (encoding.get(k) or {}).get("field") for k in ("x", "y"))
        if x and y:  # a layer with one channel (a rule at a mean) adds nothing a reader needs
            axes.append(f"{y} against {x}")
        facet = part.get("facet") if isinstance(part.get("facet"), dict) else {}
        for key in ("row", "column"):
            field = (encoding.get(key) or facet.get(key) or {}).get("field")
            if field:
                axes.append(f"one panel per {field}")
    text = ". ".join(dict.fromkeys(p for p in pieces + axes if p))
    series = _series(spec)
    if series:
        text += f". Colours: {', '.join(series)}"
    ranges = _ranges(spec)
    return (text or "Chart") + (f". {ranges}" if ranges else "") + "."
