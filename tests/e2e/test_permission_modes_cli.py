"""Agents that can act: --permission-mode and --provider-arg reach each CLI's argv (the fakes record it)."""

from __future__ import annotations

import json
import os
import pathlib
import time

import pytest

from tests.support import machine, run_li

FAKES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fakes", "bin")


def fakes(log: pathlib.Path, **extra: str) -> dict[str, str]:
    """The fakes first on PATH; IS_SANDBOX=1 is Claude Code's own switch that lets `full` run as
    root (these tests may run as root: CI does); without it li refuses it at submit (below)."""
    return {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}", "FAKE_ARGV_LOG": str(log), "IS_SANDBOX": "1",
            **extra}


def argv_of(home: str, log: pathlib.Path, *words: str) -> tuple[list[str], str]:
    """Submit, wait for the end, and return the argv the fake CLI was run with and the run's status."""
    run_id = machine("agent", "--detach", *words, home=home, env=fakes(log)).data["run_id"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        data = machine("job", "status", run_id, home=home).data
        if data["terminal"]:
            return json.loads(log.read_text().splitlines()[-1])["argv"], data["status"]
        time.sleep(0.1)
    raise AssertionError(f"{run_id} did not end")


def request_of(home: str) -> dict:
    (run,) = os.listdir(os.path.join(home, "runs"))
    with open(os.path.join(home, "runs", run, "request.json"), encoding="utf-8") as handle:
        return json.load(handle)


MODES = [
    ("claude", "read-only", ["--permission-mode", "plan"]),
    ("claude", "edits", ["--permission-mode", "acceptEdits"]),
    ("claude", "full", ["--permission-mode", "bypassPermissions"]),
    ("codex", "read-only", ["--sandbox", "read-only"]),
    ("codex", "edits", ["--sandbox", "workspace-write"]),
    ("codex", "full", ["--sandbox", "danger-full-access"]),
    ("gemini", "read-only", ["--approval-mode", "default"]),
    ("gemini", "edits", ["--approval-mode", "auto_edit"]),
    ("gemini", "full", ["--approval-mode", "yolo"]),
]


def contains(argv: list[str], part: list[str]) -> bool:
    return any(argv[i:i + len(part)] == part for i in range(len(argv)))


@pytest.mark.parametrize("provider, mode, flag", MODES)
def test_each_permission_mode_is_the_clis_documented_flag(li_home: str, tmp_path: pathlib.Path, provider: str,
                                                          mode: str, flag: list[str]) -> None:
    argv, status = argv_of(li_home, tmp_path / "argv.jsonl", "--permission-mode", mode, provider, "hi")
    assert contains(argv, flag) and status == "completed"  # the fake refuses a value its CLI does not take
    assert request_of(li_home)["agents"] == {provider: {"permission_mode": mode, "provider_args": []}}


@pytest.mark.parametrize("provider, flag", [("claude", "--permission-mode"), ("codex", "--sandbox"),
                                            ("gemini", "--approval-mode")])
def test_without_a_mode_each_cli_keeps_its_own_default(li_home: str, tmp_path: pathlib.Path, provider: str,
                                                       flag: str) -> None:
    argv, status = argv_of(li_home, tmp_path / "argv.jsonl", provider, "hi")
    assert flag not in argv and status == "completed"


def test_provider_args_are_passed_verbatim_after_the_clis_own_flags(li_home: str, tmp_path: pathlib.Path) -> None:
    argv, status = argv_of(li_home, tmp_path / "argv.jsonl", "--permission-mode", "edits",
                           "--provider-arg=-c", "--provider-arg", "model_reasoning_effort=high", "codex/o3", "hi")
    assert argv == ["exec", "--json", "--skip-git-repo-check", "--model", "o3", "--sandbox", "workspace-write",
                    "-c", "model_reasoning_effort=high", "-"]
    assert status == "completed"
    argv, _ = argv_of(li_home, tmp_path / "claude.jsonl", "--provider-arg=--max-turns", "--provider-arg=3",
                      "claude", "hi")
    assert argv[-2:] == ["--max-turns", "3"]


def test_config_toml_sets_per_provider_defaults_and_the_command_line_overrides_them(li_home: str,
                                                                                    tmp_path: pathlib.Path) -> None:
    pathlib.Path(li_home, "config.toml").write_text(
        '[providers.gemini]\npermission_mode = "full"\nprovider_args = ["--include-directories", "docs"]\n'
        '[providers.claude]\npermission_mode = "read-only"\n')
    log = tmp_path / "argv.jsonl"
    argv, _ = argv_of(li_home, log, "gemini", "hi")
    assert contains(argv, ["--approval-mode", "yolo"]) and argv[-2:] == ["--include-directories", "docs"]
    argv, _ = argv_of(li_home, log, "--permission-mode", "edits", "--provider-arg=--debug", "gemini", "hi")
    assert contains(argv, ["--approval-mode", "auto_edit"]) and argv[-1] == "--debug"
    assert "--include-directories" not in argv
    argv, _ = argv_of(li_home, log, "claude", "hi")
    assert contains(argv, ["--permission-mode", "plan"])


def test_a_fanout_gives_each_cli_its_own_flag_for_one_mode(li_home: str, tmp_path: pathlib.Path) -> None:
    log = tmp_path / "argv.jsonl"
    run_id = machine("orchestrate", "fanout", "--detach", "--permission-mode", "edits", "--models", "claude,codex",
                     "hi", home=li_home, env=fakes(log)).data["run_id"]
    deadline = time.monotonic() + 30
    while not machine("job", "status", run_id, home=li_home).data["terminal"] and time.monotonic() < deadline:
        time.sleep(0.1)
    logged = {entry["tool"]: entry["argv"] for entry in map(json.loads, log.read_text().splitlines())}
    assert contains(logged["claude"], ["--permission-mode", "acceptEdits"])
    assert contains(logged["codex"], ["--sandbox", "workspace-write"])


@pytest.mark.parametrize("words, fragment", [
    (["--permission-mode", "edits", "sh", "echo hi"], "sh runs its script as you"),
    (["--provider-arg=-x", "sh", "echo hi"], "sh runs its script as you"),
    (["--permission-mode", "everything", "claude", "hi"], "must be one of read-only, edits, full"),
])
def test_refused_options_are_invalid_input(li_home: str, words: list[str], fragment: str) -> None:
    error = machine("agent", "--detach", *words, home=li_home).error
    assert error["kind"] == "invalid_input" and fragment in error["message"]
    assert not os.path.isdir(os.path.join(li_home, "runs")) or not os.listdir(os.path.join(li_home, "runs"))


def test_provider_args_for_two_clis_at_once_are_refused(li_home: str) -> None:
    error = machine("orchestrate", "fanout", "--detach", "--provider-arg=--debug", "--models", "claude,gemini", "hi",
                    home=li_home).error
    assert error["kind"] == "invalid_input" and "claude, gemini" in error["message"]


@pytest.mark.parametrize("body, fragment", [
    ('[providers.claude]\npermission_mode = "all"\n', "permission_mode must be one of"),
    ('[providers.claude]\nprovider_args = "--debug"\n', "provider_args must be a list of strings"),
    ('[providers.claude]\nsandbox = "x"\n', "unknown keys: sandbox"),
])
def test_a_bad_provider_default_in_config_toml_is_refused(li_home: str, body: str, fragment: str) -> None:
    pathlib.Path(li_home, "config.toml").write_text(body)
    error = machine("agent", "--detach", "claude", "hi", home=li_home).error
    assert error["kind"] == "invalid_input" and fragment in error["message"]


def test_a_shell_command_given_as_a_model_is_refused_with_the_sh_form(li_home: str) -> None:
    error = machine("agent", "echo", "hi", home=li_home).error
    assert error["kind"] == "invalid_input" and error["detail"]["hint"] == "li agent sh 'echo hi'"
    human = run_li("agent", "echo", "hi", home=li_home)
    assert human.returncode != 0 and human.stdout == ""
    assert human.stderr.strip().splitlines() == [
        "li: invalid_input: unknown model 'echo'; it is a command on PATH — to run it in a shell: li agent sh 'echo hi'"]
    assert "command on PATH" not in machine("agent", "no-such-command-here", "hi", home=li_home).error["message"]


def test_status_shows_each_clis_mode_and_args_for_people_and_programs(li_home: str, tmp_path: pathlib.Path) -> None:
    log = tmp_path / "argv.jsonl"
    run_id = machine("agent", "--detach", "--permission-mode", "full", "--provider-arg=--max-turns",
                     "--provider-arg=3", "claude", "hi", home=li_home, env=fakes(log)).data["run_id"]
    data = machine("job", "status", run_id, home=li_home).data
    assert data["agents"] == {"available": True, "reason_code": None, "detail": None,
                              "value": {"claude": {"permission_mode": "full", "provider_args": ["--max-turns", "3"]}}}
    shown = run_li("job", "status", run_id, home=li_home).stdout.splitlines()
    assert "  agents     claude: permission full, args --max-turns 3" in shown
    plain = machine("agent", "--detach", "sh", "echo x", home=li_home).data["run_id"]
    assert machine("job", "status", plain, home=li_home).data["agents"]["value"] == {}
    assert not any(line.startswith("  agents") for line in run_li("job", "status", plain, home=li_home).stdout.splitlines())


@pytest.mark.skipif(os.geteuid() != 0, reason="claude refuses to skip its permission checks only as root")
def test_claude_full_as_root_is_refused_at_submit_with_what_to_do(li_home: str, tmp_path: pathlib.Path) -> None:
    env = fakes(tmp_path / "argv.jsonl", IS_SANDBOX="", CLAUDE_CODE_BUBBLEWRAP="")
    refused = machine("agent", "--detach", "--permission-mode", "full", "claude", "hi", home=li_home, env=env).error
    assert refused["kind"] == "invalid_input", refused
    assert "root" in refused["message"] and "IS_SANDBOX=1" in refused["message"], refused
    assert refused["detail"]["reason_code"] == "provider_refused"
    assert not pathlib.Path(li_home, "runs").exists() or not os.listdir(pathlib.Path(li_home, "runs"))
    human = run_li("agent", "--permission-mode", "full", "claude", "hi", home=li_home, env=env)
    assert human.returncode != 0 and "claude refuses to skip its permission checks" in human.stderr
    pathlib.Path(li_home, "config.toml").write_text('[providers.claude]\npermission_mode = "full"\n')
    assert machine("agent", "--detach", "claude", "hi", home=li_home, env=env).error["kind"] == "invalid_input"
    edits = machine("agent", "--detach", "--permission-mode", "edits", "claude", "hi", home=li_home, env=env)
    assert edits.envelope["ok"] is True, edits.envelope  # only the mode claude would refuse is refused
