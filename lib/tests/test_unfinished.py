"""What the findings say of a system that did not finish when its load did not finish either
(report/unfinished.py); the case of a valid load is test_faults' runner killed in the query phase."""
import polars as pl

from enginebench.report import unfinished
from enginebench.report.rundata import RunData
from enginebench.supervision import brief


def _run(system_info: dict) -> RunData:
    """A run's shape: the manifest's systems and their interval rows (the folder is gone, so the
    manifest's last events are all there is to tell where a system stopped)."""
    labels = ["wt", "rx"]
    params = {"systems": [{"label": label, "role": "btree", "engine": "wiredtiger"} for label in labels]}
    manifest = {"params": params, "systems": {"wt": {"status": "complete"}, "rx": system_info}}
    rows = [{"system": "rx", "phase": "load", "interval": k} for k in range(3)]
    return RunData(None, manifest, pl.DataFrame(rows), pl.DataFrame(), pl.DataFrame())


def test_a_system_killed_in_its_load_has_nothing_valid_and_its_load_is_partial():
    events = [{"event": "phase_start", "phase": "load", "t": 1.0},
              {"event": "interval", "phase": "load", "interval": 2, "ops": {}, "t_start": 2.0, "t_end": 3.0}]
    run = _run({"status": "failed", "phases": [], "last_events": [brief(e) for e in events],
                "error": "the runner was killed by SIGKILL (kill -9, or the kernel's OOM killer) during phase load; "
                         "its log is empty"})
    (paragraph,) = unfinished.paragraphs(run)
    assert paragraph == ("**Systems that did not finish.** rx failed in the load phase (SIGKILL); its load did not "
                         "complete, so nothing it measured is valid. Its load-phase figures are partial: tagged "
                         "\"(failed: partial)\" in the tables and used by no claim.")


def test_a_run_whose_systems_all_completed_has_no_such_paragraph():
    run = _run({"status": "complete"})
    assert unfinished.paragraphs(run) == []
