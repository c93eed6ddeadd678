"""The per-second rate (results/tables.py tick_rows, report/per_second.py): counted as the
interval's rate is, and a dip found against its own interval, not against a trend."""
import polars as pl

from enginebench.report import per_second
from enginebench.report.rundata import RunData
from enginebench.results.tables import counted_ops, tick_rows


def _event(ticks_by_op: dict, t_end: float = 20.0, accounting=None) -> dict:
    ops = {op: {"count": sum(c for c, _ in t), "items": sum(i for _, i in t), "ticks": t}
           for op, t in ticks_by_op.items()}
    return {"phase": "load", "interval": 0, "t_start": 0.0, "t_end": t_end, "ops": ops, "accounting": accounting}


def test_ticks_count_what_the_interval_counts():
    # LinkBench's load: documents of two op types per second, not calls of every type.
    accounting = {"rate": "items", "rate_ops": ["ADD_NODE", "ADD_LINK"], "per_op": "ADD_NODE"}
    event = _event({"ADD_NODE": [[10, 10], [10, 10], [5, 5]], "ADD_LINK": [[2, 40], [0, 0], [1, 20]],
                    "VERIFY": [[100, 0], [100, 0], [100, 0]]}, t_end=2.5, accounting=accounting)
    rows = tick_rows("wt", event, 1.0)
    assert [r["ops"] for r in rows] == [50, 10, 25]
    assert [r["seconds"] for r in rows] == [1.0, 1.0, 0.5] and rows[2]["ops_per_s"] == 50
    assert sum(r["ops"] for r in rows) == counted_ops(event)[0]


def test_counts_past_a_phase_cut_short_land_in_its_last_second():
    event = _event({"INSERT": [[10, 10], [10, 10], [3, 3]]}, t_end=2.0)
    rows = tick_rows("wt", event, 1.0)
    assert [r["ops"] for r in rows] == [10, 13]
    assert sum(r["ops"] for r in rows) == counted_ops(event)[0]


def _run(rates: dict) -> RunData:
    rows = [{"system": system, "phase": "run", "interval": i // 20, "tick": i % 20, "t_start": 100.0 + i,
             "seconds": 1.0, "ops": r, "ops_per_s": float(r)} for system, series in rates.items()
            for i, r in enumerate(series)]
    manifest = {"params": {"systems": [{"label": s} for s in rates]}, "systems": {}}
    return RunData(None, manifest, pl.DataFrame(), pl.DataFrame(), pl.DataFrame(), pl.DataFrame(rows))


def test_a_stalled_second_is_found_and_a_slowing_load_is_not():
    stalled = [1000] * 40
    stalled[27] = 30
    slowing = [int(5000 * 0.95 ** i) for i in range(40)]  # 5,000 down to 700 a second: a trend
    run = _run({"wt": stalled, "rx": slowing})
    found = per_second.dips(run)
    assert found["system"].to_list() == ["wt"]
    row = found.row(0, named=True)
    assert row["seconds below"] == 1 and row["lowest second (ops/s)"] == 30 and row["at (s into the phase)"] == 27
    assert "fell below 25%" in per_second.sentence(run, found)
    assert per_second.chart(run, found).to_dict()["encoding"]["row"]["field"] == "phase"
    calm = _run({"rx": slowing})
    assert per_second.dips(calm).is_empty() and "hide no stall" in per_second.sentence(calm, per_second.dips(calm))
    old = RunData(None, calm.manifest, pl.DataFrame(), pl.DataFrame(), pl.DataFrame())
    assert "no per-second rates" in per_second.sentence(old, per_second.dips(old))


def test_the_intervals_rocksdb_held_writes_back_are_listed():
    # The engine's counters as the runner samples them at each interval's end: the soft_rate_limit's
    # delay is cumulative (its increase is the interval's), RocksDB's delayed rate and stop are
    # what they read then.
    rows = [{"system": "rx", "phase": "load", "interval": i, "t_start": 10.0 * i, "t_end": 10.0 * (i + 1),
             "engine.mongorocks.soft_rate_limit_delayed_ms": ms, "engine.rocksdb.actual-delayed-write-rate": rate,
             "engine.rocksdb.is-write-stopped": 0}
            for i, (ms, rate) in enumerate([(0, 0), (0, 0), (2500, 1048576), (2500, 0), (4000, 0)])]
    rows.append({**rows[0], "system": "wt"})
    manifest = {"params": {"systems": [{"label": "rx", "engine": "rocksdb"}, {"label": "wt", "engine": "wiredtiger"}]},
                "systems": {}}
    run = RunData(None, manifest, pl.DataFrame(rows), pl.DataFrame(), pl.DataFrame())
    held = per_second.throttled(run)
    assert held["interval ending at (s into the phase)"].to_list() == [30, 50]
    assert held["soft_rate_limit delay, s"].to_list() == [2.5, 1.5]
    assert held["RocksDB's delayed write rate, KB/s"].to_list() == [1024, 0]
    assert "held writes back" in per_second.throttle_sentence(run, held)
    calm = RunData(None, manifest, pl.DataFrame(rows[:2]), pl.DataFrame(), pl.DataFrame())
    assert per_second.throttled(calm).is_empty()
    assert "held no write back" in per_second.throttle_sentence(calm, per_second.throttled(calm))
