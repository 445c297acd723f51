"""ADR-0106 D1, D2, D3 and D8 as executable scenarios against the real `li` (or `$LI_BIN`)."""

from pytest_bdd import scenarios

scenarios("d01_cli_surface.feature", "d02_version.feature", "d03_envelope.feature", "d08_exit_status.feature")
