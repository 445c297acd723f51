"""The lean supervisor (`adapters/supervisor.py`) alone, with real processes and signals.

Each test writes the spec the runner would write, starts `python -I -S supervisor.py SPEC_FD`
with the console as its stdout and the li log as its stderr (as the runner leaves them), and gives it a finisher that only writes down the argv it was
exec'd with and what the capture descriptor holds (the real finisher is `entrypoints.runner
--finish`, exercised end to end in tests/e2e/test_lean_runs.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from lionrun.adapters.fs_store import RECORD
from lionrun.adapters.providers import PUMP_JOIN, script_descriptor
from lionrun.adapters.supervision import SUPERVISOR, captured_lines
from lionrun.application.work import KILL_SEEN
from lionrun.domain.evidence import KILL_GRACE
from lionrun.domain.untrusted import RECORD_MAX_BYTES

FINISHER = textwrap.dedent("""
    import json, os, sys
    capture = int(sys.argv[3])
    os.lseek(capture, 0, 0)
    data = b""
    while chunk := os.read(capture, 65536):
        data += chunk
    fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
    with open(os.environ["FINISHED"], "w") as out:
        json.dump({"argv": sys.argv[1:], "capture": data.decode("utf-8", "replace"), "pid": os.getpid(),
                   "fds": fds}, out)
""")


class Supervised:
    """One supervisor started on a spec; `finished()` is what its finisher was handed."""

    def __init__(self, tmp_path: Path, argv: list[str], *, timeout: float | None = None, stdin: str | None = None,
                 folder: int | None = None, kill_watch: float | None = None, pass_fds: tuple[int, ...] = (),
                 cwd: str | None = None, term_before: bool = False) -> None:
        self.tmp_path = tmp_path
        self.console = tmp_path / "console.log"
        self.li_log = tmp_path / "li.log"
        self.result = tmp_path / "finished.json"
        self.capture = script_descriptor("", "li-leg-stdout")
        stdin_fd = None if stdin is None else script_descriptor(stdin, "li-leg-stdin")
        spec = {"run_id": "20261203T000000-abcdef", "argv": argv, "cwd": cwd or str(tmp_path),
                "env": {"PATH": os.environ["PATH"], "MARK": "leg"}, "stdin_fd": stdin_fd, "pass_fds": list(pass_fds),
                "timeout": timeout, "began": 12.5, "kill_watch": kill_watch, "folder_fd": folder,
                "capture_fd": self.capture, "finish": [sys.executable, "-c", FINISHER],
                "kill_grace": KILL_GRACE, "pump_join": PUMP_JOIN, "record": RECORD,
                "record_max_bytes": RECORD_MAX_BYTES, "kill_seen": KILL_SEEN}
        spec_fd = script_descriptor(json.dumps(spec), "li-supervision")
        inherited = (spec_fd, self.capture, *pass_fds, *(fd for fd in (stdin_fd, folder) if fd is not None))

        def before() -> None:
            if term_before:  # a SIGTERM that came while the runner prepared the leg: pending at the exec
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
                os.kill(os.getpid(), signal.SIGTERM)

        with open(self.console, "ab") as console, open(self.li_log, "ab") as li_log:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", SUPERVISOR, str(spec_fd)], stdout=console, stderr=li_log,
                stdin=subprocess.DEVNULL, pass_fds=inherited, start_new_session=True,
                env={**os.environ, "FINISHED": str(self.result)}, preexec_fn=before)
        for fd in inherited:
            os.close(fd)

    def finished(self, within: float = 30.0) -> dict[str, Any]:
        self.process.wait(timeout=within)
        return json.loads(self.result.read_text())

    def text(self) -> str:
        """The console: what the leg wrote, and nothing else."""
        return self.console.read_text(errors="replace")

    def said(self) -> str:
        """The li log: the supervisor's own lines."""
        return self.li_log.read_text(errors="replace")

    def leg_pids(self) -> list[int]:
        """The supervisor's children (the leg's process)."""
        try:
            return [int(p) for p in Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
                    .read_text().split()]
        except OSError:
            return []

    def wait_for_leg(self, within: float = 10.0) -> int:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            pids = self.leg_pids()
            if pids:
                return pids[0]
            time.sleep(0.02)
        raise AssertionError(f"no leg started: {self.text()}")

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def supervised(tmp_path: Path):
    made: list[Supervised] = []

    def start(argv: list[str], **kwargs: Any) -> Supervised:
        made.append(Supervised(tmp_path, argv, **kwargs))
        return made[-1]

    yield start
    for one in made:
        one.close()


