"""The real Claude Code, Codex and Gemini CLIs through the real `li`, against the model stub.

li launches each CLI (its own argv, the prompt on stdin); the test only arranges what a person's
machine would hold: the CLIs on PATH (tools/agent_clis.sh), a HOME of the test's own with each
CLI's settings pointing it at the stub (tests/agent_clis.py), and the stub's script of what the
"model" answers (tests/model_stub.py). Each case is one start of one CLI; the retries each CLI
makes on its own are bounded to one (their documented knobs) so a failure ends in seconds,
except where the case is about the CLI's own retries.

Every case appends `cli, case, status, outcome, reason, seconds` to build/real-agents.tsv, the
table the issue's closing note asks for (the test asserts no wall time).
"""

from __future__ import annotations

import os
import pathlib
import time
from datetime import UTC, datetime

import psutil
import pytest

from tests import agent_clis
from tests.agent_clis import PROMPT, Agents, agents, members, one_line_with
from tests.model_stub import (
    Step,
    cut,
    empty,
    error,
    hang,
    overloaded,
    rate_limited,
    refused_url,
    text,
    tool,
)
from tests.support import machine

__all__ = ["agents"]  # a fixture, used by name

pytestmark = pytest.mark.timeout(240)

CLIS = ("claude", "codex", "gemini")
IDLE = "5"  # --idle-timeout for the cases that hang: short, the watchdog is what they prove
SESSION = {"claude": "session_id", "codex": "thread_id", "gemini": "session_id"}


# --- answers ------------------------------------------------------------------------------------

# What each CLI reports as the run's tokens for one stub answer of 12 in / 5 out. Gemini's totals
# add its model router's own request (the stub answers it with 1 in / 1 out).
TOKENS = {"claude": (12, 5), "codex": (12, 5), "gemini": (13, 6)}


@pytest.mark.parametrize("cli", CLIS)
def test_an_answer_is_recorded_with_its_usage_and_session_and_shown_to_the_person(agents: Agents, cli: str) -> None:
    ended = agents.run(cli, steps=(text("Hello from the stub."),))
    assert (ended.data["status"], ended.data["outcome"], ended.data["reason_code"]) == ("completed", "succeeded", None)
    assert ended.response is not None and ended.response.strip() == "Hello from the stub."
    tokens = ended.data["usage"]["value"]["tokens"]["value"]
    assert (tokens["input_tokens"], tokens["output_tokens"]) == TOKENS[cli]
    assert "Hello from the stub." in ended.transcript and ended.errors() == []
    main = [r for r in ended.requests if r.main]
    assert main and all(agent_clis.KEY in " ".join(r.headers.values()) for r in main)  # li passed the key on
    carried = {event[SESSION[cli]] for event in ended.events() if SESSION[cli] in event}
    assert len(carried) == 1 and ended.data["session_id"] == carried.pop()  # the CLI's own session id


@pytest.mark.parametrize("cli", CLIS)
def test_the_model_named_to_li_is_the_model_the_cli_asks_for(agents: Agents, cli: str) -> None:
    ended = agents.run(cli, steps=(text("Named."),), model="stub-model-x")
    assert ended.data["outcome"] == "succeeded"
    main = [r for r in ended.requests if r.main]
    assert main and {r.model for r in main} == {"stub-model-x"}
    assert ended.data["model"] == f"{cli}/stub-model-x"


# --- permission modes: the model asks to run `touch li-marker`; each mode lets it or not ----------

MARKER_WRITTEN = {
    ("claude", "read-only"): False, ("claude", "edits"): True, ("claude", "full"): True,
    ("codex", "read-only"): False, ("codex", "edits"): True, ("codex", "full"): True,
    # Gemini's auto_edit withholds its shell tool in headless runs (file edits only).
    ("gemini", "read-only"): False, ("gemini", "edits"): False, ("gemini", "full"): True,
}


@pytest.mark.parametrize("cli, mode", sorted(MARKER_WRITTEN))
def test_each_permission_mode_lets_the_clis_shell_tool_write_or_not(agents: Agents, cli: str, mode: str) -> None:
    steps = (tool("touch li-marker"), text("Tried."))
    if cli == "claude" and mode == "full" and os.geteuid() == 0:
        # Claude refuses --dangerously-skip-permissions as root: li says so at submit, before a run exists.
        agents.stub.script(*steps)
        refused = machine("agent", "--detach", "--permission-mode", "full", "claude", PROMPT, home=agents.home,
                          env=agents.env("claude"), cwd=str(agents.workspace)).error
        assert refused["kind"] == "invalid_input" and "root" in refused["message"], refused
        assert not pathlib.Path(agents.home, "runs").exists() or not os.listdir(pathlib.Path(agents.home, "runs"))
        return
    ended = agents.run(cli, "--permission-mode", mode, steps=steps)
    assert (ended.data["status"], ended.data["outcome"]) == ("completed", "succeeded"), ended.transcript
    assert (ended.workspace / "li-marker").exists() is MARKER_WRITTEN[(cli, mode)], ended.transcript
    assert len([r for r in ended.requests if r.main]) == 2  # the tool's result went back to the model


