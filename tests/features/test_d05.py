"""D5 — submit: features/d05_submit.feature; @cli scenarios drive the real `li`, the rest run on both worlds."""

import pytest
from pytest_bdd import scenarios

scenarios("d05_submit.feature")


def _on_both_worlds_unless_cli() -> None:
    for name, test in list(globals().items()):
        marks = {mark.name for mark in getattr(test, "pytestmark", [])}
        if name.startswith("test_") and "cli" not in marks:
            pytest.mark.usefixtures("world")(test)


_on_both_worlds_unless_cli()
