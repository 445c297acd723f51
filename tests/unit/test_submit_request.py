"""Submit validation is pure: model specs, the [MODEL] PROMPT split, prompt and argv limits, numbers."""

from __future__ import annotations

import pytest

from domain.contract import ContractError, ErrorKind
from domain.request import (
    ARGV_LIMIT,
    PROMPT_LIMIT,
    Leg,
    ModelSpec,
    RunRequest,
    check_argv,
    check_prompt,
    parse_legs,
    parse_model,
    parse_models,
    parse_timeout,
    split_words,
)


def refused(call, *args) -> ContractError:
    with pytest.raises(ContractError) as caught:
        call(*args)
    assert caught.value.kind is ErrorKind.INVALID_INPUT
    return caught.value


@pytest.mark.parametrize("text, expected", [
    ("sh", ModelSpec("sh")), ("claude", ModelSpec("claude")), ("claude/opus", ModelSpec("claude", "opus")),
    ("codex/gpt-5.1-codex", ModelSpec("codex", "gpt-5.1-codex")), ("gemini/gemini-2.5-pro", ModelSpec("gemini", "gemini-2.5-pro")),
])
def test_known_model_specs_name_a_provider_and_optionally_a_model(text: str, expected: ModelSpec) -> None:
    assert parse_model(text) == expected
    assert parse_model(text).text == text


@pytest.mark.parametrize("text", ["gpt", "", "/opus", "claude/", "sh/fast", "claude/has space", "claude/../x"])
def test_unknown_or_malformed_models_are_refused(text: str) -> None:
    refused(parse_model, text)


@pytest.mark.parametrize("words, prompt_given, expected", [
    (["echo hi"], False, (None, "echo hi")),
    (["sh", "echo", "hi"], False, ("sh", "echo hi")),
    (["claude/opus", "write a poem"], False, ("claude/opus", "write a poem")),
    (["claude"], False, ("claude", None)),
    ([], False, (None, None)),
    (["codex"], True, ("codex", None)),
    ([], True, (None, None)),
])
def test_model_and_prompt_positionals_split_as_documented(words, prompt_given, expected) -> None:
    assert split_words(words, prompt_given) == expected


def test_a_positional_prompt_beside_prompt_or_prompt_file_is_refused() -> None:
    refused(split_words, ["sh", "echo hi"], True)


def test_prompts_are_refused_when_empty_or_over_256_kib() -> None:
    refused(check_prompt, None)
    refused(check_prompt, " \n\t")
    assert check_prompt("x" * PROMPT_LIMIT)
    error = refused(check_prompt, "x" * (PROMPT_LIMIT + 1))
    assert error.detail == {"size": PROMPT_LIMIT + 1, "limit": PROMPT_LIMIT}
    refused(check_prompt, "é" * (PROMPT_LIMIT // 2 + 1))  # counted in bytes, not characters


def test_the_argument_vector_is_limited_to_128_kib() -> None:
    assert check_argv(["a" * 1000, "b"]) == 1003
    refused(check_argv, ["a" * (ARGV_LIMIT // 2), "b" * (ARGV_LIMIT // 2)])


@pytest.mark.parametrize("text", ["abc", "0", "-1", "nan", "inf", "1e12", ""])
def test_bad_timeouts_are_refused(text: str) -> None:
    refused(parse_timeout, text)


def test_timeouts_are_seconds() -> None:
    assert parse_timeout(None) is None
    assert parse_timeout("1.5") == 1.5


@pytest.mark.parametrize("text", ["0", "-2", "33", "1000000", "two", "1.5", ""])
def test_bad_leg_counts_are_refused(text: str) -> None:
    refused(parse_legs, text)


def test_leg_counts_default_to_two() -> None:
    assert parse_legs(None) == 2 and parse_legs(" 32 ") == 32


def test_models_lists_are_refused_when_blank_or_unknown() -> None:
    assert [m.text for m in parse_models("claude, codex/o3")] == ["claude", "codex/o3"]
    for text in ["", "claude,", "claude,,codex", "claude,gpt"]:
        refused(parse_models, text)


def test_a_request_survives_its_round_trip_through_request_json() -> None:
    request = RunRequest(kind="fanout", instruction="task", legs=(Leg("leg-1", ModelSpec("claude", "opus")),),
                         cwd="/tmp", label="l", timeout=3.0, synthesize=ModelSpec("codex"),
                         notify=("notify-send", "{run_id}"), notify_source="flag")
    data = request.to_dict()
    assert "instruction" not in data  # it travels in instruction.txt
    assert RunRequest.from_dict(data, "task") == request


def test_a_malformed_request_json_is_invalid_input() -> None:
    refused(RunRequest.from_dict, {"kind": "agent"}, "x")
