"""The notebook-to-HTML step: what a reader sees of each kind of cell."""
import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from enginebench.experiment import to_html


def _cell(source: str, text: str, tags: list[str] | None = None):
    cell = new_code_cell(source, outputs=[new_output("stream", name="stdout", text=text)])
    if tags:
        cell.metadata["tags"] = tags
    return cell


def test_report_drops_schema_checks_and_run_logs_but_keeps_findings(tmp_path):
    nb = new_notebook(cells=[
        _cell("run()", "progress line 1\n", ["hide-output"]),
        _cell("print(schema)", "Schema([('ops', Float64)])\n", ["test-only"]),
        _cell("print(verified)", "wt.op1 node 1000/1000 ok\n"),
    ])
    executed, page = tmp_path / "report.ipynb", tmp_path / "report.html"
    nbformat.write(nb, executed)
    to_html(executed, page)
    html = page.read_text()
    assert "wt.op1 node 1000/1000 ok" in html
    assert "Schema(" not in html
    assert "progress line" not in html
    assert "print(verified)" not in html  # inputs are never shown


def test_a_system_that_did_not_complete_is_tagged_wherever_a_table_names_it():
    import polars as pl
    from enginebench.report import html
    html.mark_partial([{"label": "wt.op1", "status": "complete"}, {"label": "rx.op1", "status": "failed"},
                       {"label": "lmdb.op1", "status": "not run"}])
    try:
        page = html.table(pl.DataFrame({"setup": ["wt.op1", "rx.op1"], "note": ["rx.op1", "x"]}), "t")
    finally:
        html.mark_partial([])
    assert "<td class='text'>rx.op1 (failed: partial)</td>" in page and "wt.op1 (" not in page
    assert "<td class='text'>rx.op1</td>" in page  # only the system columns are tagged
