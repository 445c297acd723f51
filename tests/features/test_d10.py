"""D10 — bounded observation: features/d10_wait.feature; in-process scenarios run on both worlds."""

from pytest_bdd import scenarios

from tests.worlds import on_both_worlds_unless_cli

scenarios("d10_wait.feature")


on_both_worlds_unless_cli(globals())
