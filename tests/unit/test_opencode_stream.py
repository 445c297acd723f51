"""OpenCode, the CLI added as one module: its recorded streams against the model stub
(tests/fixtures/transcripts/opencode/recorded, taken with tests/record_streams.py) -> the leg's
status, reason, answer, usage and session; and what the person's transcript shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lionrun.adapters.providers import AgentProvider, ChildGroups, ChildRun, command_line
from lionrun.domain.agents import agent, owner
from lionrun.domain.contract import ContractError
from lionrun.domain.ending import leg_status
from lionrun.domain.request import PROVIDERS, AgentRunOptions, agent_options
from lionrun.domain.transcript import (
    AGENT_REASONS,
    EMPTY_ANSWER,
    PROVIDER_AUTH,
    PROVIDER_ERROR,
    PROVIDER_OVERLOADED,
    PROVIDER_RATE_LIMITED,
    render,
)
from lionrun.domain.worktree import reply_refusal, resume_arguments

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "opencode" / "recorded"
EXPECTED = {
    "answer": None, "tool": None, "tool_refused": None, "transient": None,
    "auth": PROVIDER_AUTH, "forbidden": PROVIDER_AUTH, "rate_limited": PROVIDER_RATE_LIMITED,
    "overloaded": PROVIDER_OVERLOADED, "server_error": PROVIDER_OVERLOADED, "empty": EMPTY_ANSWER,
    "hang": PROVIDER_ERROR,
    # OpenCode 1.18 retries a refused connection silently and a cut stream for ever (a step ending
    # `unknown` with no tokens, about once a second): its stream never names the network, so only
    # li's stop ends it, and the end reads as a stream with no end.
    "cut": PROVIDER_ERROR, "refused": PROVIDER_ERROR,
}
RECORDED_CASES = sorted(p.name.removesuffix(".jsonl") for p in RECORDED.glob("*.jsonl"))


def recorded(case: str) -> tuple[list[str], int]:
    meta = json.loads((RECORDED / f"{case}.meta.json").read_text())
    lines = (RECORDED / f"{case}.jsonl").read_text().splitlines(keepends=True)
    return lines, 1 if meta["exit"] is None else int(meta["exit"])


def provider() -> AgentProvider:
    return AgentProvider(ChildRun(ChildGroups()), agent("opencode"))


def test_the_recordings_are_there_to_prove_something() -> None:
    assert {"answer", "auth", "tool"} <= set(RECORDED_CASES), RECORDED_CASES


@pytest.mark.parametrize("case", RECORDED_CASES)
def test_each_recorded_end_reads_its_reason_and_only_an_answer_is_an_answer(case: str) -> None:
    lines, exit_code = recorded(case)
    result = provider().conclude(lines, exit_code, False)
    status, code = leg_status(result, cancelled=False)
    reason = EXPECTED[case]
    if reason is None:
        assert (status, code, result.is_error) == ("completed", None, False)
        assert result.answer and result.answer.strip()
    else:
        assert (status, code) == ("failed", reason)
        assert result.answer is None
    assert code is None or code in AGENT_REASONS


def test_an_answer_carries_its_text_usage_and_session() -> None:
    lines, exit_code = recorded("answer")
    result = provider().conclude(lines, exit_code, False)
    assert result.answer == "Hello from the stub."
    assert (result.usage["input_tokens"], result.usage["output_tokens"]) == (12, 5)
    assert result.session_id == json.loads(lines[0])["sessionID"] and result.session_id.startswith("ses_")
    shown = render("".join(lines).encode())
    assert "Hello from the stub." in shown and "tokens: in 12" in shown and "✗" not in shown


def test_a_tool_call_is_one_line_and_the_last_step_s_text_is_the_answer() -> None:
    lines, exit_code = recorded("tool")
    result = provider().conclude(lines, exit_code, False)
    assert result.answer == "Wrote marker.txt."
    shown = render("".join(lines).encode()).splitlines()
    assert any(line.startswith("→ bash") and "echo tool-ran > marker.txt" in line for line in shown), shown


def test_an_api_error_is_said_once_with_its_words_and_its_status_decides_the_reason() -> None:
    lines, exit_code = recorded("auth")
    assert exit_code != 0
    errors = [line for line in render("".join(lines).encode()).splitlines() if line.startswith("✗")]
    assert len(errors) == 1 and "invalid x-api-key" in errors[0]


def test_its_events_are_its_own_though_it_shares_kinds_with_codex_and_gemini() -> None:
    error = {"type": "error", "sessionID": "ses_1", "error": {"name": "APIError", "data": {"message": "m"}}}
    assert owner(error) == "opencode"
    assert owner({"type": "error", "message": "Reconnecting... 1/5"}) == "codex"
    assert owner({"type": "error", "severity": "error", "message": "x"}) == "gemini"
    assert owner({"type": "tool_use", "tool_name": "run_shell_command"}) == "gemini"
    assert owner({"type": "text", "sessionID": "ses_1", "part": {"text": "hi"}}) == "opencode"


def test_a_stream_cut_before_its_last_step_ended_is_no_answer() -> None:
    lines = ['{"type":"step_start","sessionID":"s","part":{"type":"step-start"}}\n',
             '{"type":"text","sessionID":"s","part":{"type":"text","text":"half"}}\n']
    result = provider().conclude(lines, 0, False)
    assert leg_status(result, False) == ("failed", PROVIDER_ERROR) and result.answer is None


def test_its_argv_permission_flags_and_resume_come_from_its_module() -> None:
    assert "opencode" in PROVIDERS
    assert command_line("opencode", None, {"PATH": "/nonexistent"}) == ["opencode", "run", "--format", "json"]
    assert AgentRunOptions("full", ("--title", "t")).arguments("opencode") == ["--auto", "--title", "t"]
    for mode in ("read-only", "edits", "ask"):  # no headless flag keeps to them: refused, never its default
        with pytest.raises(ContractError) as refused:
            agent_options({"opencode"}, mode, None, {})
        assert refused.value.detail is not None and refused.value.detail["reason_code"] == "provider_refused"
    assert agent_options({"opencode"}, "full", None, {})["opencode"].arguments("opencode") == ["--auto"]
    assert resume_arguments("opencode", "ses_1") == ["--session", "ses_1"]
    assert reply_refusal("agent", "opencode", "ses_1", True) is None
