"""Every vendor failure named (items 4 and 6): each real CLI's recorded stream and exit
status (tests/fixtures/transcripts/<cli>/recorded, taken against the model-API stub) -> the
leg's status, reason code, answer and session id; and what the person's transcript shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.adapters.providers import (
    AgentProvider,
    ChildGroups,
    ChildRun,
    ShProvider,
    default_providers,
)
from lionrun.domain.agents import NAMES, agent
from lionrun.domain.ending import leg_status
from lionrun.domain.transcript import (
    AGENT_REASONS,
    EMPTY_ANSWER,
    PROVIDER_AUTH,
    PROVIDER_ERROR,
    PROVIDER_OVERLOADED,
    PROVIDER_RATE_LIMITED,
    PROVIDER_REFUSED,
    PROVIDER_UNREACHABLE,
    end_reason,
    outcome,
    reason_of,
    render,
    retry_delay,
)

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
OK = None
# (cli, case) -> the reason the end reads (None: completed); a `hang` is stopped by li (timeout / idle)
EXPECTED = {
    "answer": (OK, OK, OK), "model": (OK, OK, OK), "tool": (OK, OK, OK), "tool_refused": (OK, OK, OK),
    "transient": (OK, OK, OK),
    "auth": (PROVIDER_AUTH, PROVIDER_AUTH, PROVIDER_AUTH),
    "forbidden": (PROVIDER_AUTH, PROVIDER_AUTH, PROVIDER_AUTH),
    "rate_limited": (PROVIDER_RATE_LIMITED, PROVIDER_RATE_LIMITED, PROVIDER_RATE_LIMITED),
    "overloaded": (PROVIDER_OVERLOADED, PROVIDER_OVERLOADED, PROVIDER_OVERLOADED),
    "server_error": (PROVIDER_OVERLOADED, PROVIDER_OVERLOADED, PROVIDER_OVERLOADED),
    "cut": (PROVIDER_UNREACHABLE, PROVIDER_UNREACHABLE, PROVIDER_UNREACHABLE),
    "refused": (PROVIDER_UNREACHABLE, PROVIDER_UNREACHABLE, PROVIDER_ERROR),  # gemini retries silently
    "empty": (EMPTY_ANSWER, EMPTY_ANSWER, EMPTY_ANSWER),
    "hang": (PROVIDER_ERROR, PROVIDER_ERROR, PROVIDER_ERROR),
}
CLIS = ("claude", "codex", "gemini")


def provider(cli: str) -> AgentProvider:
    return AgentProvider(ChildRun(ChildGroups()), agent(cli))


def recorded(cli: str, case: str) -> tuple[list[str], int]:
    """The stream's lines and the CLI's exit (1 for a CLI li had to stop: it never exited on its own)."""
    meta = json.loads((RECORDED / cli / "recorded" / f"{case}.meta.json").read_text())
    lines = (RECORDED / cli / "recorded" / f"{case}.jsonl").read_text().splitlines(keepends=True)
    return lines, 1 if meta["exit"] is None else int(meta["exit"])


CASES = [(cli, case, EXPECTED[case][i]) for case in EXPECTED for i, cli in enumerate(CLIS)]
CASES.append(("gemini", "untrusted", PROVIDER_REFUSED))


@pytest.mark.parametrize("cli, case, reason", CASES, ids=[f"{c}-{k}" for c, k, _ in CASES])
def test_each_recorded_end_reads_its_reason_and_only_an_answer_is_an_answer(cli: str, case: str,
                                                                            reason: str | None) -> None:
    lines, exit_code = recorded(cli, case)
    result = provider(cli).conclude(lines, exit_code, False)
    status, code = leg_status(result, cancelled=False)
    if reason is None:
        assert (status, code, result.is_error) == ("completed", None, False)
        assert result.answer and result.answer.strip()
    else:
        assert (status, code) == ("failed", reason)
        assert result.answer is None  # response.md only ever holds an answer the stream delivered
    assert code is None or code in AGENT_REASONS


@pytest.mark.parametrize("cli", CLIS)
def test_the_session_id_is_read_from_each_stream(cli: str) -> None:
    lines, exit_code = recorded(cli, "answer")
    first = json.loads(lines[0])
    expected = first.get("session_id") or first.get("thread_id")
    assert provider(cli).conclude(lines, exit_code, False).session_id == expected


def test_claude_success_subtype_with_is_error_and_exit_0_is_a_failure() -> None:
    """anthropics/claude-code#79500: `subtype: "success"`, `is_error: true`, exit 0 on a 429."""
    lines, _ = recorded("claude", "rate_limited")
    result = provider("claude").conclude(lines, 0, False)
    assert leg_status(result, False) == ("failed", PROVIDER_RATE_LIMITED)
    assert result.answer is None


def test_gemini_with_no_result_and_exit_0_is_a_failure() -> None:
    lines, _ = recorded("gemini", "refused")
    assert leg_status(provider("gemini").conclude(lines, 0, False), False) == ("failed", PROVIDER_ERROR)


