"""The stdout descriptor itself is protected under --machine: stray writes of any kind land on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.support import REPO

# A verb that makes noise every way a library or a child process could, then answers.
NOISY = textwrap.dedent("""
    import os, subprocess, sys, warnings
    import lionrun.entrypoints.verbs.handshake as handshake
    real = handshake.run
    def noisy(args):
        print("stray print")
        sys.stdout.write("stray sys.stdout\\n")
        sys.__stdout__.write("stray sys.__stdout__\\n")
        sys.__stdout__.flush()
        os.write(1, b"stray fd 1\\n")
        subprocess.run(["sh", "-c", "echo stray child"], check=True)
        subprocess.Popen(["sh", "-c", "sleep 0.3; echo stray late grandchild"])
        warnings.warn("stray warning")
        if os.environ.get("NOISY_FAILS"):
            raise RuntimeError("noisy verb fails after its noise")
        return real(args)
    handshake.run = noisy
    handshake.show = lambda data, args: print("human answer") or 0
    from lionrun.entrypoints.bootstrap import main
    sys.exit(main(sys.argv[1:]))
""")
STRAYS = ["stray print", "stray sys.stdout", "stray sys.__stdout__", "stray fd 1", "stray child", "stray warning"]


def run_noisy(*argv: str, fails: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"NOISY_FAILS": "1"} if fails else {})}
    return subprocess.run([sys.executable, "-c", NOISY, *argv], cwd=REPO, capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=60)


def only_envelope(stdout: str) -> dict[str, object]:
    text = stdout.strip()
    value, end = json.JSONDecoder().raw_decode(text)
    assert end == len(text), f"stray output reached stdout: {stdout!r}"
    return value


def test_without_machine_the_noise_really_goes_to_stdout() -> None:
    # The harness's teeth: unprotected, every stray write would land on stdout.
    proc = run_noisy("handshake")
    for stray in ["stray print", "stray fd 1", "stray child"]:
        assert stray in proc.stdout, proc.stdout


@pytest.mark.parametrize("position", ["end", "front"])
def test_stray_writes_of_every_kind_cannot_corrupt_the_machine_stdout(position: str) -> None:
    argv = ["handshake", "--machine"] if position == "end" else ["--machine", "handshake"]
    proc = run_noisy(*argv)
    assert proc.returncode == 0
    envelope = only_envelope(proc.stdout)
    assert envelope["ok"] is True and envelope["data"]["contract_version"] == 1
    for stray in STRAYS:
        assert stray in proc.stderr, (stray, proc.stderr)
    assert "stray late grandchild" not in proc.stdout


def test_a_noisy_verb_that_then_fails_still_answers_with_one_internal_envelope() -> None:
    proc = run_noisy("handshake", "--machine", fails=True)
    assert proc.returncode == 0
    envelope = only_envelope(proc.stdout)
    assert envelope["ok"] is False and envelope["error"]["kind"] == "internal"
    assert "Traceback" not in proc.stderr
