"""Which store `li` uses: LI_STORE, else `store` in $LI_HOME/config.toml, else the filesystem store."""

from __future__ import annotations

from pathlib import Path

from lionrun.entrypoints.container import store_kind
from lionrun.entrypoints.settings import from_environment

URL = "postgresql://li@db.example:5432/lionrun"


def test_nothing_set_is_the_filesystem_store(tmp_path: Path) -> None:
    settings = from_environment({"LI_HOME": str(tmp_path)})
    assert settings["store"] == "" and store_kind("", settings["store"]) == "plain"


def test_config_toml_names_a_shared_store(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(f'store = "{URL}"\nnotify = ["true"]\n')
    settings = from_environment({"LI_HOME": str(tmp_path)})
    assert settings["store"] == URL and store_kind("", settings["store"]) == "postgresql"


def test_li_store_wins_over_config_toml(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('store = "postgresql://other/db"\n')
    assert from_environment({"LI_HOME": str(tmp_path), "LI_STORE": URL})["store"] == URL


def test_a_config_that_cannot_be_parsed_names_no_store_here(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_bytes(b'store = "unterminated\n\xff')
    assert from_environment({"LI_HOME": str(tmp_path)})["store"] == ""


def test_a_config_without_the_word_is_not_parsed(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("this is not toml at all [[[\n")
    assert from_environment({"LI_HOME": str(tmp_path)})["store"] == ""


def test_the_shared_stores_timeouts_and_outage_come_from_the_environment(tmp_path: Path) -> None:
    from lionrun.entrypoints.container import Container
    from lionrun.entrypoints.settings import DEFAULTS

    assert (DEFAULTS["store_connect_timeout"], DEFAULTS["store_statement_timeout"], DEFAULTS["store_outage"]) == (
        5.0, 30.0, 300.0)
    settings = from_environment({"LI_HOME": str(tmp_path), "LI_STORE": URL, "LI_STORE_CONNECT_TIMEOUT": "2",
                                 "LI_STORE_STATEMENT_TIMEOUT": "0.5", "LI_STORE_OUTAGE": "0"})
    assert (settings["store_connect_timeout"], settings["store_statement_timeout"], settings["store_outage"]) == (
        2.0, 0.5, 0.0)
    container = Container()
    container.config.from_dict(settings)
    store = container.core.store()
    assert (store.connect_timeout, store.statement_timeout_ms, store.outage) == (2, 500, 0.0)
    assert container.core.run_changes().connect_timeout == 2
    assert container.submit.work().outage.bound == 0.0
    for unusable in ("0", "-1", "nan", "inf", "soon", "1e9"):
        for name in ("LI_STORE_CONNECT_TIMEOUT", "LI_STORE_STATEMENT_TIMEOUT"):
            assert name.lower()[3:] not in from_environment({"LI_HOME": str(tmp_path), name: unusable})
    for unusable in ("-1", "nan", "inf", "soon", "1e9"):
        assert "store_outage" not in from_environment({"LI_HOME": str(tmp_path), "LI_STORE_OUTAGE": unusable})
