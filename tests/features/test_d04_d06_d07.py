"""D4, D6, D7 — reads: features/d04_derivations, d06_lifecycle, d07_availability; non-@cli on both worlds."""

import pytest
from pytest_bdd import scenarios

scenarios("d04_derivations.feature", "d06_lifecycle.feature", "d07_availability.feature")


def _on_both_worlds_unless_cli() -> None:
    """@cli scenarios drive the real `li` once; every other scenario runs on the memory and fs worlds."""
    for name, test in list(globals().items()):
        marks = {mark.name for mark in getattr(test, "pytestmark", [])}
        if name.startswith("test_") and "cli" not in marks:
            pytest.mark.usefixtures("world")(test)


_on_both_worlds_unless_cli()
