"""nbval executes the notebooks in kernels that inherit this process's environment: point their
results, engine files and reports at a folder of the test session's own, so `make test` leaves no
smoke runs in data/results (the notebooks run `enginebench.run` at the smoke scale) and a user's
`make all` never mistakes them for runs of theirs."""
import os
import shutil
import tempfile

import pytest

_REDIRECTED = ("ENGINEBENCH_RESULTS", "ENGINEBENCH_DATA", "ENGINEBENCH_REPORTS")
_saved: dict[str, str | None] | None = None
_folder: str | None = None


def _is_notebook(item) -> bool:
    return item is not None and str(item.fspath).endswith(".ipynb")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before a notebook's kernel starts (its first cell's setup starts it)."""
    global _saved, _folder
    if not _is_notebook(item) or _saved is not None:
        return
    _saved = {name: os.environ.get(name) for name in _REDIRECTED}
    _folder = tempfile.mkdtemp(prefix="enginebench-notebooks-")
    for name, sub in zip(_REDIRECTED, ("results", "data", "reports")):
        os.environ[name] = os.path.join(_folder, sub)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last notebook cell this process runs before another kind of test (or none)."""
    global _saved, _folder
    if _saved is None or _is_notebook(nextitem):
        return
    for name, value in _saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(_folder, ignore_errors=True)
    _saved, _folder = None, None
