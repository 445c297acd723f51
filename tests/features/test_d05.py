"""D5 — submit: features/d05_submit.feature; @cli scenarios drive the real `li`, the rest run on both worlds."""

from pytest_bdd import scenarios

from tests.worlds import on_both_worlds_unless_cli

scenarios("d05_submit.feature")


on_both_worlds_unless_cli(globals())
