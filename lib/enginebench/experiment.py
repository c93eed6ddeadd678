"""`make experiment EXP=...`: run an experiment's notebook through papermill into a report.

The params are validated first (so a bad name or file fails in seconds, starting nothing), the
injected parameters are checked against the notebook's parameters cell (papermill only warns on
unknown names), and the executed notebook is converted to a static HTML page.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import NamedTuple

from .families import family
from .params import load_params
from .paths import repo_root, reports_dir
from .report import export

KERNEL = "enginebench"


def notebook_path(name: str) -> Path:
    return repo_root() / "notebooks" / f"{name}.ipynb"


# Cells kept for nbval's checks only (a table's columns, verdicts a table above already shows):
# the notebooks tag them, and the HTML report leaves them out.
NBVAL_ONLY_TAG = "test-only"


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
    config.TagRemovePreprocessor.remove_cell_tags = {NBVAL_ONLY_TAG}
    # "basic": the cells without JupyterLab's style sheets; report/export.py adds the little CSS used.
    exporter = HTMLExporter(config=config, template_name="basic", exclude_input=True,
                            exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nbformat.read(executed, as_version=4))
    from .report.contents import finish_page
    page = export.page(export.swap_charts(strip_remote_scripts(body)), title=executed.stem)
    html_path.write_text(finish_page(page))


def strip_remote_scripts(page: str) -> str:
    """The page must render offline: drop the template's CDN scripts (MathJax, require.js), which
    no report cell needs (charts are embedded images, tables plain HTML)."""
    return re.sub(r"<script[^>]*\bsrc=[\"']https?://[^>]*>\s*</script>", "", page)


def local_kernel_manager():
    """The notebook's kernel runs on this machine: its channels are Unix sockets (IPC) rather than
    TCP ports, so no port is opened and ipykernel has no unencrypted-TCP warning to print at the
    end of every run. Each kernel's sockets get a path of their own: jupyter_client's default,
    `kernel-ipc-<n>` in the working directory, is the same for every report rendered at once (two
    test workers did), and a client that reached the other kernel failed with "Invalid Signature"."""
    import tempfile
    import uuid

    from jupyter_client import AsyncKernelManager
    from traitlets import CaselessStrEnum, default

    class LocalKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        @default("ip")
        def _socket_path_of_its_own(self):
            # Short, under /tmp: a Unix socket's path is limited to 107 bytes.
            return os.path.join(tempfile.gettempdir(), f"enginebench-kernel-{uuid.uuid4().hex[:12]}")
    return LocalKernelManager


class Report(NamedTuple):
    page: Path      # the run's own report: <run folder>/report.html
    run_dir: Path   # the results folder it was made from


def run_repeated(exp: str, scale: str, target: str, times: int, systems: list[str] | None = None,
                 sets: list[str] | None = None) -> Path:
    """REPEAT=n: n runs, each its own results folder, sharing a group id; returns the last.
    The runs alternate the systems' order (listed, reversed, listed, ...: ABBA over pairs of
    runs) where the family allows it, so a host that drifts steadily over the group slows the
    first system of one run and the last of the next, and the drift cancels in the mean ratio.
    An interrupt stops the series (RunAborted propagates); a failed run does not, and the
    report's spread leaves it out."""
    from datetime import datetime, timezone
    from .driver import run
    group = f"{exp}-{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}-x{times}"
    order_free = family(load_params(exp, scale, sets)["workload"]["name"]).order_free
    last = None
    for index in range(1, times + 1):
        order = "reversed" if order_free and index % 2 == 0 else "listed"
        print(f"enginebench: {exp} run {index} of {times} (group {group}, systems in {order} order)",
              file=sys.stderr, flush=True)
        last = run(exp, scale, target, repeat={"group": group, "index": index, "of": times}, systems=systems,
                   sets=sets, order=order)
    return last


