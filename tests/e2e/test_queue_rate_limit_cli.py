"""A vendor's 429 pauses the queue until the reset it named (issue 29), through the real `li` and a
fake `claude` that answers its first call with the recorded rate-limited stream plus a rejected
`rate_limit_event` resetting a few seconds from now, and every later call with the recorded answer.

Proven: the rate-limited run alone fails (`provider_rate_limited`, its `retry_at` the reset); the
queue says it is paused, why, until when and by which run, and opens by itself; the runs waiting
behind it stay `queued` (never failed) and start only after the reset, in their order."""

from __future__ import annotations

import os
import stat
import sys
import time
from datetime import datetime
from pathlib import Path

from tests.support import machine

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "claude" / "recorded"
RESET_IN = 12  # seconds from the first call to the vendor's reset

FAKE = f'''#!{sys.executable}
"""A claude whose first call is rate limited until RESET_AT, and which answers every later one."""
import json, os, sys, time
sys.stdin.read()
state = os.environ["FAKE_RATE_STATE"]
first = not os.path.exists(state)
open(state, "a").close()
case = "rate_limited" if first else "answer"
with open(os.path.join({str(RECORDED)!r}, case + ".jsonl")) as sample:
    lines = sample.read().splitlines()
print(lines[0], flush=True)
if first:
    reset = int(time.time()) + {RESET_IN}
    print(json.dumps({{"type": "rate_limit_event", "rate_limit_info": {{"status": "rejected", "resetsAt": reset}}}}),
          flush=True)
for line in lines[1:]:
    print(line, flush=True)
with open(os.path.join({str(RECORDED)!r}, case + ".meta.json")) as meta:
    sys.exit(json.load(meta)["exit"] or 0)
'''


def fake_claude(tmp: Path) -> dict[str, str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    script = bin_dir / "claude"
    script.write_text(FAKE)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_RATE_STATE": str(tmp / "called")}


def status(home: str, run_id: str) -> dict[str, object]:
    return machine("job", "status", run_id, home=home).data


def until_terminal(home: str, run_id: str, seconds: float = 60) -> dict[str, object]:
    deadline = time.monotonic() + seconds
    while not (data := status(home, run_id))["terminal"]:
        assert time.monotonic() < deadline, data
        time.sleep(0.1)
    return data


def test_a_429_pauses_the_queue_until_the_reset_and_the_waiting_runs_start_after_it(
        li_home: str, tmp_path: Path) -> None:
    env = fake_claude(tmp_path)
    machine("queue", "set", "claude", "--parallel", "1", home=li_home)
    ids = [machine("agent", "--detach", "--queue", "claude", "claude", "Say hello.", home=li_home, env=env)
           .data["run_id"] for _ in range(3)]
    limited = until_terminal(li_home, ids[0])
    assert (limited["status"], limited["outcome"], limited["reason_code"]) == (
        "failed", "failed", "provider_rate_limited"), limited
    reset = datetime.fromisoformat(str(limited["retry_at"]))
    said = machine("job", "output", ids[0], home=li_home).data["console"]["value"]
    assert f"queue claude paused until {reset.isoformat(timespec='microseconds')} (rate limited)" in said, said
    row = machine("queue", "list", home=li_home).data["queues"][0]
    if datetime.now(reset.tzinfo) < reset:  # said while the pause lasts
        assert (row["paused"], row["paused_reason"], row["paused_by"]) == (True, "provider_rate_limited", ids[0]), row
        assert datetime.fromisoformat(str(row["paused_until"])) == reset
        waiting = status(li_home, ids[1])
        assert (waiting["status"], waiting["terminal"], waiting["queue_position"]) == ("queued", False, 1)
    ended = [until_terminal(li_home, run_id, 90) for run_id in ids[1:]]
    assert [(e["status"], e["outcome"]) for e in ended] == [("completed", "succeeded")] * 2
    starts = [datetime.fromisoformat(str(e["started_at"])) for e in ended]
    assert starts[0] >= reset and starts == sorted(starts)  # after the reset, in their order
    assert machine("queue", "list", home=li_home).data["queues"][0]["paused"] is False  # opened by itself
