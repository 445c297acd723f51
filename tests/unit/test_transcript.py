"""Agent transcripts: each vendor's recorded event samples rendered for people and read for the record."""

from __future__ import annotations

import json
import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lionrun.domain.transcript import Transcript, outcome, render, usage_line

SAMPLES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def sample(vendor: str, name: str) -> bytes:
    return (SAMPLES / vendor / f"{name}.jsonl").read_bytes()


def shown(vendor: str, name: str) -> list[str]:
    return render(sample(vendor, name)).splitlines()


def recorded(vendor: str, name: str):
    return outcome(vendor, sample(vendor, name).decode().splitlines(keepends=True))


# -- Claude Code ---------------------------------------------------------------------------------

def test_a_claude_answer_is_shown_as_text_once_with_every_token_class_and_the_cost() -> None:
    assert shown("claude", "success") == [
        "lionrun runs agent work as detached, durable runs.",
        "Every verb answers with one JSON envelope under --machine.",
        "tokens: in 4 · cache read 11250 · cache write 1840 · out 41 · cost $0.0378",
    ]


def test_claude_tool_calls_are_one_line_each_with_their_main_argument_and_a_denial_is_marked() -> None:
    assert shown("claude", "tool_calls") == [
        "I'll look at the project first.",
        "→ Bash  ls -la",
        "→ Read  /home/dev/project/app.py",
        "→ Edit  /home/dev/project/app.py",
        "✗ tool failed: Claude requested permissions to write to /home/dev/project/app.py, but you haven't "
        "granted it yet.",
        "app.py prints a greeting; I could not edit it without write permission.",
        "tokens: in 18 · cache read 39940 · cache write 510 · out 96 · cost $0.0213",
    ]


def test_a_claude_error_result_is_marked_and_fails_the_leg() -> None:
    lines = shown("claude", "error")
    assert lines[:3] == ["Let me check the tests.", "→ Bash  pytest -q", "✗ error_max_turns"]
    found = recorded("claude", "error")
    assert found.is_error and found.answer is None and found.usage["output_tokens"] == 140


def test_claude_usage_keeps_both_cache_classes_cost_and_turns() -> None:
    found = recorded("claude", "usage")
    assert (found.answer, found.is_error) == ("4", False)
    assert {k: found.usage[k] for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                        "cache_read_input_tokens", "cost_usd", "num_turns")} == {
        "input_tokens": 12, "output_tokens": 5, "cache_creation_input_tokens": 2048,
        "cache_read_input_tokens": 30000, "cost_usd": 0.0051, "num_turns": 1}


def test_claude_without_a_result_event_is_an_error() -> None:
    lines = sample("claude", "success").decode().splitlines(keepends=True)[:2]
    found = outcome("claude", lines)
    assert found.is_error and not found.ended


# -- Codex ---------------------------------------------------------------------------------------

def test_a_codex_answer_and_its_cached_input_tokens() -> None:
    assert shown("codex", "success") == ["lionrun runs agent work as detached, durable runs.",
                                         "tokens: in 24763 · cached in 24448 · out 122"]
    assert recorded("codex", "success").usage == {"input_tokens": 24763, "cached_input_tokens": 24448,
                                                  "output_tokens": 122}


def test_codex_commands_mcp_calls_and_file_changes_are_one_line_each_and_a_failed_command_is_marked() -> None:
    assert shown("codex", "tool_calls") == [
        "→ shell  bash -lc 'ls -la'",
        "→ shell  bash -lc 'pytest -q'",
        "✗ shell bash -lc 'pytest -q' exited 1",
        "→ docs.search  greeting style",
        "→ edit app.py (update)",
        "I updated app.py; one test still fails.",
        "tokens: in 51200 · cached in 40960 · out 830",
    ]


def test_a_failed_codex_turn_is_marked_and_is_an_error() -> None:
    assert shown("codex", "error") == [
        "✗ stream error: exceeded retry limit, last status: 429 Too Many Requests",
        "✗ exceeded retry limit, last status: 429 Too Many Requests",
    ]
    assert recorded("codex", "error").is_error


def test_codex_usage_counts_every_class_it_reports() -> None:
    assert recorded("codex", "usage").usage == {"input_tokens": 9000, "cached_input_tokens": 8192,
                                                "output_tokens": 7, "reasoning_output_tokens": 64}
    assert shown("codex", "usage")[-1] == "tokens: in 9000 · cached in 8192 · out 7 · reasoning 64"


# -- Gemini CLI ----------------------------------------------------------------------------------

def test_gemini_deltas_join_into_text_and_its_stats_count_cached_and_total_tokens() -> None:
    assert shown("gemini", "success") == [
        "lionrun runs agent work as detached, durable runs.",
        "Every verb answers with one JSON envelope.",
        "tokens: in 12950 · cached in 11200 · out 58 · total 13180",
    ]
    found = recorded("gemini", "success")
    assert found.answer == ("lionrun runs agent work as detached, durable runs.\n"
                            "Every verb answers with one JSON envelope.")
    assert not found.is_error


def test_gemini_tool_calls_and_a_denied_write() -> None:
    assert shown("gemini", "tool_calls") == [
        "I'll list the files first.",
        "→ run_shell_command  ls -la",
        "→ read_file  app.py",
        "→ write_file  app.py",
        '✗ tool failed: Tool execution for "WriteFile" denied by policy.',
        "I could not write app.py: writes are not approved in this mode.",
        "tokens: in 29800 · cached in 20480 · out 212 · total 30412",
    ]
    assert recorded("gemini", "tool_calls").usage["tool_calls"] == 3