def run_experiment(exp: str, scale: str = "default", target: str = "auto", run_dir: str = "",
                   repeat: int = 1, systems: list[str] | None = None, sets: list[str] | None = None) -> Report:
    """Run the experiment in this process (so Ctrl-C and SIGTERM reach the driver, which stops the
    runner cleanly and marks the run aborted), then render its notebook against the results.
    With repeat > 1 it runs n times and the report is made from the last run and its group."""
    if repeat < 1:
        raise ValueError(f"REPEAT={repeat}: must be a whole number, 1 or more")
    if repeat > 1 and run_dir:
        raise ValueError("REPEAT and RUN cannot be combined: RUN re-renders one existing run")
    if systems and run_dir:
        raise ValueError("SYSTEMS and RUN cannot be combined: RUN re-renders one existing run")
    if sets and run_dir:
        raise ValueError("SET and RUN cannot be combined: RUN re-renders one existing run")
    import papermill
    params = load_params(exp, scale, sets)
    notebook = notebook_path(params["notebook"])
    if not notebook.exists():
        raise ValueError(f"{params['params_file']}: notebook: {notebook} does not exist")
    check_parameters(notebook, {"exp": exp, "scale": scale, "target": target, "run_dir": run_dir})
    if run_dir:
        # The notebook runs in notebooks/: a path relative to here must be made absolute.
        resolved = Path(run_dir).resolve()
        if not (resolved / "manifest.json").is_file():
            raise ValueError(f"RUN={run_dir}: not a results folder (no manifest.json in {resolved})")
        ran = json.loads((resolved / "manifest.json").read_text()).get("experiment")
        if ran != exp:
            # Another family's notebook over this run would judge none of its claims, and its
            # report and summary would be written over the run's own.
            raise ValueError(f"RUN={run_dir}: a run of {ran}, not of EXP={exp}; run make experiment EXP={ran} "
                             f"RUN={run_dir}")
        run_dir = str(resolved)
    elif repeat > 1:
        run_dir = str(run_repeated(exp, scale, target, repeat, systems, sets))
    else:
        from .driver import run
        run_dir = str(run(exp, scale, target, systems=systems, sets=sets))
    parameters = {"exp": exp, "scale": scale, "target": target, "run_dir": run_dir}
    # The report is the run's own, kept in its folder: a later run never replaces it, and a
    # re-rendered one (RUN=) goes beside the one before it.
    executed, html_path = Path(run_dir) / "report.ipynb", Path(run_dir) / "report.html"
    keep_earlier_report(Path(run_dir))
    try:
        papermill.execute_notebook(str(notebook), str(executed), parameters=parameters, kernel_name=KERNEL,
                                   cwd=str(notebook.parent), progress_bar=False, log_output=True,
                                   kernel_manager_class=local_kernel_manager())
    finally:
        # Even a failed execution leaves a notebook whose error cells say what went wrong.
        if executed.exists():
            to_html(executed, html_path)
            write_summary(executed, Path(run_dir))
            publish_if_latest_complete(exp, Path(run_dir), html_path)
    return Report(html_path, Path(run_dir))


REPORT_FILES = ("report.html", "report.ipynb", "summary.json")


def keep_earlier_report(run_dir: Path) -> list[Path]:
    """Renames a run's report files to report-<when it was made>.html (and .ipynb, summary-...json)
    before its report is rendered again; returns the new names."""
    existing = [run_dir / name for name in REPORT_FILES if (run_dir / name).exists()]
    if not existing:
        return []
    from datetime import datetime
    made = max(p.stat().st_mtime for p in existing)
    stamp = datetime.fromtimestamp(made).strftime("%Y%m%d-%H%M%S")
    kept = []
    for path in existing:
        target = path.with_name(f"{path.stem}-{stamp}{path.suffix}")
        path.rename(target)
        kept.append(target)
    return kept


def write_summary(executed: Path, run_dir: Path) -> None:
    """summary.json beside the report: headline numbers and the verdicts the page showed."""
    from .report.rundata import load_run
    from .report import summary
    summary.write_summary(load_run(run_dir), executed)


def publish_if_latest_complete(exp: str, run_dir: Path, html_path: Path) -> bool:
    """reports/<exp>.html is a copy of the newest complete run's report: a failed, aborted or
    older run (RUN= re-renders any) leaves it as it is. Its links to the run's files are pointed
    at the run folder from there."""
    from .report.runs import newest_complete
    siblings = [p for p in run_dir.parent.iterdir() if (p / "manifest.json").is_file()]
    if newest_complete(siblings) != run_dir:
        return False
    out_dir = reports_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    copy = out_dir / f"{exp}.html"
    copy.write_text(point_run_files(html_path.read_text(), os.path.relpath(run_dir, out_dir)))
    shutil.copystat(html_path, copy)
    return True


def point_run_files(page: str, run_folder: str) -> str:
    """Links to the run's files (html.RUN_FILE_CLASS), relative to the run folder in the page,
    made relative to a page written elsewhere."""
    from .report.html import RUN_FILE_CLASS
    # nbconvert re-serialises HTML outputs, so the quotes may be either kind.
    return re.sub(rf"""(class=(['"]){RUN_FILE_CLASS}\2 href=(['"]))([^'"]+)""",
                  lambda m: m.group(1) + Path(run_folder, m.group(4)).as_posix(), page)