def test_claude_full_runs_its_tool_as_root_where_claude_is_told_it_is_sandboxed(agents: Agents) -> None:
    """IS_SANDBOX=1 is Claude Code's own switch that lets root skip its permission checks."""
    ended = agents.run("claude", "--permission-mode", "full", steps=(tool("touch li-marker"), text("Done.")),
                       extra_env={"IS_SANDBOX": "1"})
    assert (ended.data["status"], ended.data["outcome"]) == ("completed", "succeeded"), ended.transcript
    assert (ended.workspace / "li-marker").exists()


# --- every vendor failure, named ----------------------------------------------------------------

FAILURES: dict[str, tuple[Step, str]] = {
    "auth": (error(401), "provider_auth"),
    "forbidden": (error(403), "provider_auth"),
    "rate_limited": (rate_limited(reset_in=3600, retry_after=1), "provider_rate_limited"),
    "server_error": (error(500), "provider_overloaded"),
    "overloaded": (overloaded(), "provider_overloaded"),
    "empty": (empty(), "empty_answer"),
    "cut": (cut(), "provider_unreachable"),
}
# What the person's one error line says, per CLI and case (the vendor's own words).
SAYS = {
    ("claude", "auth"): "Invalid API key", ("claude", "forbidden"): "403",
    ("claude", "rate_limited"): "429", ("claude", "server_error"): "500", ("claude", "overloaded"): "529",
    ("claude", "cut"): "Connection to the API was lost",
    ("codex", "auth"): "401 Unauthorized", ("codex", "forbidden"): "403 Forbidden",
    ("codex", "rate_limited"): "429", ("codex", "server_error"): "high demand",
    ("codex", "overloaded"): "at capacity", ("codex", "cut"): "stream disconnected",
    ("gemini", "auth"): "UNAUTHENTICATED", ("gemini", "forbidden"): "PERMISSION_DENIED",
    ("gemini", "rate_limited"): "exceeded your current quota", ("gemini", "server_error"): "INTERNAL",
    ("gemini", "overloaded"): "overloaded",
    ("gemini", "cut"): "Incomplete JSON",
}


@pytest.mark.parametrize("cli, case", [(cli, case) for cli in CLIS for case in FAILURES])
def test_each_vendor_failure_ends_failed_with_its_reason_and_one_line_for_the_person(
        agents: Agents, cli: str, case: str) -> None:
    step, reason = FAILURES[case]
    began = datetime.now(UTC)
    ended = agents.run(cli, steps=(step,))
    assert (ended.data["outcome"], ended.data["reason_code"]) == ("failed", reason), ended.transcript
    assert ended.data["status"] in ("failed", "completed_empty")
    assert ended.data["status"] == "completed_empty" or ended.data["exit_code"] != 0
    assert f"li runner: {ended.data['status']} ({reason})" in ended.said.splitlines()
    if case != "empty":  # the vendor's own words, once, marked as an error
        one_line_with(ended, SAYS[(cli, case)])
    assert ended.response is None  # response.md only ever holds an answer the stream delivered
    if case == "rate_limited":
        retry_at = ended.data["retry_at"]
        if cli == "gemini":  # Gemini names how long to wait (RetryInfo 1 s): the moment is that far on
            assert retry_at is not None
            assert -5 < (datetime.fromisoformat(retry_at) - began).total_seconds() < ended.seconds + 5, retry_at
        else:  # with an API key neither Claude's nor Codex's stream names a reset: none is made up
            assert retry_at is None


def test_claude_with_its_endpoint_refused_ends_provider_unreachable(agents: Agents) -> None:
    ended = agents.run("claude", url=refused_url())
    assert (ended.data["outcome"], ended.data["reason_code"]) == ("failed", "provider_unreachable")
    one_line_with(ended, "Unable to connect")


def test_gemini_in_an_untrusted_folder_ends_provider_refused_and_says_how_to_trust_it(agents: Agents) -> None:
    ended = agents.run("gemini", steps=(text("never asked"),), trusted=False)
    assert (ended.data["outcome"], ended.data["reason_code"]) == ("failed", "provider_refused")
    said = [line for line in ended.transcript.splitlines() if "not running in a trusted directory" in line]
    assert len(said) == 1 and "GEMINI_CLI_TRUST_WORKSPACE" in said[0], ended.transcript  # and how to trust it
    assert not [r for r in ended.requests if r.main]


