"""Steps for the agent ends of features/d04_derivations.feature (issue 24): the real `li` over a
fake agent CLI that replays a stream the real CLI gave (tests/fixtures/transcripts/<cli>/recorded)."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from pytest_bdd import given, parsers, then, when

from tests.support import machine

FAKES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fakes", "bin")


@pytest.fixture
def agent_end(tmp_path: Any) -> dict[str, Any]:
    home = tmp_path / "li-home-agent-ends"
    home.mkdir()
    return {"home": str(home), "cwd": str(tmp_path)}


@given(parsers.parse('an agent CLI "{cli}" that replays its recorded "{case}" stream and exit'))
def recorded_cli(agent_end: dict[str, Any], cli: str, case: str) -> None:
    agent_end.update(cli=cli, env={"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}",
                                   f"FAKE_{cli.upper()}_MODE": f"recorded:{case}"})


@given(parsers.parse('an agent CLI "{cli}" that replays its recorded "{case}" stream and exits 0'))
def recorded_cli_exit_0(agent_end: dict[str, Any], cli: str, case: str) -> None:
    recorded_cli(agent_end, cli, case)
    agent_end["env"]["FAKE_EXIT"] = "0"
    agent_end["env"]["FAKE_SLOW_SECONDS"] = "0"  # it exits 0 at the stream's end, not after the wait it recorded


@when("li runs an agent on it and the run ends")
def run_it(agent_end: dict[str, Any]) -> None:
    home = agent_end["home"]
    run_id = machine("agent", "--detach", "--cwd", agent_end["cwd"], agent_end["cli"], "Say hello.", home=home,
                     env=agent_end["env"]).data["run_id"]
    deadline = time.monotonic() + 30
    while True:
        data = machine("job", "status", run_id, home=home).data
        if data["terminal"]:
            break
        assert time.monotonic() < deadline, data
        time.sleep(0.1)
    agent_end.update(run_id=run_id, status=data)


@then(parsers.parse('the run ended with status "{status}", outcome "{outcome}" and reason "{reason}"'))
def ended_with(agent_end: dict[str, Any], status: str, outcome: str, reason: str) -> None:
    data = agent_end["status"]
    assert (data["status"], data["outcome"], data["reason_code"]) == (status, outcome, reason), data


@then(parsers.parse('the run ended with status "{status}", outcome "{outcome}" and no reason'))
def ended_with_no_reason(agent_end: dict[str, Any], status: str, outcome: str) -> None:
    data = agent_end["status"]
    assert (data["status"], data["outcome"], data["reason_code"]) == (status, outcome, None), data


@then("the run has no response.md")
def no_response(agent_end: dict[str, Any]) -> None:
    assert not os.path.exists(os.path.join(agent_end["home"], "runs", agent_end["run_id"], "artifacts",
                                           "response.md"))
