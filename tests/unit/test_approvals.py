"""domain/approval.py: requests recorded, answered once, the run's status beside them."""

from __future__ import annotations

import json

import pytest

from lionrun.domain.agents import agent, agents
from lionrun.domain.approval import (
    OPEN_MAX,
    answer_text,
    answered,
    open_requests,
    parse_timeout,
    requested,
    status_after,
)
from lionrun.domain.contract import ContractError
from lionrun.domain.request import AgentRunOptions, agent_options


def test_a_request_is_open_until_answered_once_and_the_status_follows() -> None:
    approvals, first = requested(None, "Bash", {"command": "ls"}, "t1", "2026-12-05T12:00:00+00:00")
    approvals, second = requested(approvals, "Write", {"path": "x"}, "t2", "2026-12-05T12:00:01+00:00")
    assert (first, second) == ("a1", "a2") and len(open_requests(approvals)) == 2
    assert status_after("running", approvals) == "waiting_approval"
    approvals, ids = answered(approvals, "a1", "allow", None, "li (me)", "now")
    assert ids == ["a1"] and status_after("waiting_approval", approvals) == "waiting_approval"
    again, none = answered(approvals, "a1", "deny", "late", "li (me)", "now")
    assert none == [] and again == approvals  # answered once: a second answer changes nothing
    approvals, ids = answered(approvals, None, "deny", "no", "li (me)", "now")
    assert ids == ["a2"] and status_after("waiting_approval", approvals) == "running"
    assert status_after("completed", approvals) == "completed"  # an end is never relabelled


def test_the_answer_is_the_json_claude_code_expects() -> None:
    assert json.loads(answer_text({"behavior": "allow"}, {"command": "ls"})) == {
        "behavior": "allow", "updatedInput": {"command": "ls"}}
    assert json.loads(answer_text({"behavior": "deny", "message": "not today"}, {})) == {
        "behavior": "deny", "message": "not today"}


def test_too_many_open_requests_and_bad_timeouts_are_refused() -> None:
    approvals = None
    for n in range(OPEN_MAX):
        approvals, _ = requested(approvals, "Bash", {"n": n}, None, "now")
    with pytest.raises(ContractError):
        requested(approvals, "Bash", {}, None, "now")
    for bad in ("0", "-1", "x", "nan", True):
        with pytest.raises(ContractError):
            parse_timeout(bad)


@pytest.mark.parametrize("provider", [cli.name for cli in agents() if not cli.asks])
def test_ask_is_refused_for_a_cli_with_no_headless_route(provider: str) -> None:
    with pytest.raises(ContractError, match="no headless route") as refused:
        agent_options({provider}, "ask", None, {})
    # The refusal is the registry's words: this CLI's own, and the route of every CLI that can ask.
    message = refused.value.message
    assert f"{provider} has no headless route" in message and agent(provider).prompts in message, message
    assert all(f"{cli.name}: {cli.prompts}" in message for cli in agents() if cli.asks), message
    assert refused.value.detail["providers"] == [provider]
    with pytest.raises(ContractError, match="no headless route"):  # from config.toml too
        agent_options({provider}, None, None, {provider: AgentRunOptions("ask")})
    assert agent_options({"claude"}, "ask", None, {})["claude"].arguments("claude")[-2:] == [
        "--permission-prompt-tool", "mcp__li__approve"]
