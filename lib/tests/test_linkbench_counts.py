"""The two count semantics of LinkBench (`counts:`) as the params and the report name them. What
each semantics writes per operation, and what the consistency check finds after it, is checked on
the runner's operations (lib/native/tests/linkbench_counts.rs). `linkbenchx` follows LinkbenchX's
MongoDB store (Percona-Lab/linkbenchX at 84aeea1,
src/main/java/com/percona/LinkBench/LinkStoreMongoDBv2.java); `exact` follows LinkBench's MySQL
store."""
import pytest

from enginebench.families.linkbench.params import Params


def test_params_default_to_the_posts_counts_and_refuse_others():
    assert Params(maxid1=10).counts == "linkbenchx"
    with pytest.raises(ValueError, match="linkbenchx"):
        Params(maxid1=10, counts="mysql")


def test_the_report_names_exact_counts_as_a_departure_from_the_post():
    from enginebench.fidelity import departures
    from enginebench.params import load_params
    params = load_params("linkbench_cached", "smoke")
    assert params["workload"]["counts"] == "linkbenchx" and departures(params, "embedded") == []
    params["workload"]["counts"] = "exact"
    (line,) = departures(params, "embedded")
    assert line.startswith("Count rows kept exactly (counts: exact")
