"""The sh provider runs its instruction as a script on a descriptor: not on argv, not in a named file."""

from __future__ import annotations

import os
import threading

from lionrun.adapters.providers import ChildGroups, ChildRun, ShProvider, command_line

ENV = {"PATH": "/usr/bin:/bin"}


class Console:
    """The leg's console (`text`) and what li says of it (`said`, the li log's lines)."""

    def __init__(self) -> None:
        self.text = ""
        self.said = ""

    def write(self, text: str) -> None:
        self.text += text

    def say(self, text: str) -> None:
        self.said += text


def run(script: str, timeout: float = 30) -> tuple[int, str]:
    console = Console()
    result = ShProvider(ChildRun(ChildGroups())).run(script, None, "/", ENV, console, timeout)
    return result.exit_code, console.text


def test_the_script_comes_from_an_anonymous_descriptor_and_its_stdin_is_dev_null() -> None:
    code, out = run('printf "%s\\n" "$0"; tr "\\0" " " < /proc/$$/cmdline; echo; '
                    'readlink "/proc/$$/fd/${0##*/}"; readlink /proc/$$/fd/0; cat; echo end')
    zero, cmdline, target, stdin, end = out.splitlines()
    assert code == 0 and zero.startswith("/dev/fd/") and end == "end"
    assert cmdline.strip() == f"/bin/sh {zero}"  # the whole command line: no script on it
    assert target.startswith("/memfd:li-instruction") and stdin == "/dev/null"


def test_the_descriptor_is_closed_once_the_script_ends() -> None:
    before = set(os.listdir("/proc/self/fd"))
    assert run("echo hi") == (0, "hi\n")
    assert set(os.listdir("/proc/self/fd")) <= before


def test_parallel_legs_each_run_their_own_script() -> None:
    answers: dict[int, str] = {}

    def leg(n: int) -> None:
        answers[n] = run(f"sleep 0.2; echo leg-{n}")[1]

    threads = [threading.Thread(target=leg, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {n: f"leg-{n}\n" for n in range(8)}


def test_exit_status_and_a_script_over_128_kib() -> None:
    assert run("exit 3")[0] == 3
    script = ": " + "x" * (200 * 1024) + "\necho big\n"
    assert run(script) == (0, "big\n")


def test_the_command_lines_the_submit_check_counts_carry_no_prompt() -> None:
    assert command_line("sh", None, ENV) == ["/bin/sh", f"/dev/fd/{2**31 - 1}"]
    assert command_line("claude", "opus", ENV)[1:] == ["-p", "--output-format", "stream-json", "--verbose",
                                                       "--model", "opus"]
    assert command_line("codex", None, ENV)[1:] == ["exec", "--json", "--skip-git-repo-check", "-"]
    assert command_line("gemini", "g", ENV)[1:] == ["-p", "", "--output-format", "stream-json", "-m", "g"]
