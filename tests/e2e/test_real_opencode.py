"""The real OpenCode CLI through the real `li`, against the model stub (the CLI added as
one module, domain/agents/opencode.py), as tests/e2e/test_real_agents.py drives the other three.

OpenCode is pointed at the stub through its built-in Anthropic provider (tests/agent_clis.py
`agent_env`); li launches it with its own argv, the prompt on stdin. Skipped locally without the
CLIs of tools/agent_clis.sh, failed in CI.
"""

from __future__ import annotations

import os
import pathlib

import pytest

from tests import agent_clis
from tests.agent_clis import PROMPT, Agents, agents, one_line_with
from tests.model_stub import error, text, tool
from tests.support import machine

__all__ = ["agents"]  # a fixture, used by name

pytestmark = pytest.mark.timeout(300)

CLI = agent_clis.OPENCODE


@pytest.fixture(autouse=True)
def _opencode_installed() -> None:
    agent_clis.cli_bin(CLI)


def test_an_answer_is_recorded_with_its_usage_and_session_and_shown_to_the_person(agents: Agents) -> None:
    ended = agents.run(CLI, steps=(text("Hello from the stub."),))
    assert (ended.data["status"], ended.data["outcome"], ended.data["reason_code"]) == ("completed", "succeeded", None)
    assert ended.response is not None and ended.response.strip() == "Hello from the stub."
    tokens = ended.data["usage"]["value"]["tokens"]["value"]
    assert (tokens["input_tokens"], tokens["output_tokens"]) == (12, 5)
    assert "Hello from the stub." in ended.transcript and ended.errors() == []
    main = [r for r in ended.requests if r.main]
    assert main and all(agent_clis.KEY in " ".join(r.headers.values()) for r in main)  # li passed the key on
    carried = {event["sessionID"] for event in ended.events() if "sessionID" in event}
    assert len(carried) == 1 and ended.data["session_id"] == carried.pop()  # the CLI's own session id


def test_a_refused_key_ends_provider_auth_said_once(agents: Agents) -> None:
    ended = agents.run(CLI, steps=(error(401),))
    assert (ended.data["status"], ended.data["reason_code"]) == ("failed", "provider_auth")
    assert ended.response is None
    one_line_with(ended, "invalid x-api-key")


def test_full_lets_its_shell_tool_run_in_the_work_folder(agents: Agents) -> None:
    # OpenCode works in $PWD, not in the folder it was started in: li is started here with a PWD
    # that names another folder (a stale one, as a harness may pass on), and the leg still works
    # in the run's folder because li sets the leg's PWD to where it starts it.
    decoy = agents.tmp / "decoy"
    decoy.mkdir()
    ended = agents.run(CLI, "--permission-mode", "full", extra_env={"PWD": str(decoy)},
                       steps=(tool("echo tool-ran > marker.txt"), text("Wrote marker.txt.")))
    assert (ended.data["status"], ended.data["outcome"]) == ("completed", "succeeded")
    assert (ended.workspace / "marker.txt").read_text().strip() == "tool-ran"
    assert not (decoy / "marker.txt").exists()
    assert "echo tool-ran > marker.txt" in ended.transcript


def test_a_mode_it_has_no_flag_for_is_refused_at_submit(agents: Agents) -> None:
    for mode in ("read-only", "edits"):  # its default run and its plan agent both run the shell
        refused = machine("agent", "--detach", "--permission-mode", mode, CLI, PROMPT, home=agents.home,
                          env=agents.env(CLI), cwd=str(agents.workspace)).error
        assert refused["kind"] == "invalid_input" and refused["detail"]["reason_code"] == "provider_refused", refused
    assert not (pathlib.Path(agents.home) / "runs").exists() or not os.listdir(pathlib.Path(agents.home) / "runs")
