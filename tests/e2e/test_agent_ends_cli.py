"""Agent ends through the real `li`: reason, `retry_at`, `session_id` and the answer
recorded from a stream the real CLI gave (replayed by the fakes, tests/fixtures/transcripts)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.support import machine, run_li

FAKES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fakes", "bin")
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def replayed(home: str, cli: str, case: str, cwd: Path) -> dict:
    env = {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}", f"FAKE_{cli.upper()}_MODE": f"recorded:{case}"}
    run_id = machine("agent", "--detach", "--cwd", str(cwd), cli, "Say hello.", home=home, env=env).data["run_id"]
    deadline = time.monotonic() + 30
    while not (data := machine("job", "status", run_id, home=home).data)["terminal"]:
        assert time.monotonic() < deadline, data
        time.sleep(0.1)
    return data


def first_event(cli: str, case: str) -> dict:
    return json.loads((RECORDED / cli / "recorded" / f"{case}.jsonl").read_text().splitlines()[0])


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_an_answer_is_kept_and_the_cli_s_session_id_recorded(li_home: str, tmp_path: Path, cli: str) -> None:
    data = replayed(li_home, cli, "answer", tmp_path)
    first = first_event(cli, "answer")
    assert (data["status"], data["outcome"], data["reason_code"]) == ("completed", "succeeded", None), data
    assert data["session_id"] == (first.get("session_id") or first.get("thread_id"))
    assert data["retry_at"] is None
    answer = Path(li_home, "runs", data["run_id"], "artifacts", "response.md").read_text()
    assert answer == "Hello from the stub."


def test_a_rate_limited_end_says_when_to_retry(li_home: str, tmp_path: Path) -> None:
    data = replayed(li_home, "gemini", "rate_limited", tmp_path)
    assert (data["status"], data["outcome"], data["reason_code"]) == ("failed", "failed", "provider_rate_limited")
    assert data["retry_at"] == "2026-12-04T02:27:49+00:00"
    assert not Path(li_home, "runs", data["run_id"], "artifacts", "response.md").exists()
    listed = machine("job", "list", home=li_home).data["runs"][0]
    assert (listed["retry_at"], listed["session_id"]) == (data["retry_at"], data["session_id"])


def test_the_person_sees_the_retries_and_the_error_once_never_as_success(li_home: str, tmp_path: Path) -> None:
    data = replayed(li_home, "claude", "rate_limited", tmp_path)
    assert data["reason_code"] == "provider_rate_limited"
    shown = run_li("job", "output", data["run_id"], home=li_home).stdout
    assert "↻ retrying (1/1): HTTP 429 rate_limit" in shown
    assert shown.count("Number of request tokens has exceeded your per-minute rate limit") == 1
    assert "✗ API Error: Request rejected (429)" in shown
    assert "success" not in shown
