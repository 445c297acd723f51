"""features/reaper.feature: the fenced orphan reaper, on both worlds (in-memory and filesystem)."""

import pytest
from pytest_bdd import scenarios

pytestmark = pytest.mark.usefixtures("world")

scenarios("reaper.feature")
