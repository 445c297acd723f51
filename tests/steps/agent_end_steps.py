"""Steps for the agent ends of features/d04_derivations.feature: the real `li` over a
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


@given(parsers.parse('an agent CLI "{cli}" that replays its recorded "{case}" stream slowly'))
def recorded_cli_slowly(agent_end: dict[str, Any], cli: str, case: str) -> None:
    recorded_cli(agent_end, cli, case)
    agent_end["env"]["FAKE_TRICKLE_SECONDS"] = "0.3"  # an event every 0.3 s: each usage arrives apart


@when(parsers.parse('li runs an agent on it with "{flags}" and the run ends'))
def run_it_with(agent_end: dict[str, Any], flags: str) -> None:
    run_it(agent_end, tuple(flags.split()))


@when(parsers.parse('a caller waits on the run li submits on it with "{flags}"'))
def wait_on_it(agent_end: dict[str, Any], flags: str) -> None:
    run_id = machine("agent", "--detach", "--cwd", agent_end["cwd"], *flags.split(), agent_end["cli"], "Say hello.",
                     home=agent_end["home"], env=agent_end["env"]).data["run_id"]
    agent_end["wait"] = machine("job", "wait", "--max-wait", "30", "--poll-interval", "0.2", run_id,
                                home=agent_end["home"]).data


@then(parsers.parse('the wait entry says terminal true, outcome "{outcome}" and reason "{reason}"'))
def wait_entry_says(agent_end: dict[str, Any], outcome: str, reason: str) -> None:
    entry = agent_end["wait"]["runs"][0]
    assert (entry["terminal"], entry["outcome"], entry["reason_code"]) == (True, outcome, reason), entry


@then(parsers.parse("the run's budget says {spent:d} tokens spent of {limit:d}, the tokens limit exceeded"))
def budget_says(agent_end: dict[str, Any], spent: int, limit: int) -> None:
    budget = agent_end["status"]["budget"]
    assert (budget["spent_tokens"], budget["max_tokens"], budget["exceeded"]) == (spent, limit, "tokens"), budget


@then("the run's end was written by its runner, and nothing of its work is left")
def ended_by_runner(agent_end: dict[str, Any]) -> None:
    import json

    with open(os.path.join(agent_end["home"], "runs", agent_end["run_id"], "record.json")) as record:
        assert json.load(record)["terminal_source"] == "runner"
    from tests.agent_clis import members

    # li's own last process (the end's writer) may still be on its way out when the record says
    # the end: nothing carrying the run's id lives on within 5 s (as a kill's scenario allows 10)
    deadline = time.monotonic() + 5
    while (left := members(agent_end["run_id"])) != []:
        assert time.monotonic() < deadline, [(p.pid, p.name()) for p in left]
        time.sleep(0.05)


@when("li runs an agent on it and the run ends")
def run_it(agent_end: dict[str, Any], flags: tuple[str, ...] = ()) -> None:
    home = agent_end["home"]
    run_id = machine("agent", "--detach", "--cwd", agent_end["cwd"], *flags, agent_end["cli"], "Say hello.", home=home,
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
