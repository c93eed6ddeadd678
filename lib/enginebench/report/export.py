"""The executed notebook as one light, self-contained HTML page.

nbconvert's "basic" template writes the cells without the JupyterLab style sheets (about 300 KB
of CSS for widgets, editors and menus a static report never shows); PAGE_STYLE keeps what the
report does use: readable text, Markdown tables and lists, and images that fit the width. Charts
are swapped for SVG where that is smaller (chart_export), each with alt text.
"""
from __future__ import annotations

import base64
import html
import re

from . import chart_export

PAGE_STYLE = """<style>
body {max-width: 1180px; margin: 0 auto; padding: 12px 24px 40px; color: #1b1b1b;
      font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif}
h1, h2, h3 {line-height: 1.25; margin: 1.4em 0 .5em} h1 {font-size: 1.7em} h2 {font-size: 1.35em}
code {font: 13px ui-monospace, monospace; background: #f4f4f4; padding: 0 3px}
pre {font: 12px/1.4 ui-monospace, monospace; background: #f7f7f7; padding: 8px; overflow-x: auto; white-space: pre-wrap}
.rendered_html table:not(.eb-table) {border-collapse: collapse; font-size: 13px}
.rendered_html table:not(.eb-table) th, .rendered_html table:not(.eb-table) td {border-bottom: 1px solid #ddd; padding: 3px 9px}
img {max-width: 100%; height: auto}
.output_subarea {margin: 4px 0 10px; overflow-x: auto}
.output_stderr pre, .output_error pre {background: #fdd}
.anchor-link {visibility: hidden; text-decoration: none; margin-left: .3em}
h1:hover .anchor-link, h2:hover .anchor-link, h3:hover .anchor-link {visibility: visible}
</style>"""


def chart_img(png: bytes) -> str | None:
    """An <img> for a chart to_png drew: SVG where smaller than the PNG, with alt text; None for
    a PNG that carries no spec (left as the notebook has it)."""
    spec = chart_export.spec_of(png)
    if spec is None:
        return None
    png_uri = "data:image/png;base64," + base64.b64encode(chart_export.without_spec(png)).decode()
    svg_uri = chart_export.svg_data_uri(spec)
    src = svg_uri if len(svg_uri) < len(png_uri) else png_uri
    return f"<img class='eb-chart' alt='{html.escape(chart_export.alt_text(spec))}' src='{src}'>"


# How nbconvert writes a PNG output (with its placeholder alt text).
PNG_IMG = re.compile(r'<img alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)"[^>]*>')


def swap_charts(body: str) -> str:
    """Every chart image of the exported page as chart_img draws it (other images as they were).
    Done on the page, not the notebook: nbconvert would re-escape an SVG put in an HTML output."""
    return PNG_IMG.sub(lambda m: chart_img(base64.b64decode(m.group(1))) or m.group(0), body)


def page(body: str, title: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title>{PAGE_STYLE}</head>\n<body>\n{body}\n</body></html>\n")
