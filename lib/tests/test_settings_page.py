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
