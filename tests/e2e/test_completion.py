"""`li completion bash|zsh`: generated from the parser, so every command and flag is offered."""

from __future__ import annotations

import argparse
import shutil
import subprocess

import pytest

from lionrun.entrypoints.cli import build_parser
from tests.support import machine, run_li


def every_level(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, subcommand names, option strings) for the root and every subparser."""
    commands: list[str] = []
    flags: list[str] = []
    children = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                commands.append(name)
                children.append((name, child))
        flags.extend(action.option_strings)
    yield path, commands, flags
    for name, child in children:
        yield from every_level(child, (*path, name))


LEVELS = list(every_level(build_parser()))


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_every_subcommand_and_flag_appears_in_the_script(shell: str) -> None:
    script = run_li("completion", shell).stdout
    assert len(LEVELS) > 10
    for path, commands, flags in LEVELS:
        key = "/".join(path)
        for word in [*commands, *flags, "--machine"]:
            assert word in script, (shell, key, word)
        arm = next(line for line in script.splitlines() if line.strip().startswith(f'"{key}")') and "--" in line)
        assert all(flag in arm.split() or f'{flag}"' in arm for flag in flags), (key, arm)


def test_the_machine_answer_carries_shell_and_script() -> None:
    data = machine("completion", "bash").data
    assert set(data) == {"shell", "script"} and data["shell"] == "bash"
    assert data["script"] == run_li("completion", "bash").stdout


def test_an_unknown_shell_is_refused() -> None:
    assert machine("completion", "tcsh").error["kind"] == "invalid_input"
    assert machine("completion").error["kind"] == "invalid_input"
    human = run_li("completion", "tcsh")
    assert human.returncode == 2 and human.stdout == "" and "Traceback" not in human.stderr


def test_bash_accepts_the_bash_script(tmp_path) -> None:
    path = tmp_path / "li.bash"
    path.write_text(run_li("completion", "bash").stdout)
    subprocess.run(["bash", "-n", str(path)], check=True)


def complete_in_bash(tmp_path, *words: str) -> list[str]:
    path = tmp_path / "li.bash"
    path.write_text(run_li("completion", "bash").stdout)
    array = " ".join(f"'{w}'" for w in ("li", *words))
    program = f'source {path}; COMP_WORDS=({array}); COMP_CWORD={len(words)}; _li; printf "%s\\n" "${{COMPREPLY[@]}}"'
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True).stdout.split()


def test_bash_completes_commands_subcommands_flags_and_choices(tmp_path) -> None:
    assert complete_in_bash(tmp_path, "jo") == ["job"]
    assert complete_in_bash(tmp_path, "job", "pr") == ["prune"]
    assert complete_in_bash(tmp_path, "job", "prune", "--d") == ["--dry-run"]
    assert complete_in_bash(tmp_path, "completion", "") == ["bash", "zsh", "fish"]
    assert complete_in_bash(tmp_path, "orchestrate", "fanout", "--sy") == ["--synthesize"]


def test_bash_does_not_mistake_a_flag_value_for_a_subcommand(tmp_path) -> None:
    assert complete_in_bash(tmp_path, "agent", "--label", "job", "--de") == ["--detach"]


def test_zsh_accepts_the_zsh_script(tmp_path) -> None:
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed here; `zsh -n` cannot check the script")
    path = tmp_path / "_li"
    path.write_text(run_li("completion", "zsh").stdout)
    subprocess.run(["zsh", "-n", str(path)], check=True)


def test_zsh_offers_the_subcommands_of_a_command(tmp_path) -> None:
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed here")
    path = tmp_path / "_li"
    path.write_text(run_li("completion", "zsh").stdout)
    program = (f"autoload -Uz compinit && compinit -u -d {tmp_path}/zcd; source {path}; "
               "compadd() { shift; print -l -- \"$@\" }; words=(li job ''); CURRENT=3; _li")
    out = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["status", "output", "list", "kill", "wait", "prune", "retry", "rm", "diff", "apply", "reply",
                           "approvals", "approve", "deny", "approval-request"]
