"""Under --machine, an envelope stdout cannot take is a transport fault (D8): exit 74, one stderr line.

Never 0 (a consumer would look for an envelope that is not there), never 78 (nothing is wrong with
the installation), never a traceback. The real `li` is driven with its stdout on a full device, on
a pipe whose reader has gone, and closed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

import pytest

from tests.support import li_bin, submit_detached

EX_IOERR = 74
# A small answer, a refusal, and an envelope larger than a pipe's buffer (the whole help text).
REQUESTS = [("handshake",), ("job", "status", "not-a-run-id"), ("--help",)]


def run_with_stdout(argv: tuple[str, ...], home: str, stdout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([li_bin(), *argv, "--machine"], stdin=subprocess.DEVNULL, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=60, env=dict(os.environ, LI_HOME=home))


def on_full_device(argv: tuple[str, ...], home: str) -> subprocess.CompletedProcess[str]:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        return run_with_stdout(argv, home, fd)
    finally:
        os.close(fd)


def on_pipe_nobody_reads(argv: tuple[str, ...], home: str) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader left before li wrote a byte
    try:
        return run_with_stdout(argv, home, write_end)
    finally:
        os.close(write_end)


def with_stdout_closed(argv: tuple[str, ...], home: str) -> subprocess.CompletedProcess[str]:
    """`li ... --machine >&-`: started with no descriptor 1 at all."""
    return subprocess.run(["/bin/sh", "-c", 'exec "$@" >&-', "sh", li_bin(), *argv, "--machine"],
                          stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60,
                          env=dict(os.environ, LI_HOME=home))


FAULTS: dict[str, Callable[[tuple[str, ...], str], subprocess.CompletedProcess[str]]] = {
    "full-device": on_full_device, "pipe-nobody-reads": on_pipe_nobody_reads, "stdout-closed": with_stdout_closed,
}


def assert_transport_fault(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == EX_IOERR, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("li: transport fault:"), proc.stderr


@pytest.mark.parametrize("argv", REQUESTS, ids=["handshake", "refusal", "large-help"])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_an_envelope_stdout_cannot_take_exits_74_with_one_line_on_stderr(fault: str, argv: tuple[str, ...],
                                                                         li_home: str) -> None:
    assert_transport_fault(FAULTS[fault](argv, li_home))


def test_a_submit_with_stdout_closed_exits_74_before_it_allocates_a_run(li_home: str) -> None:
    proc = with_stdout_closed(("agent", "sh", "true", "--detach"), li_home)
    assert_transport_fault(proc)
    runs = os.path.join(li_home, "runs")
    assert not os.path.isdir(runs) or os.listdir(runs) == []  # nobody could have read its handle


def test_without_stderr_either_the_exit_status_alone_says_74(li_home: str) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    proc = subprocess.run(["/bin/sh", "-c", 'exec "$@" >/dev/full 2>&-', "sh", li_bin(), "handshake", "--machine"],
                          stdin=subprocess.DEVNULL, timeout=60, env=dict(os.environ, LI_HOME=li_home))
    assert proc.returncode == EX_IOERR


def test_a_person_whose_reader_went_away_still_gets_141_quietly(li_home: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([li_bin(), "--help"], stdin=subprocess.DEVNULL, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=60, env=dict(os.environ, LI_HOME=li_home))
    finally:
        os.close(write_end)
    assert proc.returncode == 141 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("argv", [("--help",), ("job", "list"), ("handshake",), ("--version",)],
                         ids=["help", "list", "handshake", "version"])
@pytest.mark.parametrize("fault", ["full-device", "stdout-closed"])
def test_a_person_whose_stdout_cannot_take_the_text_gets_one_line_and_74_never_a_traceback(
        fault: str, argv: tuple[str, ...], li_home: str) -> None:
    if fault == "full-device":
        if not os.path.exists("/dev/full"):
            pytest.skip("no /dev/full on this system")
        proc = subprocess.run(["/bin/sh", "-c", 'exec "$@" >/dev/full', "sh", li_bin(), *argv],
                              stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60,
                              env=dict(os.environ, LI_HOME=li_home))
    else:
        proc = subprocess.run(["/bin/sh", "-c", 'exec "$@" >&-', "sh", li_bin(), *argv],
                              stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60,
                              env=dict(os.environ, LI_HOME=li_home))
    assert_transport_fault(proc)


def test_a_foreground_agent_with_stdout_closed_runs_nothing(li_home: str) -> None:
    proc = subprocess.run(["/bin/sh", "-c", 'exec "$@" >&-', "sh", li_bin(), "agent", "sh", "true"],
                          stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60,
                          env=dict(os.environ, LI_HOME=li_home))
    assert_transport_fault(proc)
    runs = os.path.join(li_home, "runs")
    assert not os.path.isdir(runs) or os.listdir(runs) == []


# --- found by an adversarial review of the real li; each pins one fixed defect ---------------


def test_a_reader_that_went_away_ends_a_human_listing_quietly(li_home: str) -> None:
    submit_detached(li_home, "sh", "true")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before li writes a byte: `li job list | head -0`
    try:
        proc = subprocess.run([li_bin(), "job", "list"], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=60, env=dict(os.environ, LI_HOME=li_home))
    finally:
        os.close(write_end)
    assert proc.returncode == 141
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
