"""Slow load cases run only when asked for (`pytest -m slow tests/load`), so CI stays within its limit."""

from __future__ import annotations

import pathlib

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "slow" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="slow load case: run it alone with `.venv/bin/pytest -m slow tests/load`")
    here = pathlib.Path(__file__).parent
    for item in items:
        if item.get_closest_marker("slow") is not None and here in item.path.parents:
            item.add_marker(skip)
