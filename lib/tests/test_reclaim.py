"""Detecting a host that pages out idle memory on its own (results/reclaim.py)."""
from enginebench.results.reclaim import proactive_pageout


def _scheme(root, action="pageout", age="6", aggr_us="5000000", filters=()):
    context = root / "0" / "contexts" / "0"
    (context / "monitoring_attrs" / "intervals").mkdir(parents=True)
    (root / "0" / "state").write_text("on\n")
    (context / "operations").write_text("paddr\n")
    (context / "monitoring_attrs" / "intervals" / "aggr_us").write_text(aggr_us)
    scheme = context / "schemes" / "0"
    (scheme / "access_pattern" / "age").mkdir(parents=True)
    (scheme / "quotas").mkdir()
    (scheme / "action").write_text(action)
    (scheme / "access_pattern" / "age" / "min").write_text(age)
    (scheme / "quotas" / "bytes").write_text("2147483648")
    (scheme / "quotas" / "reset_interval_ms").write_text("1000")
    for i, (kind, matching, allow) in enumerate(filters):
        flt = scheme / "ops_filters" / str(i)
        flt.mkdir(parents=True)
        (flt / "type").write_text(kind)
        (flt / "matching").write_text(matching)
        (flt / "allow").write_text(allow)
    return root


def test_pageout_of_file_pages_is_found_with_its_idle_age(tmp_path):
    # As on the VM this was developed on: anonymous memory left alone, unmapped file pages paged out.
    root = _scheme(tmp_path, filters=[("anon", "Y", "N"), ("unmapped", "Y", "Y")])
    assert proactive_pageout(root) == [{"mechanism": "DAMON pageout", "operations": "paddr",
                                        "min_idle_s": 30.0, "quota_bytes_per_s": 2147483648}]


def test_schemes_that_spare_the_page_cache_or_do_not_page_out_are_not_reported(tmp_path):
    assert proactive_pageout(_scheme(tmp_path / "a", filters=[("anon", "N", "N")])) == []
    assert proactive_pageout(_scheme(tmp_path / "b", action="stat")) == []
    assert proactive_pageout(tmp_path / "absent") == []


def test_the_report_says_on_top_that_the_page_cache_is_not_kept(tmp_path):
    from types import SimpleNamespace

    from enginebench.report.html import banner
    manifest = {"run_id": "r", "experiment": "linkbench_cached", "scale": "smoke", "status": "complete",
                "host": {"proactive_reclaim": [{"mechanism": "DAMON pageout", "min_idle_s": 30.0}]}}
    text = banner(SimpleNamespace(manifest=manifest, systems=[]))
    assert "evicts page-cache pages idle for 30 s" in text and "DAMON pageout" in text
    manifest["host"]["proactive_reclaim"] = []
    assert "evicts" not in banner(SimpleNamespace(manifest=manifest, systems=[]))
