"""With the real Claude Code CLI against the model stub (as tests/e2e/test_real_agents.py
runs it): retries by policy, a token budget counted from its stream as it arrives, and approvals
under --permission-mode ask (the request listed, approved, denied, timed out)."""

from __future__ import annotations

import json
import time
from datetime import datetime

import pytest

from tests.agent_clis import Agents, agents
from tests.model_stub import rate_limited, text, tool
from tests.support import machine, run_li

__all__ = ["agents"]  # a fixture, used by name

pytestmark = pytest.mark.timeout(240)


def test_claude_answering_429_twice_then_an_answer_is_one_run_of_three_attempts(agents: Agents) -> None:
    """The CLI's own retries off (CLAUDE_CODE_MAX_RETRIES=0): each attempt li makes is one main
    request. With an API key Claude's stream names no reset (test_real_agents.py), so li's own
    backoff applies: 2 s before the second attempt, 4 s before the third, each jittered to [½, 1]
    of that (the vendor's reset winning is proven with the recorded stream, test_retry_policy_cli.py)."""
    ended = agents.run("claude", "--retry", "2", "--retry-backoff", "2",
                       steps=(rate_limited(reset_in=3), rate_limited(reset_in=3), text("Third time.")), retries=0)
    data = ended.data
    assert (data["status"], data["outcome"], data["reason_code"]) == ("completed", "succeeded", None)
    assert ended.response is not None and ended.response.strip() == "Third time."
    attempts = data["attempts"]
    assert [(a["status"], a["reason_code"]) for a in attempts] == [
        ("failed", "provider_rate_limited"), ("failed", "provider_rate_limited"), ("completed", None)]
    main = [r for r in ended.requests if r.main]
    assert len(main) == 3  # one main request per attempt
    for n, (before, after) in enumerate(zip(attempts, attempts[1:], strict=False)):
        waited = (datetime.fromisoformat(after["started_at"]) - datetime.fromisoformat(before["ended_at"]))
        assert 2.0 * 2**n / 2 <= waited.total_seconds(), attempts  # exponential, jittered down to half at most
        assert waited.total_seconds() < 2.0 * 2**n + 5, attempts  # capped by the policy (5 s for a slow machine)
        assert datetime.fromisoformat(after["started_at"]) >= datetime.fromisoformat(before["next_at"])


def test_claude_is_stopped_within_one_turn_of_its_token_budget(agents: Agents) -> None:
    """Each stub turn reports 1000 input tokens; a budget of 1500 is reached by the second turn's
    `assistant` event, so the third tool call never runs."""
    steps = (tool("echo one >> turns.txt"), tool("echo two >> turns.txt"), tool("echo three >> turns.txt"),
             text("done"))
    heavy = tuple(type(s)(**{**s.__dict__, "input_tokens": 1000}) for s in steps)
    ended = agents.run("claude", "--max-tokens", "1500", "--permission-mode", "edits", "--provider-arg=--allowedTools",
                       "--provider-arg=Bash", steps=heavy)
    data = ended.data
    assert (data["status"], data["outcome"], data["reason_code"]) == ("failed", "failed", "budget_exceeded")
    budget = data["budget"]
    assert budget["max_tokens"] == 1500 and budget["exceeded"] == "tokens"
    assert 1500 <= budget["spent_tokens"] < 3000, budget  # the second turn's event, not the third's
    turns = (ended.workspace / "turns.txt").read_text().split() if (ended.workspace / "turns.txt").exists() else []
    assert "three" not in turns, turns


# --- approvals: --permission-mode ask -------------------------------------------------------------