def test_codex_retries_are_no_end_and_a_recovered_run_succeeds() -> None:
    """Codex prints an `error` event for each retry; only `turn.failed` ends it failed."""
    lines = ['{"type":"thread.started","thread_id":"t-1"}\n', '{"type":"turn.started"}\n',
             '{"type":"error","message":"Reconnecting... 1/5 (unexpected status 500 Internal Server Error)"}\n',
             '{"type":"error","message":"Reconnecting... 2/5 (unexpected status 500 Internal Server Error)"}\n',
             '{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"Recovered."}}\n',
             '{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}\n']
    result = provider("codex").conclude(lines, 0, False)
    assert (leg_status(result, False), result.answer, result.session_id) == (("completed", None), "Recovered.", "t-1")
    shown = render("".join(lines).encode()).splitlines()
    assert shown[:2] == ["↻ retrying (1/5): unexpected status 500 Internal Server Error",
                         "↻ retrying (2/5): unexpected status 500 Internal Server Error"]
    assert not any(line.startswith("✗") for line in shown)


def test_an_error_is_labelled_an_error_and_said_once() -> None:
    lines, _ = recorded("claude", "auth")
    shown = render("".join(lines).encode()).splitlines()
    assert shown[:2] == ["↻ retrying (1/1): HTTP 401 authentication_failed, in 0.6 s",
                         "✗ Invalid API key · Fix external API key"]
    assert "success" not in "".join(shown)
    assert sum("Invalid API key" in line for line in shown) == 1
    codex, _ = recorded("codex", "auth")
    errors = [line for line in render("".join(codex).encode()).splitlines() if line.startswith("✗")]
    assert len(errors) == 1


def test_harmless_codex_notices_are_not_marked_as_errors() -> None:
    lines, _ = recorded("codex", "answer")
    shown = render("".join(lines).encode()).splitlines()
    assert shown[0].startswith("! Model metadata for `gpt-stub` not found")
    assert not any(line.startswith("✗") for line in shown)


def test_gemini_s_rate_limit_names_when_to_retry() -> None:
    lines, exit_code = recorded("gemini", "rate_limited")
    result = provider("gemini").conclude(lines, exit_code, False)
    assert (result.reason_code, result.retry_after, result.retry_at) == (
        PROVIDER_RATE_LIMITED, 1.0, "2026-12-04T02:27:49+00:00")


def test_claude_s_rejected_rate_limit_event_names_its_reset() -> None:
    lines, _ = recorded("claude", "rate_limited")
    event = {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "resetsAt": 1796356800}}
    found = outcome("claude", [json.dumps(event) + "\n", *lines])
    assert (found.reason, found.retry_at) == (PROVIDER_RATE_LIMITED, "2026-12-04T04:00:00+00:00")


@pytest.mark.parametrize("message, seconds", [
    ("Please retry in 1.0s.", 1.0), ("try again in 20 minutes", 1200.0), ("retry after 250ms", 0.25),
    ("Try again in 2 hours.", 7200.0), ("no delay named", None)])
def test_a_delay_the_vendor_names_is_read(message: str, seconds: float | None) -> None:
    assert retry_delay(message) == seconds


@pytest.mark.parametrize("status, message, reason", [
    (None, "unexpected status 401 Unauthorized", PROVIDER_AUTH), (403, "", PROVIDER_AUTH),
    (None, "exceeded retry limit, last status: 429 Too Many Requests", PROVIDER_RATE_LIMITED),
    (529, "", PROVIDER_OVERLOADED), (None, '{"code":503,"status":"UNAVAILABLE"}', PROVIDER_OVERLOADED),
    (None, "Connection failed: error sending request, url: http://127.0.0.1:8080/v1", PROVIDER_UNREACHABLE),
    (None, "something else entirely", PROVIDER_ERROR)])
def test_a_vendor_message_and_status_name_the_reason(status: int | None, message: str, reason: str) -> None:
    assert reason_of(status, message) == reason


def test_an_exit_other_than_0_fails_a_stream_that_said_success() -> None:
    lines, _ = recorded("claude", "answer")
    result = provider("claude").conclude(lines, 3, False)
    assert leg_status(result, False) == ("failed", PROVIDER_ERROR) and result.answer is None
    found = outcome("gemini", [])
    assert end_reason("gemini", found, 55) == PROVIDER_REFUSED


@given(st.lists(st.text(max_size=80), max_size=8), st.integers(min_value=-1, max_value=255),
       st.sampled_from(CLIS))
def test_any_stream_and_exit_is_one_named_end_never_a_success_without_an_answer(lines: list[str], code: int,
                                                                                cli: str) -> None:
    result = provider(cli).conclude([line + "\n" for line in lines], code, False)
    status, reason = leg_status(result, False)
    assert status in ("completed", "failed")
    if status == "completed":
        assert result.answer and result.answer.strip() and code == 0
    else:
        assert reason in AGENT_REASONS and result.answer is None


def test_the_provider_registry_holds_sh_and_every_cli_each_made_once() -> None:
    registry = default_providers(ChildGroups())
    assert list(registry) == ["sh", *NAMES] and len(registry) == 1 + len(NAMES)
    assert isinstance(registry["sh"], ShProvider)
    for name in NAMES:
        made = registry[name]
        assert isinstance(made, AgentProvider) and made.cli is agent(name) and registry[name] is made
    assert registry.get("nope") is None and "nope" not in registry and "claude" in registry
    with pytest.raises(KeyError):
        registry["nope"]
