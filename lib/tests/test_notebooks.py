"""The notebooks are their own source (enginebench.notebooks): each family has one, stored
stripped, with the papermill parameters the driver passes, and stripping never touches a cell's
source, so `make notebooks` cannot undo an edit."""
import copy

import nbformat
import papermill
import pytest

from enginebench.families import FAMILIES
from enginebench.notebooks import NBVAL_CHECK, strip


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_notebook_is_stored_stripped(name):
    nb = nbformat.read(FAMILIES[name].notebook, as_version=4)
    stored = copy.deepcopy(nb)
    assert strip(nb) == stored, f"notebooks/{name}.ipynb holds outputs nbval does not check: run `make notebooks`"
    checked = [c for c in nb.cells if c.cell_type == "code" and NBVAL_CHECK in c.source]
    assert checked and all(c.outputs for c in checked), "every NBVAL_CHECK_OUTPUT cell keeps its reference output"


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_notebook_declares_the_drivers_parameters(name):
    declared = papermill.inspect_notebook(str(FAMILIES[name].notebook))
    assert {"exp", "scale", "target", "run_dir"} <= set(declared)
    assert declared["scale"]["default"].strip("\"'") == "smoke", "papermill's defaults are the smoke scale (nbval runs them)"


def test_strip_keeps_every_source_and_only_checked_outputs():
    nb = nbformat.v4.new_notebook()
    checked = nbformat.v4.new_code_cell(f"# {NBVAL_CHECK}\nprint(1)")
    checked.outputs = [nbformat.v4.new_output("stream", text="1\n")]
    chart = nbformat.v4.new_code_cell("display(chart)")
    chart.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "AAAA"})]
    chart.execution_count = 3
    chart.metadata["execution"] = {"iopub.status.busy": "2026-11-23T10:00:00"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), checked, chart]
    nb.metadata["papermill"] = {"duration": 12.5}
    sources = [c.source for c in nb.cells]

    strip(nb)
    assert [c.source for c in nb.cells] == sources
    assert checked.outputs and not chart.outputs and chart.execution_count is None
    assert "execution" not in chart.metadata and "papermill" not in nb.metadata
