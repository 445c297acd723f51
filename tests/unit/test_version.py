"""The version has one home, pyproject.toml; `li` reads it from the installed package's metadata."""

from __future__ import annotations

import importlib.metadata
import pathlib
import tomllib

from lionrun.entrypoints import version as module
from tests.support import REPO


def test_the_version_is_the_installed_metadatas_and_pyprojects() -> None:
    with open(pathlib.Path(REPO) / "pyproject.toml", "rb") as handle:
        declared = tomllib.load(handle)["project"]["version"]
    assert module.version() == importlib.metadata.version("lionrun") == declared


def test_a_dist_info_folder_is_read_for_its_version_field(tmp_path: pathlib.Path) -> None:
    (tmp_path / "lionrun-9.8.7.dist-info").mkdir()
    (tmp_path / "lionrun-9.8.7.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: lionrun\nVersion: 9.8.7\n\nVersion: not a header\n")
    (tmp_path / "lionrunner-1.0.dist-info").mkdir()
    assert module._from_folder(str(tmp_path)) == "9.8.7"
    assert module._from_folder(str(tmp_path / "missing")) is None


def test_without_any_metadata_the_version_says_unknown(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(module.sys, "path", [str(tmp_path)])
    monkeypatch.setattr(module, "DISTRIBUTION", "lionrun-never-installed")
    assert module.version() == module.UNKNOWN