def handed(result: dict[str, Any]) -> tuple[str, str, str, str]:
    """(exit, timed out, cancelled, runner began) of the finisher's argv."""
    argv = result["argv"]
    assert argv[:2] == ["--finish", "20261203T000000-abcdef"], argv
    return argv[3], argv[4], argv[5], argv[6]


def test_stdout_is_captured_and_both_streams_reach_the_console_in_lines(supervised) -> None:
    one = supervised(["/bin/sh", "-c", 'printf "one\\ntwo"; echo " end"; echo oops >&2; printf "\\377\\n"; exit 3'])
    result = one.finished()
    assert handed(result) == ("3", "0", "0", "12.5")
    assert result["capture"] == "one\ntwo end\n\ufffd\n"
    text = one.text()
    assert "one\ntwo end\n" in text and "oops\n" in text
    assert sorted(text.splitlines()) == sorted(["one", "two end", "oops", "\ufffd"])  # the leg's bytes alone
    assert one.said() == ""  # nothing for li to say of a leg that ran and ended

def test_the_prompt_is_the_leg_s_stdin_and_its_env_is_the_spec_s(supervised) -> None:
    one = supervised(["/bin/sh", "-c", 'cat; echo "[$MARK]"'], stdin="the prompt\n")
    assert one.finished()["capture"] == "the prompt\n[leg]\n"


def test_the_leg_keeps_only_its_own_descriptors(supervised, tmp_path: Path) -> None:
    script = script_descriptor("for fd in /proc/$$/fd/*; do readlink $fd; done\n")
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    one = supervised(["/bin/sh", f"/dev/fd/{script}"], pass_fds=(script,), folder=folder, kill_watch=5.0)
    targets = set(one.finished()["capture"].splitlines())
    assert all(t.startswith(("pipe:", "/dev/null", "/memfd:li-instruction")) for t in targets), targets
    assert not any("li-supervision" in t or "li-leg-stdout" in t or t == str(tmp_path) for t in targets)


def test_the_finisher_is_handed_only_the_capture(supervised) -> None:
    result = supervised(["/bin/true"]).finished()
    assert int(result["argv"][2]) in result["fds"]
    assert len(result["fds"]) <= 5, result["fds"]  # 0, 1, 2, the capture, and listdir's own


def test_a_leg_that_cannot_be_started_exits_127_with_the_runner_s_message(supervised, tmp_path: Path) -> None:
    one = supervised(["no-such-agent-cli", "--print"])
    assert handed(one.finished())[:3] == ("127", "0", "0")
    assert "li runner: could not start no-such-agent-cli: [Errno 2] No such file or directory" in one.said()
    assert one.text() == ""  # the leg never ran: its console holds nothing
    gone = supervised(["/bin/true"], cwd=str(tmp_path / "gone"))
    assert handed(gone.finished())[0] == "127"


def test_sigterm_stops_the_leg_s_group_and_is_handed_on_as_cancelled(supervised) -> None:
    one = supervised(["/bin/sh", "-c", "sleep 60 & sleep 60; wait"])
    one.wait_for_leg()
    time.sleep(0.2)
    began = time.monotonic()
    one.process.send_signal(signal.SIGTERM)
    exit_code, timed_out, cancelled, _ = handed(one.finished())
    assert (exit_code, timed_out, cancelled) == ("-15", "0", "1")
    assert time.monotonic() - began < 5


