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
