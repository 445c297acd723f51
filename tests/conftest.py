"""Shared fixtures; every module in tests/steps/ is loaded as a pytest-bdd step plugin."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.model_stub import model_stub  # noqa: F401  (a fixture: a model-API stub for the real agent CLIs)
from tests.pg import pg_dsn  # noqa: F401  (a fixture: a fresh lionrun database on the test server)
from tests.slurm import slurm_conf  # noqa: F401  (a fixture: the test Slurm cluster's slurm.conf)

# CI shares its cores with load tests and services: an example's wall time there says nothing about
# the code (tests/unit/test_first_line.py once failed its 200 ms deadline at load 13), so under
# CI=true no example has a deadline and a slow data generation is no failure; locally the default.
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow])
if os.environ.get("CI") == "true":
    settings.load_profile("ci")

pytest_plugins = sorted(
    f"tests.steps.{path.stem}"
    for path in (pathlib.Path(__file__).parent / "steps").glob("*.py")
    if not path.name.startswith("_")
)


# Tags that are not statement ids; every statement id (and sub-id) of features/README.md's table is
# registered from that table, so a tag naming no statement fails collection under --strict-markers.
TAGS = {
    "cli": "scenarios that drive the real li executable (run against any li with LI_BIN)",
    "reaper": "the fenced orphan reaper (ADR-0107, R1-R6)",
    "consumer": "ADR-0106 consumer obligations (C1-C8)",
    "slow": "long load cases (CI runs them); select with -m slow, leave out with -m 'not slow'",
    **{f"D{n}": f"ADR-0106 decision D{n}" for n in range(1, 11)},
}


def pytest_configure(config: pytest.Config) -> None:
    """The one place markers are registered (the suite runs with --strict-markers)."""
    from tools.trace_report import requirements

    for name, text in TAGS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    for requirement in requirements():
        config.addinivalue_line("markers", f"{requirement.id}: {requirement.text}")


@pytest.fixture
def li_home(tmp_path: pathlib.Path) -> str:
    """An isolated `LI_HOME` for one test."""
    home = tmp_path / "li-home"
    home.mkdir()
    return str(home)


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads or writes the developer's real state or notify configuration."""
    monkeypatch.setenv("LI_HOME", str(tmp_path / "default-li-home"))
    monkeypatch.delenv("LI_NOTIFY_COMMAND", raising=False)
    monkeypatch.delenv("LI_STORE", raising=False)  # the filesystem store unless a test asks for another
    monkeypatch.setenv("NO_COLOR", os.environ.get("NO_COLOR", ""))
    from lionrun.entrypoints.container import set_container

    set_container(None)
    yield
    set_container(None)


@pytest.fixture(params=["memory", "fs"])
def world(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> object:
    """The same scenario against the in-memory and the real filesystem adapters, so they cannot drift."""
    from tests.worlds import make_world

    return make_world(request.param, str(tmp_path))


def pytest_sessionstart(session: pytest.Session) -> None:
    """Name the `li` this run drives in the JUnit report (a testsuite property), for tools/spec_report.py.

    Only the controlling process writes the report (pytest-xdist workers have none), so a run with
    `LI_BIN=/abs/path/li` is reported as that implementation's, whatever the report's environment.
    """
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - a pytest without the stash key: the report asks LI_BIN
        return
    xml = session.config.stash.get(xml_key, None)
    if xml is None:
        return
    from tests.support import li_bin

    try:
        xml.add_global_property("li_bin", li_bin())
    except RuntimeError:
        return
