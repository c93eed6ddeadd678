"""How a holding claim's size is described against the published one."""
from enginebench.report.claims import magnitude_note


def test_a_tenth_of_the_published_effect_is_not_close():
    # LinkBench cached query: WiredTiger 1.34x RocksDB in the post; 1.04x here.
    note = magnitude_note(1.34, 1.04)
    assert "close" not in note
    assert "smaller effect: +4% against the published +34%" in note


def test_effects_within_the_band_are_close():
    assert magnitude_note(1.93, 1.56) == " (close to the published size)"
    assert magnitude_note(0.5, 0.6) == " (close to the published size)"  # a "less than" claim


def test_a_larger_effect_is_named_larger():
    assert "larger effect: +484% against the published +19%" in magnitude_note(1.19, 5.84)


def test_near_parity_claims_compare_the_ratios_directly():
    assert magnitude_note(1.0, 1.05) == " (close to the published size)"
    assert magnitude_note(1.02, 1.4) == ""


def test_missing_or_degenerate_values_give_no_note():
    assert magnitude_note(None, 1.2) == ""
    assert magnitude_note(1.3, None) == ""
    assert magnitude_note(1.3, float("inf")) == ""
    assert magnitude_note(1.3, 0.0) == ""
