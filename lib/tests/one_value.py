"""One value per figure: "Against the post" and the claims table give a claim's two ratios, the
post's and ours, as one value. A pair is always the post's b-tree (TokuMX: MMAPv1) over the
write-optimised engine; a claim names its own direction (claims.csv numerator_role), so a claim
whose numerator is the LSM or the fractal tree reads the pair's ratio upside down."""
import polars as pl
import pytest

from enginebench.paths import reference_dir

WRITE_OPTIMISED = ("lsm", "fractal")


def check_pairs_show_their_claims(view: pl.DataFrame, claims: pl.DataFrame) -> int:
    """Asserts each pair that names a claim shows that claim's ratios; returns how many did.
    Where the claim has no measured ratio (a stand-in the claim refuses), the pair must say why."""
    numerators = dict(pl.read_csv(reference_dir() / "claims.csv").select("id", "numerator_role").iter_rows())
    by_id = {row["id"]: row for row in claims.iter_rows(named=True)}
    checked = 0
    for pair in view.filter(pl.col("claim").fill_null("") != "").iter_rows(named=True):
        assert pair["claim"] in by_id, f"{pair['metric']}: names {pair['claim']}, which is not in this run's claims table"
        claim = by_id[pair["claim"]]
        post, ours = pair["the post's ratio"], pair["our ratio"]
        if numerators[pair["claim"]] in WRITE_OPTIMISED:
            post, ours = 1 / post, (1 / ours if ours else None)
        assert round(post, 2) == claim["published_ratio"], (pair["metric"], post, claim["published_ratio"])
        if claim["measured_ratio"] is None:
            assert ours is None or pair["note"], (pair["metric"], "shows a ratio the claim withholds, without saying why")
        else:
            assert ours == pytest.approx(claim["measured_ratio"]), (pair["metric"], ours, claim["measured_ratio"])
        checked += 1
    return checked
