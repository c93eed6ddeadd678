"""One number format for every report table, caption and alt text: never exponent notation."""
import pytest

from enginebench.report import chart_export, normalised, scale
from enginebench.families.linkbench import report as linkbench
from enginebench.report.numbers import number


@pytest.mark.parametrize("value, text", [(1.83e-05, "0.0000183"), (0.5, "0.5"), (12.34, "12.3"),
                                         (575.0, "575"), (509755392.0, "509,755,392"), (99.96, "100")])
def test_numbers_read_as_people_write_them(value, text):
    assert number(value) == text


def test_every_report_formatter_is_the_one_format():
    # The ratio tables, the scale mapping, LinkBench's claims and chart alt text once each
    # had their own "%.3g", which prints 1.83e-05.
    for figure in (normalised._figure, scale._short, linkbench._short, chart_export._number):
        assert figure(1.83e-05) == "0.0000183"
