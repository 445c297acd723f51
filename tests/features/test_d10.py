"""D10 — bounded observation: features/d10_wait.feature; in-process scenarios run on both worlds."""

import pytest
from pytest_bdd import scenarios

scenarios("d10_wait.feature")


def _on_both_worlds_unless_cli() -> None:
    """@cli scenarios drive the real `li` once; every other scenario runs on the memory and fs worlds."""
    for name, test in list(globals().items()):
        marks = {mark.name for mark in getattr(test, "pytestmark", [])}
        if name.startswith("test_") and "cli" not in marks:
            pytest.mark.usefixtures("world")(test)


_on_both_worlds_unless_cli()