def test_a_leg_that_ignores_sigterm_is_killed_after_the_grace(supervised) -> None:
    one = supervised(["/bin/sh", "-c", "trap '' TERM; echo armed; while :; do sleep 0.1; done"])
    one.wait_for_leg()
    deadline = time.monotonic() + 10
    while "armed" not in one.text() and time.monotonic() < deadline:
        time.sleep(0.02)
    one.process.send_signal(signal.SIGTERM)
    assert handed(one.finished())[:3] == ("-9", "0", "1")


def test_a_sigterm_pending_at_the_exec_starts_nothing(supervised, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    one = supervised(["/bin/sh", "-c", f"touch {marker}"], term_before=True)
    assert handed(one.finished())[:3] == ("-", "0", "1")
    assert not marker.exists()


def test_the_timeout_stops_the_leg_and_is_handed_on(supervised) -> None:
    began = time.monotonic()
    one = supervised(["/bin/sleep", "60"], timeout=0.5)
    assert handed(one.finished())[:3] == ("-15", "1", "0")
    assert time.monotonic() - began < 5


def test_a_kill_request_in_the_record_stops_the_leg(supervised, tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"run_id": "x", "kill_requested_at": None}))
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    one = supervised(["/bin/sleep", "60"], folder=folder, kill_watch=0.1)
    one.wait_for_leg()
    time.sleep(0.3)
    assert one.process.poll() is None  # no request yet: the leg runs on
    fresh = tmp_path / "record.new"
    fresh.write_text(json.dumps({"run_id": "x", "kill_requested_at": "2026-12-03T00:00:00+00:00"}))
    fresh.rename(record)
    assert handed(one.finished())[:3] == ("-15", "0", "1")
    assert "li runner: a kill request is recorded; stopping the work" in one.said()
    assert "li runner" not in one.text()


@pytest.mark.parametrize("planted", ["link", "fifo", "huge"])
def test_a_record_planted_as_a_link_a_fifo_or_a_huge_file_neither_hangs_nor_stops_the_leg(
        supervised, tmp_path: Path, planted: str) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"kill_requested_at": "2026-12-03T00:00:00+00:00"}))
    record = tmp_path / "record.json"
    if planted == "link":
        record.symlink_to(elsewhere)
    elif planted == "fifo":
        os.mkfifo(record)
    else:
        record.write_text(json.dumps({"kill_requested_at": "2026-12-03T00:00:00+00:00", "pad": "x" * (2 << 20)}))
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    one = supervised(["/bin/sh", "-c", "sleep 1.5; echo lived"], folder=folder, kill_watch=0.05)
    assert handed(one.finished(within=20))[:3] == ("0", "0", "0")
    assert "lived" in one.text()


def test_captured_lines_split_as_the_in_process_runner_reads_them() -> None:
    fd = script_descriptor("a\r\nb\rc\n\xffd")
    assert captured_lines(fd) == ["a\r\n", "b\rc\n", "\xffd"]


def test_a_hand_over_told_a_sigterm_came_execs_nothing_and_closes_what_it_opened() -> None:
    from lionrun.adapters.supervision import hand_over
    from lionrun.application.ports import Held, LegLaunch
    from lionrun.application.work import LeanHandover

    script = script_descriptor("echo never")
    launch = LegLaunch(argv=("/bin/sh", f"/dev/fd/{script}"), stdin_text="the prompt", keeps=(Held(script),))
    supervision = LeanHandover(run_id="20261203T000000-abcdef", launch=launch, cwd="/", env={}, timeout=None,
                              began=0.0, kill_watch=None)
    before = len(os.listdir("/proc/self/fd"))
    hand_over(supervision, None, ["/bin/false"], lambda: True)  # an exec here would end this test process
    with pytest.raises(OSError):
        os.fstat(script)  # the leg's own descriptor is closed too
    assert len(os.listdir("/proc/self/fd")) == before - 1  # and nothing it made is left open
