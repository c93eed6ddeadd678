"""Data out of a report: each table's CSV link, charts as SVG with alt text, the claims a page
shows reaching summary.json, and links to the run's files from either copy of the page."""
import base64
import re
import urllib.parse
from io import StringIO

import altair as alt
import nbformat
import polars as pl
from nbformat.v4 import new_code_cell, new_notebook, new_output

from enginebench.experiment import point_run_files, to_html
from enginebench.report import charts, html
from enginebench.report.summary import CLAIMS_MIME, claims_shown


def _csv_of(table_html: str) -> pl.DataFrame:
    href = re.search(r"href='data:text/csv;charset=utf-8,([^']*)'", table_html).group(1)
    return pl.read_csv(StringIO(urllib.parse.unquote(href)))


def test_csv_link_holds_the_tables_values_unrounded():
    df = pl.DataFrame({"setup": ["wt.op1", "rx, op1 'quoted' #1"], "ops/s": [35150.123456, 4918.5],
                       "p99 ms": [0.0123, None], "intervals": [2, 3]})
    page = html.table(df, "Load: per-op figures")
    assert "download='load-per-op-figures.csv'" in page
    assert _csv_of(page).equals(df)
    assert "35,150" in page  # the page itself still shows rounded figures


def test_csv_link_flattens_nested_columns():
    df = pl.DataFrame({"system": ["wt"], "phases": [["load", "run"]]})
    assert _csv_of(html.table(df, "nested"))["system"].to_list() == ["wt"]


def _notebook_with(outputs) -> nbformat.NotebookNode:
    return new_notebook(cells=[new_code_cell("show()", outputs=outputs)])


def test_export_draws_charts_as_svg_with_alt_text_and_drops_the_notebook_css(tmp_path):
    chart = (alt.Chart(alt.Data(values=[{"system": "wt", "x": 1, "y": 2}, {"system": "wt", "x": 2, "y": 3}]),
                       title="Query phase").mark_line().encode(x="x:Q", y="y:Q", color="system:N"))
    png = charts.to_png(chart)
    executed, page = tmp_path / "report.ipynb", tmp_path / "report.html"
    nbformat.write(_notebook_with([new_output("display_data", data={"image/png": base64.b64encode(png).decode()})]),
                   executed)
    to_html(executed, page)
    text = page.read_text()
    assert "data:image/svg+xml" in text and "data:image/png" not in text
    assert re.search(r"<img class='eb-chart' alt='Query phase\. y against x\. [^']*'", text)
    assert "No description has been provided" not in text
    assert len(text) < 60_000, "the lab template's style sheets alone were ~270 KB"


def test_claims_the_page_showed_reach_the_summary(tmp_path):
    rows = [{"id": "L1", "verdict": "holds"}, {"id": "L2", "verdict": "not evaluated"}]
    executed = tmp_path / "report.ipynb"
    nbformat.write(_notebook_with([new_output("display_data", data={"text/html": "<table></table>",
                                                                     CLAIMS_MIME: {"claims": rows}})]), executed)
    assert claims_shown(executed) == rows
    page = tmp_path / "report.html"
    to_html(executed, page)
    assert "vnd.enginebench" not in page.read_text()  # the JSON copy is not shown


def test_links_to_run_files_point_at_the_run_folder_from_either_page():
    for quote in "'\"":
        page = f"<a class={quote}{html.RUN_FILE_CLASS}{quote} href={quote}ops.parquet{quote}>ops.parquet</a>"
        assert point_run_files(page, "../results/x/run1") == page.replace("ops.parquet" + quote,
                                                                          "../results/x/run1/ops.parquet" + quote)
