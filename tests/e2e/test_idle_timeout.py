"""The idle watchdog, through the real `li`: an agent CLI that writes no event
for `--idle-timeout` seconds is stopped and the run ends timed_out, reason idle_timeout — in the
lean supervisor and in the full runner; one that keeps writing (its own retry lines) is not."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support import machine

FAKES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fakes", "bin")


@pytest.fixture(params=["lean", "full"])
def supervisor_mode(request) -> str:
    return str(request.param)


def run(home: str, cwd: Path, cli: str, case: str, mode: str, *options: str, **env: str) -> dict:
    full = {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}", f"FAKE_{cli.upper()}_MODE": f"recorded:{case}",
            "LI_SUPERVISOR": mode, **env}
    run_id = machine("agent", "--detach", "--cwd", str(cwd), *options, cli, "Say hello.", home=home,
                     env=full).data["run_id"]
    deadline = time.monotonic() + 30
    while not (data := machine("job", "status", run_id, home=home).data)["terminal"]:
        assert time.monotonic() < deadline, data
        time.sleep(0.1)
    return data


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_a_cli_that_goes_silent_is_stopped_and_ends_idle_timeout(li_home: str, tmp_path: Path, cli: str,
                                                                 supervisor_mode: str) -> None:
    began = time.monotonic()
    data = run(li_home, tmp_path, cli, "hang", supervisor_mode, "--idle-timeout", "1")
    assert (data["status"], data["outcome"], data["reason_code"]) == ("timed_out", "failed", "idle_timeout"), data
    assert time.monotonic() - began < 25  # the fake would hang 30 s
    console = Path(li_home, "runs", data["run_id"], "console.log").read_text()
    said = Path(li_home, "runs", data["run_id"], "li.log").read_text()
    assert "li runner: no event from the agent for 1 s; stopping it" in said and "li runner" not in console


def test_codex_retrying_an_unreachable_endpoint_for_ever_is_stopped_by_the_watchdog(li_home: str,
                                                                                    tmp_path: Path) -> None:
    data = run(li_home, tmp_path, "codex", "refused", "lean", "--idle-timeout", "1")
    assert (data["status"], data["reason_code"]) == ("timed_out", "idle_timeout"), data


def test_a_cli_that_keeps_writing_its_retries_is_never_stopped_by_it(li_home: str, tmp_path: Path,
                                                                     supervisor_mode: str) -> None:
    # claude's recorded recovery: init, two api_retry lines, the answer, the result — 0.6 s apart, 3 s in all
    data = run(li_home, tmp_path, "claude", "transient", supervisor_mode, "--idle-timeout", "1",
               FAKE_TRICKLE_SECONDS="0.6")
    assert (data["status"], data["outcome"], data["reason_code"]) == ("completed", "succeeded", None), data


def test_idle_timeout_is_refused_for_shell_work_and_when_not_a_number(li_home: str) -> None:
    refused = machine("agent", "--detach", "--idle-timeout", "5", "sh", "true", home=li_home).envelope
    assert refused["error"]["kind"] == "invalid_input", refused
    bad = machine("agent", "--detach", "--idle-timeout", "soon", "claude", "hi", home=li_home).envelope
    assert bad["error"]["kind"] == "invalid_input", bad


def test_config_toml_sets_the_default_and_0_turns_it_off(li_home: str, tmp_path: Path) -> None:
    Path(li_home, "config.toml").write_text("idle_timeout = 1\n")
    data = run(li_home, tmp_path, "claude", "hang", "lean")
    assert data["reason_code"] == "idle_timeout", data
    data = run(li_home, tmp_path, "claude", "answer", "lean", "--idle-timeout", "0", FAKE_TRICKLE_SECONDS="1.5")
    assert data["status"] == "completed", data
