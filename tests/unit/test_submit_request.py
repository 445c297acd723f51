"""Submit validation is pure: model specs, the [MODEL] PROMPT split, prompt and exec limits, numbers."""

from __future__ import annotations

import pytest

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.request import (
    MAX_ARG_STRLEN,
    POINTER_BYTES,
    PROMPT_LIMIT,
    RUN_ID_SHAPE,
    Leg,
    ModelSpec,
    RunRequest,
    check_exec,
    check_prompt,
    exec_plan,
    exec_size,
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


ARG_MAX = 2 * 1024 * 1024


def test_an_exec_is_counted_as_the_kernel_counts_it() -> None:
    # each string with its NUL, a pointer each, both arrays' NULL ends, and the path copied once more
    assert exec_size(["/bin/x", "ab"], {"K": "v"}) == (7 + 3 + 4) + 5 * POINTER_BYTES + 7


def test_one_argument_or_environment_string_over_128_kib_is_refused() -> None:
    assert check_exec([("runner", ["x" * (MAX_ARG_STRLEN - 1)])], {}, ARG_MAX) > MAX_ARG_STRLEN
    error = refused(check_exec, [("notify command", ["true", "x" * MAX_ARG_STRLEN])], {}, ARG_MAX)
    assert error.detail == {"command": "notify command", "size": MAX_ARG_STRLEN + 1, "limit": MAX_ARG_STRLEN}
    error = refused(check_exec, [("runner", ["python"])], {"BIG": "x" * MAX_ARG_STRLEN}, ARG_MAX)
    assert error.detail["variable"] == "BIG"


def test_arguments_and_environment_together_over_arg_max_are_refused() -> None:
    halves = ["a" * (MAX_ARG_STRLEN // 2), "b" * (MAX_ARG_STRLEN // 2)]  # each string is fine
    env = {"E": "e" * (MAX_ARG_STRLEN // 2)}
    size = exec_size(["cmd", *halves], env)
    assert check_exec([("claude provider", ["cmd", *halves])], env, size) == size
    error = refused(check_exec, [("claude provider", ["cmd", *halves])], env, size - 1)
    assert error.detail == {"command": "claude provider", "size": size, "limit": size - 1}


def test_the_exec_plan_holds_the_runner_every_model_and_the_rendered_notify_never_the_prompt() -> None:
    prompt = "the secret prompt " * 10000
    request = RunRequest(kind="fanout", instruction=prompt, cwd="/",
                         legs=(Leg("leg-1", ModelSpec("claude", "opus")), Leg("leg-2", ModelSpec("codex")),
                               Leg("leg-3", ModelSpec("claude", "opus"))),
                         synthesize=ModelSpec("gemini"), label="L" * 1000,
                         notify=("notify-send", "{run_id}", "{label}{label}", "{payload}"))
    plan = dict(exec_plan(request, ["python", "-m", "lionrun.entrypoints.runner"],
                          lambda spec: ["/bin/" + spec.provider, "--model", spec.model or "default"]))
    assert list(plan) == ["runner", "claude/opus provider", "codex provider", "gemini provider", "notify command"]
    assert plan["runner"] == ["python", "-m", "lionrun.entrypoints.runner", RUN_ID_SHAPE]
    assert plan["claude/opus provider"] == ["/bin/claude", "--model", "opus"]
    notify = plan["notify command"]
    assert notify[:2] == ["notify-send", RUN_ID_SHAPE] and notify[2] == "L" * 2000
    assert '"label": "' + "L" * 1000 + '"' in notify[3] and len(notify[3]) > 1000 + 4 * 64
    assert not any("secret" in argument for argv in plan.values() for argument in argv)


def test_a_label_rendered_twice_into_the_notify_command_can_make_it_unexecutable() -> None:
    request = RunRequest(kind="agent", instruction="true", cwd="/", legs=(Leg("main", ModelSpec("sh")),),
                         label="x" * 70000, notify=("true", "{label}{label}"))
    plan = exec_plan(request, ["python"], lambda spec: ["/bin/sh", "/dev/fd/3"])
    assert refused(check_exec, plan, {}, ARG_MAX).detail["command"] == "notify command"


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


def test_agent_options_take_the_command_line_else_each_providers_configured_default() -> None:
    from lionrun.domain.request import AgentRunOptions, agent_options

    defaults = {"codex": AgentRunOptions("full", ("-c", "a=b")), "claude": AgentRunOptions(None, ("--debug",))}
    assert agent_options({"codex", "claude", "sh"}, None, None, defaults) == defaults
    chosen = agent_options({"codex", "sh"}, "read-only", None, defaults)
    assert chosen == {"codex": AgentRunOptions("read-only", ("-c", "a=b"))}
    assert chosen["codex"].arguments("codex") == ["--sandbox", "read-only", "-c", "a=b"]
    assert agent_options({"gemini"}, None, ("--x",), {}) == {"gemini": AgentRunOptions(None, ("--x",))}
    assert agent_options({"sh"}, None, None, defaults) == {}


def test_sh_takes_no_permission_mode_and_provider_args_go_to_one_cli_only() -> None:
    from lionrun.domain.request import agent_options

    assert refused(agent_options, {"sh"}, "edits", None, {}).kind is ErrorKind.INVALID_INPUT
    assert refused(agent_options, {"sh"}, None, ("-x",), {}).kind is ErrorKind.INVALID_INPUT
    assert "claude, codex" in refused(agent_options, {"claude", "codex"}, None, ("-x",), {}).message


def test_agent_options_round_trip_through_request_json() -> None:
    from lionrun.domain.request import AgentRunOptions

    request = RunRequest(kind="agent", instruction="hi", legs=(Leg("main", ModelSpec("claude")),), cwd="/",
                         agents={"claude": AgentRunOptions("edits", ("--max-turns", "3"))})
    data = request.to_dict()
    assert data["agents"] == {"claude": {"permission_mode": "edits", "provider_args": ["--max-turns", "3"]}}
    assert RunRequest.from_dict(data, "hi") == request
    assert request.arguments_for("claude") == ["--permission-mode", "acceptEdits", "--max-turns", "3"]
    assert request.arguments_for("sh") == []
    data["agents"] = {"claude": {"permission_mode": "sudo"}}
    assert refused(RunRequest.from_dict, data, "hi").kind is ErrorKind.INVALID_INPUT
