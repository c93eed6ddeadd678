"""Chart conventions: one colour per system in every report, time axes in a fitting unit, symlog
ticks at powers of ten, empty charts that say why, and alt text drawn from the chart itself."""
import polars as pl
import pytest

from enginebench.params import SCALES, experiments, load_params
from enginebench.report import chart_export, charts, palette
from enginebench.report.rundata import RunData


def _run(labels: list[str], seconds_per_interval: float, intervals: int = 3) -> RunData:
    """A run's shape (manifest and interval rows) with the given systems: charts read only these columns."""
    rows = [{"system": label, "phase": "run", "interval": i, "t_start": 100.0 + i * seconds_per_interval,
             "t_end": 100.0 + (i + 1) * seconds_per_interval, "ops_per_s": 1000.0 * (n + 1) + i}
            for n, label in enumerate(labels) for i in range(intervals)]
    systems = [{"label": label, "role": "btree", "engine": "wiredtiger"} for label in labels]
    manifest = {"params": {"systems": systems}, "systems": {label: {"status": "complete"} for label in labels}}
    return RunData(None, manifest, pl.DataFrame(rows), pl.DataFrame(), pl.DataFrame())


def _colour_map(chart) -> dict[str, str]:
    scale = chart.to_dict()["encoding"]["color"]["scale"]
    return dict(zip(scale["domain"], scale["range"]))


def test_a_system_keeps_its_colour_whatever_else_the_report_shows():
    one = _colour_map(charts.throughput_over_time(_run(["wt.op1", "rx.op1"], 1), "run", "a"))
    other = _colour_map(charts.throughput_over_time(_run(["lmdb.op1", "rx.op1", "wtlsm.op1", "wt.op1"], 1), "run", "b"))
    assert one["wt.op1"] == other["wt.op1"] and one["rx.op1"] == other["rx.op1"]
    # Alphabetical order used to decide: lmdb now sorts first and must not take wt's colour.
    assert other["lmdb.op1"] != other["wt.op1"]


@pytest.mark.parametrize("exp", experiments())
def test_systems_of_one_run_have_distinct_colours(exp):
    for scale in SCALES:
        labels = [s["label"] for s in load_params(exp, scale)["systems"]]
        colours = [palette.system_color(label) for label in labels]
        assert len(set(colours)) == len(labels), (exp, scale, dict(zip(labels, colours)))


def test_engine_names_take_their_labels_colour():
    assert palette.system_color("RocksDB") == palette.system_color("rx")
    assert palette.system_color("wiredTiger (checkpoint 900s)") == palette.system_color("wt900.s".split(".")[0])


@pytest.mark.parametrize("seconds,unit", [(1.0, "seconds"), (120.0, "minutes")])
def test_time_axis_unit_fits_the_run(seconds, unit):
    spec = charts.throughput_over_time(_run(["wt"], seconds), "run", "t").to_dict()
    assert spec["encoding"]["x"]["title"].startswith(f"{unit} into the run phase")
    ends = [row["elapsed"] for row in spec["data"]["values"]]
    assert max(ends) == pytest.approx(3 * seconds / (60 if unit == "minutes" else 1))


def test_symlog_ticks_are_powers_of_ten_over_the_data():
    axis = charts.symlog_axis([0.004, 0.2, 23.0], "ms").to_dict()
    assert axis["axis"]["values"] == [0.0, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0]
    assert axis["scale"] == {"type": "symlog", "constant": 0.001} and axis["stack"] is None


def test_empty_chart_says_why():
    chart = charts.throughput_over_time(_run(["wt"], 1), "load", "Load")
    spec = chart.to_dict()
    assert "No load-phase intervals" in spec["data"]["values"][0]["text"]
    assert "No load-phase intervals" in chart_export.alt_text(spec)


def test_png_carries_its_spec_and_alt_text_names_title_axes_and_series():
    chart = charts.throughput_over_time(_run(["wt.op1", "rx.op1"], 1), "run", "Query phase")
    png = charts.to_png(chart)
    spec = chart_export.spec_of(png)
    assert spec["encoding"] == chart.to_dict()["encoding"]
    assert chart_export.without_spec(png) != png and chart_export.spec_of(chart_export.without_spec(png)) is None
    text = chart_export.alt_text(spec)
    assert text.startswith("Query phase. operations per second against seconds into the run phase")
    assert "wt.op1 1,000 to 1,002" in text and "rx.op1 2,000 to 2,002" in text
