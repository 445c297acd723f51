"""domain/budget.py: limits parsed, refused where they could not be kept, spend counted per vendor."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.budget import (
    Budget,
    Meter,
    Spend,
    parse_max_cost,
    parse_max_tokens,
    refusal,
    spend_of,
    total,
)
from lionrun.domain.contract import ContractError
from lionrun.domain.ending import decide
from lionrun.domain.request import AgentRunOptions, Leg, ModelSpec, RunRequest


def assistant(message: str, tokens: int, out: int = 1) -> dict[str, object]:
    return {"type": "assistant", "message": {"id": message, "usage": {
        "input_tokens": tokens, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 3, "output_tokens": out}}}


def test_claude_messages_are_counted_once_each_and_the_result_replaces_the_estimate() -> None:
    meter = Meter.of("claude")
    assert meter.feed(assistant("m1", 10))
    assert not meter.feed(assistant("m1", 10))  # the same message's second content block
    assert meter.feed(assistant("m2", 20))
    assert meter.spend == Spend(tokens=16 + 26)
    assert meter.feed({"type": "result", "subtype": "success", "total_cost_usd": 0.25,
                       "usage": {"input_tokens": 30, "output_tokens": 40}})
    assert meter.spend == Spend(tokens=70, cost_usd=0.25)


def test_codex_turns_and_gemini_stats_are_counted() -> None:
    codex = Meter.of("codex")
    codex.feed({"type": "turn.completed", "usage": {"input_tokens": 12, "cached_input_tokens": 10, "output_tokens": 5}})
    assert codex.spend.tokens == 17
    gemini = Meter.of("gemini")
    gemini.feed({"type": "result", "status": "success", "stats": {"total_tokens": 19, "input_tokens": 13}})
    assert gemini.spend == Spend(tokens=19)
    assert not Meter.of("claude").feed({"type": "user"})
    assert not Meter.of("sh").feed({"type": "result", "usage": {"input_tokens": 1}})  # no agent CLI: nothing


def test_opencode_steps_are_counted_from_its_recorded_stream() -> None:
    # Every `step_finish` carries its step's tokens (the recorded answer: 12 in, 5 out, cost 0):
    # the meter adds each step as the concluded usage counts it.
    from pathlib import Path

    from lionrun.domain.agents.opencode import opencode_usage
    from lionrun.domain.transcript import event_of

    recorded = Path(__file__).parents[1] / "fixtures/transcripts/opencode/recorded"
    for name in ("answer", "tool", "cut"):
        events = [e for e in map(event_of, (recorded / f"{name}.jsonl").read_text().splitlines()) if e is not None]
        meter = Meter.of("opencode")
        changed = [meter.feed(e) for e in events]
        assert changed == [e["type"] == "step_finish" for e in events]
        assert meter.spend == spend_of(opencode_usage(events))
    answer = [e for e in map(event_of, (recorded / "answer.jsonl").read_text().splitlines()) if e is not None]
    meter = Meter.of("opencode")
    for event in answer:
        meter.feed(event)
    assert meter.spend == Spend(tokens=17, cost_usd=0)
    assert meter.spend.crossed(Budget(max_tokens=17)) == "tokens"


@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=30), st.integers(1, 100_000))
def test_the_first_event_that_reaches_the_limit_is_where_the_spend_crosses(steps: list[int], limit: int) -> None:
    meter, budget = Meter.of("claude"), Budget(max_tokens=limit)
    crossed_at = None
    for n, tokens in enumerate(steps):
        meter.feed(assistant(f"m{n}", tokens, 0))
        if crossed_at is None and meter.spend.crossed(budget):
            crossed_at = n
    running = [sum(s + 5 for s in steps[: n + 1]) for n in range(len(steps))]
    expected = next((n for n, spent in enumerate(running) if spent >= limit), None)
    assert crossed_at == expected


def test_limits_are_parsed_and_bad_ones_refused() -> None:
    assert parse_max_tokens("250") == 250 and parse_max_cost("0.5") == 0.5
    for bad in ("0", "-1", "1.5", "x", True):
        with pytest.raises(ContractError):
            parse_max_tokens(bad)
    for bad in ("0", "-1", "nan", "inf", "x", True):
        with pytest.raises(ContractError):
            parse_max_cost(bad)


def test_a_budget_no_provider_could_keep_is_refused() -> None:
    assert refusal(Budget(max_tokens=5), {"claude", "codex", "gemini"}) is None
    assert refusal(Budget(max_cost_usd=1), {"claude"}) is None
    assert refusal(Budget(max_tokens=5), {"sh"}) is not None
    assert refusal(Budget(max_cost_usd=1), {"claude", "codex"}) is not None
    assert refusal(Budget(max_tokens=5), {"opencode"}) is None  # its steps report their tokens
    assert refusal(Budget(max_cost_usd=1), {"opencode"}) is not None  # its price is an estimate, 0 when unknown


def test_the_budget_travels_in_request_json_and_claude_gets_its_own_cap() -> None:
    request = RunRequest(kind="agent", instruction="x", legs=(Leg("main", ModelSpec("claude")),), cwd="/",
                         agents={"claude": AgentRunOptions("edits")}, budget=Budget(max_tokens=9, max_cost_usd=0.25))
    back = RunRequest.from_dict(request.to_dict(), "x")
    assert back.budget == request.budget
    assert back.arguments_for("claude") == ["--permission-mode", "acceptEdits", "--max-budget-usd", "0.25"]
    assert back.arguments_for("codex") == []
    assert back.arguments_for("opencode") == [] and back.arguments_for("sh") == []


def test_a_budget_stop_is_a_failure_that_a_cancel_still_beats() -> None:
    assert (decide([], False, True, None, over_budget=True).status,
            decide([], False, True, None, over_budget=True).reason_code) == ("failed", "budget_exceeded")
    assert decide([], True, True, None, over_budget=True).status == "cancelled"


def test_spend_from_concluded_usage_and_a_runs_total() -> None:
    assert spend_of({"input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": 3, "cost_usd": 0.1}) == Spend(
        6, 0.1)
    assert spend_of({"input_tokens": 1, "output_tokens": 2}) == Spend(3)
    assert total([Spend(3), Spend(4, 0.5)]) == Spend(7, 0.5)


def test_a_queue_window_counts_ends_pauses_and_rolls() -> None:
    from datetime import UTC, datetime, timedelta

    from lionrun.domain.queue import (
        QueueSettings,
        is_paused,
        parse_window,
        pause_reason,
        set_budget,
        settings_of,
        spent,
        window_spent,
    )

    now = datetime(2026, 12, 5, 12, tzinfo=UTC)
    queue = set_budget(QueueSettings(name="q"), 100, parse_window("1h"))
    queue = spent(queue, "r1", 60, now)
    assert not is_paused(queue, now) and window_spent(queue, now) == 60
    queue = spent(queue, "r2", 50, now + timedelta(minutes=10))
    assert is_paused(queue, now + timedelta(minutes=59)) and pause_reason(queue, now) == "budget_exceeded"
    assert queue.paused_by == "r2" and queue.paused_until == (now + timedelta(hours=1)).isoformat(timespec="microseconds")
    later = now + timedelta(hours=1)
    assert not is_paused(queue, later) and window_spent(queue, later) == 0  # the window rolled
    rolled = spent(queue, "r3", 10, later)
    assert rolled.window_spent == 10 and rolled.window_start == later.isoformat(timespec="microseconds")
    assert settings_of("q", __import__("json").dumps(rolled.to_dict())) == rolled
    assert parse_window("24h") == 86400 and parse_window("90") == 90 and parse_window("7d") == 7 * 86400
