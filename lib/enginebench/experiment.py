"""`make experiment EXP=...`: run an experiment's notebook through papermill into a report.

The params are validated first (so a bad name or file fails in seconds, starting nothing), the
injected parameters are checked against the notebook's parameters cell (papermill only warns on
unknown names), and the executed notebook is converted to a static HTML page.
"""
from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from .params import load_params
from .paths import repo_root, reports_dir, results_dir

KERNEL = "enginebench"


def notebook_path(name: str) -> Path:
    return repo_root() / "notebooks" / f"{name}.ipynb"


def check_parameters(notebook: Path, parameters: dict) -> None:
    import papermill
    declared = papermill.inspect_notebook(str(notebook))
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        raise ValueError(f"{notebook}: no parameter named {', '.join(unknown)}; "
                         f"the parameters cell declares: {', '.join(sorted(declared))}")


def to_html(executed: Path, html_path: Path) -> None:
    import nbformat
    from nbconvert import HTMLExporter
    from traitlets.config import Config
    config = Config()
    # The run cell's output is its progress log: useful live, noise in the report.
    config.TagRemovePreprocessor.enabled = True
    config.TagRemovePreprocessor.remove_all_outputs_tags = {"hide-output"}
    exporter = HTMLExporter(config=config, exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nbformat.read(executed, as_version=4))
    html_path.write_text(strip_remote_scripts(body))


def strip_remote_scripts(page: str) -> str:
    """The page must render offline: drop the template's CDN scripts (MathJax, require.js), which
    no report cell needs (charts are embedded PNGs, tables plain HTML)."""
    return re.sub(r"<script[^>]*\bsrc=[\"']https?://[^>]*>\s*</script>", "", page)


def run_experiment(exp: str, scale: str = "default", target: str = "auto", run_dir: str = "") -> Path:
    import papermill
    params = load_params(exp, scale)
    notebook = notebook_path(params["notebook"])
    if not notebook.exists():
        raise ValueError(f"{params['params_file']}: notebook: {notebook} does not exist")
    parameters = {"exp": exp, "scale": scale, "target": target, "run_dir": run_dir}
    check_parameters(notebook, parameters)
    out_dir = reports_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / f"{exp}.ipynb"
    started = time.time()
    try:
        papermill.execute_notebook(str(notebook), str(executed), parameters=parameters, kernel_name=KERNEL,
                                   cwd=str(notebook.parent), progress_bar=False, log_output=True)
    finally:
        # Even a failed execution leaves a notebook whose error cells say what went wrong.
        if executed.exists():
            html_path = out_dir / f"{exp}.html"
            to_html(executed, html_path)
            if not run_dir:
                _copy_into_run(exp, started, executed, html_path)
    return out_dir / f"{exp}.html"


def _copy_into_run(exp: str, started: float, executed: Path, html_path: Path) -> None:
    """Keep the report next to the results it was made from (the newest run since we started)."""
    base = results_dir() / exp
    if not base.is_dir():
        return
    runs = [p for p in base.iterdir() if p.is_dir() and p.stat().st_mtime >= started - 1]
    if runs:
        newest = max(runs, key=lambda p: p.name)
        shutil.copy2(executed, newest / "report.ipynb")
        shutil.copy2(html_path, newest / "report.html")
