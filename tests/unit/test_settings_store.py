"""Which store `li` uses: LI_STORE, else `store` in $LI_HOME/config.toml, else the filesystem store."""

from __future__ import annotations

from pathlib import Path

from entrypoints.settings import from_environment
from entrypoints.wiring.core import store_kind

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