def open_request(agents: Agents, run_id: str, env: dict[str, str], limit: float = 90) -> dict[str, object]:
    """The run's one open request, once li lists it (the run reads waiting_approval meanwhile)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        rows = [r for r in machine("job", "approvals", home=agents.home, env=env).data["approvals"]
                if r["run_id"] == run_id]
        if rows:
            assert len(rows) == 1, rows
            return rows[0]
        status = machine("job", "status", run_id, home=agents.home, env=env).data
        assert not status["terminal"], status
        time.sleep(0.2)
    raise AssertionError(f"no approval request of {run_id} in {limit} s")


ASK = ("--permission-mode", "ask", "--approval-timeout", "90")


def test_claude_under_ask_runs_the_command_a_person_approved(agents: Agents) -> None:
    began = time.monotonic()
    run_id, env = agents.submit("claude", *ASK, steps=(tool("touch approved.txt"), text("Made it.")))
    request = open_request(agents, run_id, env)
    assert request["tool"] == "Bash" and "touch approved.txt" in request["input"]["command"]
    status = machine("job", "status", run_id, home=agents.home, env=env).data
    assert (status["status"], status["terminal"], status["outcome"]) == ("waiting_approval", False, None)
    answered = machine("job", "approve", run_id, request["id"], home=agents.home, env=env).data["approvals"]
    assert answered[0]["behavior"] == "allow"
    ended = agents.finish("claude", run_id, env, began)
    assert ended.data["outcome"] == "succeeded", ended.transcript
    assert (ended.workspace / "approved.txt").exists()
    assert [a["behavior"] for a in ended.data["approvals"]] == ["allow"]


def test_claude_under_ask_is_told_a_denial_and_the_command_never_runs(agents: Agents) -> None:
    began = time.monotonic()
    run_id, env = agents.submit("claude", *ASK, steps=(tool("touch denied.txt"), text("It was denied.")))
    request = open_request(agents, run_id, env)
    machine("job", "deny", run_id, request["id"], "--reason", "not today", home=agents.home, env=env)
    ended = agents.finish("claude", run_id, env, began)
    assert not (ended.workspace / "denied.txt").exists()
    results = [e for e in ended.events() if e.get("type") == "result"]
    assert results and results[-1].get("permission_denials"), results
    said = [b for e in ended.events() if e.get("type") == "user" for b in e["message"]["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert any("not today" in json.dumps(b) for b in said), said  # the agent was told why


def test_a_request_nobody_answers_is_denied_after_the_approval_timeout(agents: Agents) -> None:
    began = time.monotonic()
    run_id, env = agents.submit("claude", "--permission-mode", "ask", "--approval-timeout", "3",
                                steps=(tool("touch late.txt"), text("Nobody answered.")))
    ended = agents.finish("claude", run_id, env, began)
    assert not (ended.workspace / "late.txt").exists()
    approvals = ended.data["approvals"]
    assert [(a["behavior"], a["answered_by"]) for a in approvals] == [("deny", "approval_timeout")]
    assert "no one answered within 3 s" in approvals[0]["message"]


@pytest.mark.parametrize("cli", ["codex", "gemini"])
def test_ask_is_refused_at_submit_for_a_cli_with_no_headless_route(agents: Agents, cli: str) -> None:
    done = run_li("agent", "--detach", "--permission-mode", "ask", cli, "hi", "--machine", home=agents.home,
                  env=agents.env(cli))
    error = json.loads(done.stdout)["error"]
    assert error["kind"] == "invalid_input" and "no headless route" in error["message"], error


def test_the_contract_client_lists_and_answers_a_request(agents: Agents) -> None:
    import os

    from lionrun.adapters.contract_client import ContractClient, SubprocessRunner
    from tests.support import li_bin

    began = time.monotonic()
    run_id, env = agents.submit("claude", *ASK, steps=(tool("touch client.txt"), text("Asked.")))
    client = ContractClient(li_bin(), runner=SubprocessRunner({**os.environ, **env, "LI_HOME": agents.home}))
    assert client.handshake().registered
    request = open_request(agents, run_id, env)
    listed = client.approvals()
    assert listed.ok and [r["id"] for r in listed.data["approvals"] if r["run_id"] == run_id] == [request["id"]]
    denied = client.deny(run_id, str(request["id"]), reason="through the client")
    assert denied.ok and denied.data["approvals"][0]["behavior"] == "deny"
    again = client.approve(run_id, str(request["id"]))
    assert not again.ok and again.error is not None and again.error["kind"] == "conflict"  # answered once
    ended = agents.finish("claude", run_id, env, began)
    assert not (ended.workspace / "client.txt").exists()


# --- the same answers through `li mcp` (the approvals, approve and deny tools, the MCP SDK's client) ---

def through_mcp(agents: Agents, env: dict[str, str], run_id: str, tool: str, **arguments: object) -> dict[str, object]:
    """List the run's open request with the `approvals` tool, then answer it with `tool`: the answer."""
    import os
    import pathlib
    import sys

    import anyio
    from mcp import Client, StdioServerParameters

    from tests.support import REPO, install_li, li_bin

    li = install_li(pathlib.Path(agents.tmp) / "li-for-mcp", f'exec {li_bin()} "$@"')
    params = StdioServerParameters(command=sys.executable, args=["-m", "lionrun.entrypoints.mcp_server", "--li", li],
                                   env={**os.environ, **env, "LI_HOME": agents.home, "PYTHONPATH": REPO}, cwd=REPO)
    answered: dict[str, object] = {}

    async def session() -> None:
        with anyio.fail_after(120):
            async with Client(params, mode="legacy") as client:
                while True:
                    listed = await client.call_tool("approvals", {})
                    rows = [r for r in (listed.structured_content or {})["data"]["approvals"] if r["run_id"] == run_id]
                    if rows:
                        break
                    await anyio.sleep(0.2)
                assert len(rows) == 1 and rows[0]["tool"] == "Bash", rows
                result = await client.call_tool(tool, {"run_id": run_id, "request": rows[0]["id"], **arguments})
                assert not result.is_error and result.structured_content is not None, result
                answered.update(result.structured_content)

    anyio.run(session)
    return answered


def test_claude_under_ask_runs_the_command_approved_through_mcp(agents: Agents) -> None:
    began = time.monotonic()
    run_id, env = agents.submit("claude", *ASK, steps=(tool("touch mcp-approved.txt"), text("Made it.")))
    answered = through_mcp(agents, env, run_id, "approve")
    assert [a["behavior"] for a in answered["data"]["approvals"]] == ["allow"]  # type: ignore[index]
    ended = agents.finish("claude", run_id, env, began)
    assert ended.data["outcome"] == "succeeded", ended.transcript
    assert (ended.workspace / "mcp-approved.txt").exists()


def test_claude_under_ask_is_told_a_denial_made_through_mcp(agents: Agents) -> None:
    began = time.monotonic()
    run_id, env = agents.submit("claude", *ASK, steps=(tool("touch mcp-denied.txt"), text("It was denied.")))
    through_mcp(agents, env, run_id, "deny", reason="not over mcp")
    ended = agents.finish("claude", run_id, env, began)
    assert not (ended.workspace / "mcp-denied.txt").exists()
    results = [e for e in ended.events() if e.get("type") == "result"]
    assert results and results[-1].get("permission_denials"), results
    said = [b for e in ended.events() if e.get("type") == "user" for b in e["message"]["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert any("not over mcp" in json.dumps(b) for b in said), said  # the agent was told why
