"""CommandNotifier against real commands: payload on stdin, own group, closed failure classes."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import psutil

from lionrun.adapters.notifier import CommandNotifier

BODY = {"run_id": "20260803T000000-abcdef", "terminal": True, "outcome": "failed"}


def test_the_payload_arrives_on_stdin_and_a_zero_exit_is_ok(tmp_path: Path) -> None:
    out = tmp_path / "got.json"
    result = CommandNotifier(5).deliver(["sh", "-c", 'cat > "$0"', str(out)], BODY)
    assert (result.ok, result.exit_code, result.failure_class) == (True, 0, None)
    assert json.loads(out.read_text()) == BODY


def test_the_command_runs_in_its_own_process_group(tmp_path: Path) -> None:
    out = tmp_path / "ids"
    CommandNotifier(5).deliver(["sh", "-c", 'echo "$$ $(ps -o pgid= -p $$)" > "$0"', str(out)], BODY)
    pid, pgid = out.read_text().split()
    assert pid == pgid and int(pgid) != os.getpgid(0)


def test_a_nonzero_exit_is_recorded_with_its_code_and_stderr() -> None:
    result = CommandNotifier(5).deliver(["sh", "-c", "echo nope >&2; exit 3"], BODY)
    assert (result.ok, result.exit_code, result.failure_class, result.error) == (False, 3, "nonzero_exit", "nope")


def test_a_missing_executable_is_command_not_found(tmp_path: Path) -> None:
    result = CommandNotifier(5).deliver([str(tmp_path / "no-such-notifier")], BODY)
    assert (result.ok, result.exit_code, result.failure_class) == (False, None, "command_not_found")


def test_a_file_that_may_not_be_executed_is_permission_denied(tmp_path: Path) -> None:
    script = tmp_path / "notifier"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    result = CommandNotifier(5).deliver([str(script)], BODY)
    assert (result.ok, result.failure_class) == (False, "permission_denied")


def test_a_command_killed_by_a_signal_is_signalled() -> None:
    result = CommandNotifier(5).deliver(["sh", "-c", "kill -TERM $$"], BODY)
    assert (result.ok, result.exit_code, result.failure_class) == (False, -15, "signalled")
    assert result.error is not None and "SIGTERM" in result.error


def test_a_hanging_command_is_killed_with_its_whole_group_at_the_timeout(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    result = CommandNotifier(0.5).deliver(["sh", "-c", 'sleep 300 & echo $! > "$0"; wait', str(pids)], BODY)
    assert (result.ok, result.failure_class) == (False, "timeout")
    grandchild = int(pids.read_text())
    for _ in range(100):
        if not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.02)
    else:
        raise AssertionError("the hanging command's child survived the timeout")


def test_an_empty_command_is_an_unknown_failure_not_a_crash() -> None:
    result = CommandNotifier(5).deliver([], BODY)
    assert (result.ok, result.failure_class) == (False, "unknown")

