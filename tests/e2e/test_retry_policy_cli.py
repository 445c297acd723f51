"""Retries by policy through the real `li`: `--retry N --retry-on REASONS`.

With a fake `claude` replaying the real CLI's recorded rate-limited stream (its `rate_limit_event`
rewritten to reset a few seconds ahead) for the first calls and its recorded answer after: one
run id, every attempt recorded on it, terminal only after the last, the vendor's reset respected;
shell work that fails is never retried; a kill during the wait ends the retrying at once. The
real Claude Code against the model stub is in tests/e2e/test_real_agents.py."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.support import fake_cli_path, machine, run_li, wait_terminal

pytestmark = pytest.mark.timeout(120)
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "claude" / "recorded"

FAKE = f'''#!{sys.executable}
"""A claude rate limited for its first FAKE_LIMITED calls (reset FAKE_RESET_IN s ahead), then answering."""
import json, os, sys, time
sys.stdin.read()
calls = os.environ["FAKE_CALLS"]
with open(calls, "a") as log:
    log.write(str(time.time()) + "\\n")
with open(calls) as log:
    n = len(log.read().split())
limited = n <= int(os.environ.get("FAKE_LIMITED", "2"))
case = "rate_limited" if limited else "answer"
with open(os.path.join({str(RECORDED)!r}, case + ".jsonl")) as sample:
    lines = sample.read().splitlines()
print(lines[0], flush=True)
if limited:
    reset = int(time.time() + float(os.environ.get("FAKE_RESET_IN", "2"))) + 1  # whole seconds, as the vendor's
    with open(calls + ".resets", "a") as resets:
        resets.write(str(reset) + "\\n")
    print(json.dumps({{"type": "rate_limit_event", "rate_limit_info": {{"status": "rejected", "resetsAt": reset}}}}),
          flush=True)
for line in lines[1:]:
    print(line, flush=True)
with open(os.path.join({str(RECORDED)!r}, case + ".meta.json")) as meta:
    sys.exit(json.load(meta)["exit"] or 0)
'''


@pytest.fixture
def fake(tmp_path: Path) -> dict[str, str]:
    return {"PATH": fake_cli_path(tmp_path, "claude", FAKE), "FAKE_CALLS": str(tmp_path / "calls")}


def calls(env: dict[str, str]) -> list[float]:
    return [float(t) for t in Path(env["FAKE_CALLS"]).read_text().split()]


def test_a_rate_limited_run_is_retried_under_its_one_id_until_it_succeeds(li_home: str, fake: dict[str, str]) -> None:
    run_id = machine("agent", "--detach", "--retry", "3", "--retry-backoff", "0.5", "claude", "hi", home=li_home,
                     env=fake).data["run_id"]
    data = wait_terminal(li_home, run_id, timeout=60)
    assert (data["status"], data["outcome"], data["reason_code"]) == ("completed", "succeeded", None)
    attempts = data["attempts"]
    assert [(a["attempt"], a["status"], a["reason_code"]) for a in attempts] == [
        (1, "failed", "provider_rate_limited"), (2, "failed", "provider_rate_limited"), (3, "completed", None)]
    made = calls(fake)
    assert len(made) == 3
    for before, after in zip(attempts, attempts[1:], strict=False):  # the vendor's reset (2 s) wins over 0.5 s
        assert before["next_at"] is not None
        waited = datetime.fromisoformat(after["started_at"]) - datetime.fromisoformat(before["ended_at"])
        assert waited >= timedelta(seconds=1), attempts
    resets = [float(t) for t in Path(fake["FAKE_CALLS"] + ".resets").read_text().split()]
    assert made[1] >= resets[0] and made[2] >= resets[1], (made, resets)  # never before the vendor's reset
    assert attempts[-1]["next_at"] is None and attempts[-1]["ended_at"] == data["finished_at"]
    assert Path(li_home, "runs", run_id, "artifacts", "response.md").exists()


def test_the_last_attempt_decides_and_the_run_is_terminal_only_after_it(li_home: str, fake: dict[str, str]) -> None:
    env = {**fake, "FAKE_LIMITED": "9", "FAKE_RESET_IN": "1"}
    run_id = machine("agent", "--detach", "--retry", "1", "claude", "hi", home=li_home, env=env).data["run_id"]
    deadline = time.monotonic() + 30
    between = None
    while time.monotonic() < deadline:
        status = machine("job", "status", run_id, home=li_home).data
        if status["attempts"] and not status["terminal"]:
            between = status
            break
        time.sleep(0.05)
    assert between is not None and between["outcome"] is None and between["status"] == "running"
    assert between["attempts"][0]["reason_code"] == "provider_rate_limited"
    data = wait_terminal(li_home, run_id, timeout=30)
    assert (data["outcome"], data["reason_code"]) == ("failed", "provider_rate_limited")
    assert len(data["attempts"]) == 2 and len(calls(env)) == 2


def test_a_failure_of_the_work_itself_is_never_retried(li_home: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    run_id = machine("agent", "--detach", "--retry", "3", "--retry-on", "provider_error,provider_overloaded", "sh",
                     f"echo once >> {marker}; exit 3", home=li_home).data["run_id"]
    data = wait_terminal(li_home, run_id, timeout=30)
    assert (data["outcome"], data["reason_code"], data["exit_code"]) == ("failed", "exit_nonzero", 3)
    assert marker.read_text() == "once\n"
    assert [a["attempt"] for a in data["attempts"]] == [1]


def test_a_kill_during_the_wait_stops_the_retrying(li_home: str, fake: dict[str, str]) -> None:
    env = {**fake, "FAKE_LIMITED": "9", "FAKE_RESET_IN": "60"}
    run_id = machine("agent", "--detach", "--retry", "5", "claude", "hi", home=li_home, env=env).data["run_id"]
    deadline = time.monotonic() + 30
    while not machine("job", "status", run_id, home=li_home).data["attempts"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    began = time.monotonic()
    machine("job", "kill", run_id, home=li_home)
    data = wait_terminal(li_home, run_id, timeout=15)
    assert data["status"] == "cancelled" and time.monotonic() - began < 10
    time.sleep(1)
    assert len(calls(env)) == 1  # no attempt after the kill


@pytest.mark.parametrize("flags", [("--retry", "-1"), ("--retry", "x"), ("--retry", "2", "--retry-on", "exit_nonzero"),
                                   ("--retry", "2", "--retry-on", "budget_exceeded"), ("--retry-on", "provider_error"),
                                   ("--retry", "1", "--retry-backoff", "0")])
def test_a_policy_li_would_not_keep_is_refused(li_home: str, flags: tuple[str, ...]) -> None:
    done = run_li("agent", "--detach", *flags, "sh", "true", "--machine", home=li_home)
    assert json.loads(done.stdout)["error"]["kind"] == "invalid_input", done.stdout