def test_a_gemini_error_result_is_marked_and_a_warning_is_not_an_error_mark() -> None:
    lines = shown("gemini", "error")
    assert lines[:2] == ["! Loop detected, stopping execution",
                         "✗ ApiError: [API Error: You have exhausted your capacity on this model.]"]
    assert recorded("gemini", "error").is_error


def test_gemini_json_output_stats_name_thoughts_and_tool_tokens() -> None:
    body = {"type": "result", "status": "success", "stats": {"models": {"m": {"tokens": {
        "prompt": 30, "candidates": 4, "total": 40, "cached": 12, "thoughts": 5, "tool": 1}}}}}
    found = outcome("gemini", [json.dumps(body)])
    assert found.usage == {"input_tokens": 30, "output_tokens": 4, "total_tokens": 40, "cached_input_tokens": 12,
                           "thoughts_tokens": 5, "tool_tokens": 1}


# -- any stream ----------------------------------------------------------------------------------

def test_lines_that_are_no_vendor_event_are_shown_as_they_are() -> None:
    data = b'plain output\n{"not": "an event"}\n{"type": "custom"}\nli runner: completed\n'
    assert render(data) == data.decode()


def test_a_final_answer_not_yet_shown_comes_at_the_end_under_a_heading() -> None:
    data = (json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "forty-two"}) + "\n")
    assert render(data.encode()).splitlines()[:2] == ["── answer ──", "forty-two"]


def test_shared_consoles_keep_each_legs_prefix() -> None:
    data = b"".join(b"[leg-1] " + line + b"\n" for line in sample("codex", "success").splitlines())
    assert render(data).splitlines() == ["[leg-1] lionrun runs agent work as detached, durable runs.",
                                         "[leg-1] tokens: in 24763 · cached in 24448 · out 122"]


def test_terminal_controls_in_decoded_text_never_reach_the_screen() -> None:
    event = {"type": "item.completed", "item": {"type": "agent_message", "text": "ok\u001b[2J\u009b31m done\r\n"}}
    assert render((json.dumps(event) + "\n").encode()) == "ok[2J31m done\n"


def test_an_over_long_line_is_cut_without_being_parsed_and_the_next_line_still_renders() -> None:
    big = b'{"type": "result", "result": "' + b"x" * 5000 + b'"}\n'
    out = render(big + b"after\n", max_line=1000).splitlines()
    assert out == ["[li: a console line of 5032 bytes is too long to show; see --raw]", "after"]


def test_a_partial_last_line_waits_for_its_end_and_close_shows_it() -> None:
    transcript = Transcript()
    assert transcript.feed(b"first\nsec") == "first\n"
    assert transcript.feed(b"ond") == ""
    assert transcript.close() == "second\n"


def test_usage_line_without_token_counts_says_so() -> None:
    assert usage_line({}) == "tokens: not reported"


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(str(p.relative_to(SAMPLES)) for p in SAMPLES.glob("*/*.jsonl"))),
       st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=12), st.sampled_from([200, 1 << 20]))
def test_rendering_chunk_by_chunk_shows_what_rendering_at_once_shows(name: str, cuts: list[int],
                                                                     max_line: int) -> None:
    data = (SAMPLES / name).read_bytes()
    points = sorted({c % (len(data) + 1) for c in cuts})
    transcript, out, last = Transcript(max_line), [], 0
    for point in [*points, len(data)]:
        out.append(transcript.feed(data[last:point]))
        last = point
    out.append(transcript.close())
    assert "".join(out) == render(data, max_line)


_JUNK = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=3),
                     max_leaves=8)
_TYPES = sorted({"system", "assistant", "user", "result", "thread.started", "turn.completed", "turn.failed",
                 "item.started", "item.completed", "error", "init", "message", "tool_use", "tool_result", "other"})
_JUNK = _JUNK | st.just("\u001b[2J")
_EVENT = st.fixed_dictionaries(
    {"type": st.sampled_from(_TYPES)},
    optional={key: _JUNK for key in ("item", "message", "result", "stats", "usage", "content", "status", "severity",
                                     "subtype", "is_error", "role", "delta", "error", "parameters", "tool_name")})


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=200), _EVENT.map(lambda d: json.dumps(d).encode())), max_size=12))
def test_any_bytes_render_without_raising(parts: list[bytes]) -> None:
    data = b"\n".join(parts)
    text = render(data, max_line=300)
    assert "\x1b" not in text or b"\x1b" in data  # an escape decoded from JSON never reaches the screen
    for vendor in ("claude", "codex", "gemini"):
        outcome(vendor, data.decode("utf-8", "replace").splitlines())


@pytest.mark.parametrize("kind", ["assistant", "item.completed", "message", "tool_use", "result", "user"])
def test_events_with_fields_of_the_wrong_type_still_render(kind: str) -> None:
    event = {"type": kind, "message": [], "item": "x", "content": 5, "parameters": [1], "usage": "many",
             "stats": [], "result": 3, "role": "assistant"}
    render((json.dumps(event) + "\n").encode())


def test_a_single_agents_streamed_text_shows_as_it_comes_and_a_shared_consoles_waits_for_whole_lines() -> None:
    first, rest = (json.dumps({"type": "message", "role": "assistant", "content": text, "delta": True}).encode()
                   + b"\n" for text in ("Hello, ", "world"))
    transcript = Transcript()
    assert transcript.feed(first) == "Hello, "
    assert transcript.feed(rest) == "world"
    assert transcript.close() == "\n"
    shared = Transcript()
    assert shared.feed(b"[leg-1] " + first) == ""
    assert shared.feed(b"[leg-1] " + rest) + shared.close() == "[leg-1] Hello, world\n"
