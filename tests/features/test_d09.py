"""features/d09_notify.feature: the terminal notice (ADR-0106 D9), on both worlds."""

import pytest
from pytest_bdd import scenarios

pytestmark = pytest.mark.usefixtures("world")

scenarios("d09_notify.feature")
