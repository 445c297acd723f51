"""D4, D6, D7 — reads: features/d04_derivations, d06_lifecycle, d07_availability; non-@cli on both worlds."""

from pytest_bdd import scenarios

from tests.worlds import on_both_worlds_unless_cli

scenarios("d04_derivations.feature", "d06_lifecycle.feature", "d07_availability.feature")


on_both_worlds_unless_cli(globals())
