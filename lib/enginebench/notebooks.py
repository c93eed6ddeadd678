"""The notebooks are their own source: people edit notebooks/<family>.ipynb (in JupyterLab or
any editor) and nothing regenerates their cells. `make notebooks` only re-executes them at the
smoke scale and strips them with `strip`, which keeps a stored output only in the cells nbval
compares (NBVAL_CHECK_OUTPUT: deterministic at that scale) and drops timings, charts and host
facts, so a committed notebook's diff shows its code and its reference outputs, nothing else.

    python -m enginebench.notebooks strip [family ...]
"""
from __future__ import annotations

import sys

import nbformat

from .families import FAMILIES, NAMES

NBVAL_CHECK = "NBVAL_CHECK_OUTPUT"


def strip(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook as it is stored: outputs only where nbval checks them, no run metadata."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if NBVAL_CHECK not in cell.source:
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
        cell.metadata.pop("papermill", None)
    nb.metadata.pop("papermill", None)
    return nb


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "strip":
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    names = argv[1:] or list(NAMES)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        print(f"notebooks: unknown family {', '.join(unknown)}; allowed: {', '.join(NAMES)}", file=sys.stderr)
        return 2
    for name in names:
        path = FAMILIES[name].notebook
        nbformat.write(strip(nbformat.read(path, as_version=4)), path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
