"""Issue 42 with the real Claude Code CLI against the model stub (as tests/e2e/test_real_agents.py
runs it): retries by policy, and a token budget counted from its stream as it arrives."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.agent_clis import Agents, agents
from tests.model_stub import rate_limited, text, tool

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
