"""A vendor's 429 pauses the queue until the reset it named, through the real `li` and a
fake `claude` that answers its first call with the recorded rate-limited stream plus a rejected
`rate_limit_event` resetting a few seconds from now, and every later call with the recorded answer.

The first call waits for the test's word (a file holding how many seconds ahead the reset is) and
names a reset that far from its own end, which is the rate-limited run's end: the test sets that
ahead by how long `li` takes on this machine, so the pause is always seen while it lasts, on a
slow machine as on a fast one, and the test waits no longer than it needs to.

Proven: the rate-limited run alone fails (`provider_rate_limited`, its `retry_at` the reset); the
queue says it is paused, why, until when and by which run, and opens by itself; the runs waiting
behind it stay `queued` (never failed) and start only after the reset, in their order."""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path

from tests.support import fake_cli_path, machine

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "claude" / "recorded"
RESET_MIN = 6  # seconds from the rate-limited run's end to the vendor's reset, at least
RESET_CALLS = 10  # ... and at least this many of the slowest `li` call seen before it

FAKE = f'''#!{sys.executable}
"""A claude whose first call is rate limited until RESET_AT, and which answers every later one."""
import json, os, sys, time
sys.stdin.read()
state = os.environ["FAKE_RATE_STATE"]
first = not os.path.exists(state)
open(state, "a").close()
case = "rate_limited" if first else "answer"
if first:  # the test's word: how many seconds ahead the reset is
    go, waited = os.environ["FAKE_RATE_GO"], time.monotonic()
    while not os.path.exists(go) and time.monotonic() - waited < 120:
        time.sleep(0.02)
    with open(go) as word:
        reset_in = float(word.read())
with open(os.path.join({str(RECORDED)!r}, case + ".jsonl")) as sample:
    lines = sample.read().splitlines()
print(lines[0], flush=True)
if first:
    reset = int(time.time() + reset_in) + 1  # whole seconds, never less than reset_in ahead
    print(json.dumps({{"type": "rate_limit_event", "rate_limit_info": {{"status": "rejected", "resetsAt": reset}}}}),
          flush=True)
for line in lines[1:]:
    print(line, flush=True)
with open(os.path.join({str(RECORDED)!r}, case + ".meta.json")) as meta:
    sys.exit(json.load(meta)["exit"] or 0)
'''


def fake_claude(tmp: Path) -> dict[str, str]:
    return {"PATH": fake_cli_path(tmp, "claude", FAKE), "FAKE_RATE_STATE": str(tmp / "called"),
            "FAKE_RATE_GO": str(tmp / "go")}


def timed(slowest: list[float], *argv: str, **kwargs: object) -> dict[str, object]:
    """`machine(...)`'s data; how long the call took kept in `slowest` when it is the slowest yet."""
    began = time.monotonic()
    data = machine(*argv, **kwargs).data  # type: ignore[arg-type]
    slowest[0] = max(slowest[0], time.monotonic() - began)
    return data


def status(home: str, run_id: str) -> dict[str, object]:
    return machine("job", "status", run_id, home=home).data


def until_terminal(home: str, run_id: str, seconds: float = 60) -> dict[str, object]:
    deadline = time.monotonic() + seconds
    while not (data := status(home, run_id))["terminal"]:
        assert time.monotonic() < deadline, data
        time.sleep(0.1)
    return data


def until_said(home: str, run_id: str, words: str, seconds: float = 30) -> str:
    """The run's li log once it holds `words` (the runner says the pause after the end is recorded,
    in its own lines, apart from the work's console)."""
    deadline = time.monotonic() + seconds
    while words not in (said := str(machine("job", "output", run_id, home=home).data["li_log"]["value"])):
        assert time.monotonic() < deadline, said
        time.sleep(0.05)
    return said


def test_a_429_pauses_the_queue_until_the_reset_and_the_waiting_runs_start_after_it(
        li_home: str, tmp_path: Path) -> None:
    env = fake_claude(tmp_path)
    slowest = [0.0]
    timed(slowest, "queue", "set", "claude", "--parallel", "1", home=li_home)
    ids = [str(timed(slowest, "agent", "--detach", "--queue", "claude", "claude", "Say hello.", home=li_home,
                     env=env)["run_id"]) for _ in range(3)]
    # A few calls (the wait's answer, the output until it says the pause, the list, the status)
    # happen between the run's end and the last look at the pause: the reset is far enough ahead
    # of that end for many more of them.
    reset_in = max(RESET_MIN, RESET_CALLS * slowest[0])
    (tmp_path / "go").write_text(str(reset_in))
    print(f"the reset {reset_in:.1f} s after the rate-limited run's end (slowest li call {slowest[0]:.2f} s)")
    waited = machine("job", "wait", ids[0], "--max-wait", "120", "--poll-interval", "0.05", home=li_home).data
    said = until_said(li_home, ids[0], "queue claude paused until ")  # the runner's last word: the pause is kept
    row = machine("queue", "list", home=li_home).data["queues"][0]
    waiting = status(li_home, ids[1])
    looked = datetime.now().astimezone()
    limited = status(li_home, ids[0])
    assert waited["runs"][0]["terminal"] and limited["terminal"], (waited, limited)  # type: ignore[index]
    assert (limited["status"], limited["outcome"], limited["reason_code"]) == (
        "failed", "failed", "provider_rate_limited"), limited
    reset = datetime.fromisoformat(str(limited["retry_at"]))
    assert looked < reset, f"the pause was looked at {looked}, after its reset {reset} (reset_in {reset_in:.1f} s)"
    # Said while the pause lasts: by `li queue list`, and by the run behind, still queued.
    assert (row["paused"], row["paused_reason"], row["paused_by"]) == (True, "provider_rate_limited", ids[0]), row
    assert datetime.fromisoformat(str(row["paused_until"])) == reset
    assert (waiting["status"], waiting["terminal"], waiting["queue_position"]) == ("queued", False, 1), waiting
    assert f"queue claude paused until {reset.isoformat(timespec='microseconds')} (rate limited)" in said, said
    ended = [until_terminal(li_home, run_id, 90) for run_id in ids[1:]]
    assert [(e["status"], e["outcome"]) for e in ended] == [("completed", "succeeded")] * 2
    starts = [datetime.fromisoformat(str(e["started_at"])) for e in ended]
    assert starts[0] >= reset and starts == sorted(starts)  # after the reset, in their order
    assert machine("queue", "list", home=li_home).data["queues"][0]["paused"] is False  # opened by itself
