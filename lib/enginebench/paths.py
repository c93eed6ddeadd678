"""Where the project's folders are, found from a marker file so any working directory works
(the notebook kernel runs in notebooks/, the CLI anywhere inside the checkout)."""
from __future__ import annotations

import os
from pathlib import Path

MARKER = ".enginebench-root"


def repo_root() -> Path:
    env = os.environ.get("ENGINEBENCH_ROOT")
    if env:
        return Path(env).resolve()
    for start in (Path.cwd(), Path(__file__).resolve()):
        for folder in (start, *start.parents):
            if (folder / MARKER).is_file():
                return folder
    raise FileNotFoundError(f"no {MARKER} found above {Path.cwd()} or the package; set ENGINEBENCH_ROOT")


def params_dir() -> Path:
    return repo_root() / "params"


def results_dir() -> Path:
    return Path(os.environ.get("ENGINEBENCH_RESULTS") or repo_root() / "data" / "results")


def reference_dir() -> Path:
    return repo_root() / "data" / "reference"


def reports_dir() -> Path:
    return Path(os.environ.get("ENGINEBENCH_REPORTS") or repo_root() / "reports")


def scratch_dir() -> Path:
    """Where engines keep their data during a run (deleted afterwards unless keep_data)."""
    return Path(os.environ.get("ENGINEBENCH_DATA") or repo_root() / ".build" / "data")


def native_runner() -> Path:
    """The native runner binary `make setup` builds (lib/native); ENGINEBENCH_RUNNER overrides."""
    env = os.environ.get("ENGINEBENCH_RUNNER")
    path = Path(env) if env else repo_root() / ".build" / "native" / "release" / "enginebench-runner"
    if not path.is_file():
        raise FileNotFoundError(f"the native runner is not built ({path} is missing); run `make setup`")
    return path
