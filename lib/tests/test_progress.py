"""The terminal display: a bar for every phase, never past its total, no Python reprs."""
import json
import re
import warnings
from pathlib import Path

from enginebench import progress as progress_module
from enginebench.progress import Progress, show

# The events of wt.op1 in a real linkbench_cached smoke run (the native runner, lib/native), with the
# histograms and engine statistics left out.
FIXTURE = Path(__file__).parent / "data" / "progress_events.jsonl"


def _events():
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def _bars(monkeypatch):
    """Bars as on a terminal, with every bar's final count and total kept for the checks."""
    made = []
    from tqdm import tqdm

    class Recorded(tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)
    monkeypatch.setattr("tqdm.tqdm", Recorded)
    shown = Progress("wt.op1")
    shown.plain = False
    return shown, made


def test_every_measured_phase_gets_a_bar_that_never_passes_its_total(monkeypatch, capsys):
    shown, made = _bars(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # tqdm's TqdmWarning when a count passes its total
        for event in _events():
            show(shown, event, {"node": 5000, "link": 12943, "count": 3861})
        shown.close()
    phases = [e["phase"] for e in _events() if e["event"] == "phase_start"]
    assert [bar.desc for bar in made] == [f"wt.op1 {phase}" for phase in phases]
    for bar in made:
        assert bar.n == bar.total, (bar.desc, bar.n, bar.total)
    err = capsys.readouterr().err
    assert not re.search(r"<-\d", err)


def test_no_python_reprs_in_the_lines(monkeypatch, capsys):
    shown, _ = _bars(monkeypatch)
    for event in _events():
        show(shown, event, {"node": 5000, "link": 12943, "count": 3861})
    shown.close()
    plain = Progress("wt.op1")
    plain.plain = True
    for event in _events():
        show(plain, event, {"node": 5000, "link": 12943, "count": 3861})
    err = capsys.readouterr().err
    assert "load verified: node 5,000, link 12,943, count 3,861" in err
    assert "consistency check: count_rows 6,966, visible_links 19,126, mismatches 0, counts exact (0.06 s)" in err
    assert not re.search(r"[{}]|'\w+':", err), err


def test_a_short_load_says_what_is_missing():
    line = progress_module.verified_line({"expected": {"node": 5000, "link": 10}, "found": {"node": 4990, "link": 10},
                                          "ok": False})
    assert line == "load check: found node 4,990 of 5,000"


def test_intervals_longer_than_planned_stop_at_the_total(monkeypatch, capsys):
    # The Python runner (server targets) times its intervals, so they add up to a little more
    # than the phase's duration; so can a load's documents exceed the estimate it counts to.
    shown, made = _bars(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for event in _events():
            if event["event"] == "interval":
                event["t_end"] += 0.0125 * (event["t_end"] - event["t_start"])
            show(shown, event, {"node": 5000, "link": 12000, "count": 3861})
        shown.close()
    assert all(bar.n == bar.total for bar in made)
    err = capsys.readouterr().err
    shown_counts = [(float(n), float(total)) for n, total in re.findall(r"([\d.]+)/([\d.]+) s", err)]
    assert shown_counts and all(n <= total for n, total in shown_counts)
    assert not re.search(r"<-\d", err)
