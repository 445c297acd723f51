"""No prompt on any command line, and exec's real limits: every prompt up to 256 KiB runs, and a run
that would start something exec cannot is refused before anything is written.

A prompt on a command line is readable by every local user in /proc/PID/cmdline, and one argv
string is capped at 128 KiB: the agent CLIs get it on stdin, `sh` as a script on a descriptor.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from tests.support import machine

FAKES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fakes", "bin")
KIB = 1024


def runs(home: str) -> list[str]:
    folder = os.path.join(home, "runs")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def ended(home: str, run_id: str, within: float = 60.0) -> dict:
    path = os.path.join(home, "runs", run_id, "record.json")
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with open(path, encoding="utf-8") as handle:
            found = json.load(handle)
        if found.get("finished_at"):
            return found
        time.sleep(0.05)
    raise AssertionError(f"{run_id} did not end: {found}")


def artifact(home: str, run_id: str, name: str) -> str:
    with open(os.path.join(home, "runs", run_id, "artifacts", name), encoding="utf-8") as handle:
        return handle.read()


def fakes_first(**extra: str) -> dict[str, str]:
    return {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}", **extra}


def processes() -> dict[int, tuple[bytes, bytes]]:
    """Every process we can see: its command line and (when readable) its environment."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            environ = b""
        found[int(name)] = (cmdline, environ)
    return found


def of_run(run_id: str, seen: dict[int, tuple[bytes, bytes]]) -> dict[int, bytes]:
    """The command lines of the run's runner and of every process of its work."""
    mark = f"LI_RUN_ID={run_id}".encode()
    return {pid: cmdline for pid, (cmdline, environ) in seen.items()
            if run_id.encode() in cmdline or mark in environ.split(b"\0")}


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_no_process_of_a_run_shows_the_prompt_on_its_command_line(li_home: str) -> None:
    secret = f"li-secret-{uuid.uuid4().hex}"
    env = fakes_first(FAKE_CLAUDE_MODE="slow", FAKE_CODEX_MODE="slow", FAKE_GEMINI_MODE="slow",
                      FAKE_SLOW_SECONDS="60")
    shell = machine("agent", "--detach", "sh", f": {secret}; sleep 60", home=li_home).data["run_id"]
    agents = machine("orchestrate", "fanout", "--detach", "--models", "claude/opus,codex,gemini",
                     f"keep this {secret} to yourself", home=li_home, env=env).data["run_id"]
    try:
        deadline = time.monotonic() + 30
        while True:  # until the shell script and the three agent CLIs are all running
            seen = processes()
            work = {**of_run(shell, seen), **of_run(agents, seen)}
            scripts = [pid for pid, cmdline in work.items() if cmdline.startswith(b"/bin/sh\0/dev/fd/")]
            clis = {name for cmdline in work.values() for name in ("claude", "codex", "gemini")
                    if os.path.join(FAKES, name).encode() in cmdline}
            if scripts and clis == {"claude", "codex", "gemini"}:
                break
            assert time.monotonic() < deadline, {pid: cmdline[:200] for pid, cmdline in work.items()}
            time.sleep(0.1)
        for _ in range(10):  # every process on the machine, several times while the runs run
            leaked = {pid: cmdline[:200] for pid, (cmdline, _) in processes().items() if secret.encode() in cmdline}
            assert leaked == {}
            time.sleep(0.05)
        # the script is an anonymous memory file: nothing on disk for another user to open
        script_fd = work[scripts[0]].split(b"\0")[1].decode().rsplit("/", 1)[1]
        assert os.readlink(f"/proc/{scripts[0]}/fd/{script_fd}").startswith("/memfd:")
        assert os.readlink(f"/proc/{scripts[0]}/fd/0") == "/dev/null"  # its stdin is what it was
    finally:
        for run_id in (shell, agents):
            machine("job", "kill", run_id, home=li_home)


def shell_script(size: int) -> str:
    """A script of `size` bytes: comment lines, then `echo ok`."""
    line = "# " + "c" * 97 + "\n"
    tail = "echo ok\n"
    body = line * ((size - len(tail)) // len(line))
    return body + ":" + " " * (size - len(body) - len(tail) - 2) + "\n" + tail


def test_a_250_kib_sh_script_runs_to_completed(li_home: str, tmp_path) -> None:
    prompt = tmp_path / "script.sh"
    prompt.write_text(shell_script(250 * KIB))
    assert prompt.stat().st_size == 250 * KIB
    run_id = machine("agent", "--detach", "--prompt-file", str(prompt), "sh", home=li_home).data["run_id"]
    assert ended(li_home, run_id)["status"] == "completed"
    assert artifact(li_home, run_id, "response.md") == "ok\n"


@pytest.mark.parametrize("model", ["claude", "codex", "gemini"])
def test_a_250_kib_prompt_reaches_each_agent_cli_whole_on_stdin(li_home: str, tmp_path, model: str) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(("summarise this. " * 16 * KIB)[: 250 * KIB])
    log = tmp_path / "argv.jsonl"
    run_id = machine("agent", "--detach", "--prompt-file", str(prompt), model, home=li_home,
                     env=fakes_first(FAKE_ARGV_LOG=str(log))).data["run_id"]
    assert ended(li_home, run_id)["status"] == "completed"
    assert artifact(li_home, run_id, "response.md").startswith(f"{model}(")
    logged = json.loads(log.read_text().splitlines()[0])
    assert logged["prompt_len"] == 250 * KIB and all(len(a) < 100 for a in logged["argv"])


def test_a_prompt_over_128_kib_in_words_is_now_accepted_and_runs(li_home: str) -> None:
    # Once refused as "argv over 128 KiB": li got it, and no command line ever carries it again.
    run_id = machine("agent", "--detach", "sh", "echo", "a" * 70000, "b" * 70000, home=li_home).data["run_id"]
    assert ended(li_home, run_id)["status"] == "completed"
    assert artifact(li_home, run_id, "response.md") == f"{'a' * 70000} {'b' * 70000}\n"


def test_a_notify_argument_of_200_kib_from_config_is_refused_before_anything_is_written(li_home: str) -> None:
    with open(os.path.join(li_home, "config.toml"), "w", encoding="utf-8") as handle:
        handle.write(f'notify = ["true", "{"n" * 200 * KIB}"]\n')
    error = machine("agent", "--detach", "sh", "true", home=li_home).error
    assert error["kind"] == "invalid_input", error
    assert error["detail"] == {"command": "notify command", "size": 200 * KIB + 1, "limit": 128 * KIB}
    assert runs(li_home) == []


def test_a_notify_template_that_renders_past_128_kib_is_refused_before_anything_is_written(li_home: str) -> None:
    # each word li was given is small; `{label}` twice makes one argument of 140 KB at delivery
    error = machine("agent", "--detach", "--label", "l" * 70000, "--notify", "true {label}{label}", "sh", "true",
                    home=li_home).error
    assert error["kind"] == "invalid_input" and error["detail"]["command"] == "notify command", error
    assert runs(li_home) == []


def test_a_notify_template_within_the_limits_is_accepted(li_home: str) -> None:
    run_id = machine("agent", "--detach", "--label", "l" * 30000, "--notify", "true {label}{label} {payload}",
                     "sh", "echo hi", home=li_home).data["run_id"]
    assert ended(li_home, run_id)["status"] == "completed"