def test_a_codex_run_through_transient_500s_ends_succeeded(agents: Agents) -> None:
    # Each 500 is retried on the stream, as "Reconnecting... N/4" (no silent request retries).
    ended = agents.run("codex", steps=(error(500), error(500), text("Recovered.")), retries=4, request_retries=0)
    assert (ended.data["status"], ended.data["outcome"], ended.data["reason_code"]) == ("completed", "succeeded", None)
    assert ended.response is not None and ended.response.strip() == "Recovered."
    assert ended.errors() == [], ended.transcript  # a retry that recovered is no error
    retries = [line for line in ended.transcript.splitlines() if "1/4" in line or "2/4" in line]
    assert len(retries) == 2, ended.transcript  # the person sees the CLI retrying, each time


# --- no silent hang -----------------------------------------------------------------------------

@pytest.mark.parametrize("cli", CLIS)
def test_an_unreachable_endpoint_ends_timed_out_by_the_idle_watchdog(agents: Agents, cli: str) -> None:
    ended = agents.run(cli, "--idle-timeout", IDLE, url=refused_url(), retries=None, limit=200)
    assert (ended.data["status"], ended.data["reason_code"]) == ("timed_out", "idle_timeout"), ended.transcript
    assert "li runner: timed_out (idle_timeout)" in ended.said.splitlines()  # the li log says why
    assert members(ended.run_id) == []


@pytest.mark.parametrize("cli", CLIS)
def test_a_model_that_never_answers_ends_timed_out_by_the_idle_watchdog(agents: Agents, cli: str) -> None:
    ended = agents.run(cli, "--idle-timeout", IDLE, steps=(hang(),))
    assert (ended.data["status"], ended.data["reason_code"]) == ("timed_out", "idle_timeout"), ended.transcript
    assert "li runner: timed_out (idle_timeout)" in ended.said.splitlines()
    assert ended.response is None and members(ended.run_id) == []


# --- the run is every process its work started ----------------------------------------------------

RUNS_TOOLS = {"claude": "edits", "codex": "full", "gemini": "full"}
# The tool sleeps, then writes late.txt. A kill comes as soon as the tool runs; a --timeout of 20 s
# from the run's start comes after the tool started (each CLI reaches it in under 15 s on a busy
# 2-core node) and long before its 30 s sleep ends.
TOOL_SLEEP = {"kill": 8.0, "timeout": 30.0}
TIMEOUT = "20"


@pytest.mark.parametrize("cli, how", [(cli, how) for cli in CLIS for how in ("kill", "timeout")])
def test_a_kill_or_timeout_stops_the_agents_own_tools(agents: Agents, cli: str, how: str) -> None:
    token = f"{TOOL_SLEEP[how] + (sum(map(ord, cli + how)) % 997) / 1000:.3f}"  # a sleep only this test's tool runs
    # After the tool the model never answers: a CLI that yields a long command to the model (Codex's
    # exec_command does after 10 s) then waits, and the end comes from li, never from the CLI.
    steps = (tool(f"sleep {token} && echo late > late.txt"), hang())
    words = ["--permission-mode", RUNS_TOOLS[cli]] + (["--timeout", TIMEOUT] if how == "timeout" else [])
    began = time.monotonic()
    run_id, env = agents.submit(cli, *words, steps=steps)
    deadline = time.monotonic() + 60
    while not any(f"sleep {token}" in " ".join(_cmdline(p)) for p in members(run_id, token)):
        assert time.monotonic() < deadline, "the agent never started its tool"
        status = machine("job", "status", run_id, home=agents.home, env=env).data
        assert not status["terminal"], f"the run ended before its tool started: {status['status']}"
        time.sleep(0.2)
    tool_began = time.monotonic()
    if how == "kill":
        assert machine("job", "kill", run_id, home=agents.home, env=env).data["action"] == "signalled"
    ended = agents.finish(cli, run_id, env, began)
    alive = members(run_id, token)
    assert alive == [], [(p.pid, _cmdline(p)) for p in alive]  # nothing of the run outlives its end
    assert ended.data["status"] == ("cancelled" if how == "kill" else "timed_out")
    time.sleep(max(0.0, tool_began + TOOL_SLEEP[how] + 2 - time.monotonic()))
    assert not (ended.workspace / "late.txt").exists()  # the tool never got to write


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []
