"""Fixtures of the adversary suite: one real finished run per worker, and a canary arena per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adversary.harness import Arena, Template, make_template


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """A real run of `sh 'echo adversary-template; exit 3'`, finished; arenas clone its folder."""
    return make_template(tmp_path_factory.mktemp("adversary-template"))


@pytest.fixture
def arena(tmp_path: Path, template: Template) -> Iterator[Arena]:
    made = Arena(tmp_path / "arena", template).setup()
    try:
        yield made
    finally:
        made.close()
