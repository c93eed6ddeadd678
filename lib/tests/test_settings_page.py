"""docs/settings.md is what `python -m enginebench settings` prints: every option the named
settings give a value, under 2015 and today, each value with its source."""
from enginebench import settings
from enginebench.paths import repo_root


def test_the_page_is_the_settings_as_the_code_has_them():
    page = (repo_root() / "docs" / "settings.md").read_text()
    assert page == settings.settings_page(), "run: python -m enginebench settings > docs/settings.md"


def test_every_value_names_its_source():
    for setting, engines in settings.PROFILES.items():
        for engine, options in engines.items():
            for option in options:
                assert settings.SOURCES.get((setting, engine, option)), (setting, engine, option)
    table = settings.markdown_table()
    assert "| rocksdb | `config_string` |" in table and "| wiredtiger | `insert_group` | 1 | 64 |" in table


def test_2015_runs_the_release_its_post_names_and_today_runs_todays():
    """linkbench_cached's post ran MongoDB 3.2.0rc0: under `2015` its WiredTiger systems run that
    tree (post_settings.version), with the tree's own defaults instead of 11.3.1's emulation of
    them; a system that names its own release keeps it under either setting; `today` runs 11.3.1
    with MongoDB 8.0's settings."""
    from enginebench.params import load_params

    def wiredtiger(sets):
        return {s["label"]: s["options"] for s in load_params("linkbench_cached", "default", sets)["systems"]
                if s["engine"] == "wiredtiger"}
    of_2015, of_today = wiredtiger([]), wiredtiger(["settings=today"])
    assert of_2015["wt.op1"]["version"] == "mongodb-3.2.0-rc1" and of_2015["wt307.op1"]["version"] == "mongodb-3.0.7"
    assert of_2015["wt.op1"]["eviction_dirty_target"] is None and of_2015["wt.op1"]["journal_commit_ms"] is None
    assert of_2015["wt.op1"]["checkpoint_s"] == 50    # the post's 600 s, in its measured phase's proportion
    assert of_today["wt.op1"]["version"] == "11.3.1" and of_today["wt.op1"]["eviction_threads_min"] == 4
    # A post's tree runs as its own mongod ran it under either setting (8.0's per-table logging,
    # for one, is no option of 2.5.3's).
    tree_today = of_today["wt307.op1"]
    assert (tree_today["unlogged_user_tables"], tree_today["insert_group"], tree_today["session_max"]) == (False, 1, 20000)
    # A release set by hand wins over the post's.
    assert wiredtiger(["systems[wt.op1].options.version=11.3.1"])["wt.op1"]["eviction_dirty_target"] == 80
