"""Human output: colour on a terminal, plain text through a pipe or when NO_COLOR is set."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime, timedelta

import pexpect
import pytest

from lionrun.adapters.fs_store import FsRunStore
from lionrun.domain.run import STARTED, Run, iso
from tests.support import li_bin

ESC = "\x1b["


def environment(home: str, no_color: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "LI_NOTIFY_COMMAND")}
    env.update({"LI_HOME": home, "TERM": "xterm", "COLUMNS": "200"})
    if no_color is not None:
        env["NO_COLOR"] = no_color
    return env


def through_a_terminal(home: str, *argv: str, no_color: str | None = None) -> tuple[int, str]:
    child = pexpect.spawn(li_bin(), list(argv), env=environment(home, no_color), encoding="utf-8",
                          timeout=60, dimensions=(50, 200))
    text = child.read()
    child.close()
    return child.exitstatus, text


def through_a_pipe(home: str, *argv: str) -> tuple[int, str]:
    proc = subprocess.run([li_bin(), *argv], env=environment(home, None), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout


def ended_runs(home: str) -> list[str]:
    """Two runs that recorded an end: one that succeeded and one that failed."""
    store, now = FsRunStore(home), datetime.now(UTC)
    ids = []
    for status, outcome in (("completed", "succeeded"), ("failed", "failed")):
        run_id = store.reserve(now)
        store.create(Run(run_id=run_id, kind="agent", status=status, submitted_at=iso(now - timedelta(seconds=90)),
                         spawn_state=STARTED, finished_at=iso(now), outcome=outcome, label=f"{status}-job"))
        ids.append(run_id)
    return ids


@pytest.mark.parametrize("argv", [("doctor",), ("job", "list")], ids=["doctor", "job-list"])
def test_colour_appears_on_a_terminal_and_never_through_a_pipe(li_home, argv) -> None:
    ids = ended_runs(li_home)
    code, on_tty = through_a_terminal(li_home, *argv)
    assert code == 0, on_tty
    assert ESC in on_tty
    code, piped = through_a_pipe(li_home, *argv)
    assert code == 0
    assert ESC not in piped
    plain_tty = on_tty.replace("\r\n", "\n")
    for word in (["store.writable", "ready"] if argv == ("doctor",) else [*ids, "succeeded", "failed"]):
        assert word in piped and word in plain_tty


@pytest.mark.parametrize("argv", [("doctor",), ("job", "list")], ids=["doctor", "job-list"])
def test_no_color_turns_colour_off_even_on_a_terminal(li_home, argv) -> None:
    ended_runs(li_home)
    code, on_tty = through_a_terminal(li_home, *argv, no_color="1")
    assert code == 0 and ESC not in on_tty


def test_an_empty_no_color_does_not_turn_colour_off(li_home) -> None:
    code, on_tty = through_a_terminal(li_home, "doctor", no_color="")
    assert code == 0 and ESC in on_tty


def test_doctor_on_a_terminal_names_a_failure_and_its_fix_and_exits_one(tmp_path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    code, on_tty = through_a_terminal(str(blocker / "li"), "doctor")
    assert code == 1
    assert "FAIL" in on_tty and "fix: make the directory writable" in on_tty and ESC in on_tty
    code, piped = through_a_pipe(str(blocker / "li"), "doctor")
    assert code == 1 and "FAIL  store.writable" in piped and ESC not in piped


def test_the_machine_answer_has_no_colour_on_a_terminal(li_home) -> None:
    code, on_tty = through_a_terminal(li_home, "doctor", "--machine")
    assert code == 0 and ESC not in on_tty and on_tty.lstrip().startswith('{"ok": true')
