"""Token and cost budgets through the real `li`, with a fake `claude` that speaks
stream-json and reports its usage in steps: one `assistant` event per model turn, each carrying
its message's usage, a pause between them, then the closing `result`.

Proven: the run stops within one usage event of its limit (the fake writes down every event it
got out; the spend li records is the first that reached the limit), ends failed with
`budget_exceeded` and shows spent and limit on status; `--max-cost` is handed to Claude Code as
its own `--max-budget-usd`, and its own stop at that cap is `budget_exceeded` too; a budget that
could not be kept (no usage, no price) is refused at submit."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.support import fake_cli_path, machine, run_li, wait_terminal

pytestmark = pytest.mark.timeout(120)

FAKE = f'''#!{sys.executable}
"""A claude reporting 110 tokens per turn for TURNS turns, EVERY seconds apart."""
import json, os, sys, time
args = sys.argv[1:]
sys.stdin.read()
with open(os.environ["FAKE_ARGV_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
def emit(event):
    print(json.dumps(event), flush=True)
emit({{"type": "system", "subtype": "init", "session_id": "s-1", "tools": ["Bash"]}})
turns = int(os.environ.get("FAKE_TURNS", "10"))
for turn in range(1, turns + 1):
    usage = {{"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 10}}
    with open(os.environ["FAKE_EVENTS"], "a") as out:  # written down before it is said: li may stop it at once
        out.write(f"{{turn}}\\n")
    for block in ("thinking", "text"):  # one API message, said in two events: counted once
        emit({{"type": "assistant", "session_id": "s-1", "message": {{"id": f"msg_{{turn}}", "role": "assistant",
              "content": [{{"type": "text", "text": f"turn {{turn}} {{block}}"}}], "usage": usage}}}})
    time.sleep(float(os.environ.get("FAKE_EVERY", "0.4")))
subtype = os.environ.get("FAKE_SUBTYPE", "success")
emit({{"type": "result", "subtype": subtype, "is_error": subtype != "success", "result": "done" if subtype == "success" else "",
      "session_id": "s-1", "total_cost_usd": 0.5, "num_turns": turns,
      "usage": {{"input_tokens": 100 * turns, "output_tokens": 10 * turns}}}})
sys.exit(0 if subtype == "success" else 1)
'''


@pytest.fixture
def fake(tmp_path: Path) -> dict[str, str]:
    return {"PATH": fake_cli_path(tmp_path, "claude", FAKE), "FAKE_ARGV_LOG": str(tmp_path / "argv"),
            "FAKE_EVENTS": str(tmp_path / "events")}


def submit(home: str, env: dict[str, str], *flags: str) -> str:
    return str(machine("agent", "--detach", *flags, "claude", "count", home=home, env=env).data["run_id"])


def ended(home: str, run_id: str, env: dict[str, str]) -> dict[str, object]:
    data = wait_terminal(home, run_id, timeout=60)
    assert data["terminal"], data
    return data


def test_a_token_budget_stops_the_run_within_one_usage_event_of_its_limit(li_home: str, fake: dict[str, str],
                                                                          tmp_path: Path) -> None:
    run_id = submit(li_home, fake, "--max-tokens", "250")
    running = machine("job", "status", run_id, home=li_home, env=fake).data
    assert running["budget"]["max_tokens"] == 250  # the limit is on status from the submit on
    data = ended(li_home, run_id, fake)
    assert (data["status"], data["outcome"], data["reason_code"]) == ("failed", "failed", "budget_exceeded")
    # 110 tokens a turn: the third turn's event reached 250 (330), and the spend recorded is that one's
    assert data["budget"] == {"max_tokens": 250, "max_cost_usd": None, "spent_tokens": 330,
                              "spent_cost_usd": None, "exceeded": "tokens"}
    turns = (tmp_path / "events").read_text().split()
    assert turns[:3] == ["1", "2", "3"] and len(turns) <= 4, turns  # stopped within one event of the limit
    said = Path(li_home, "runs", run_id, "li.log").read_text()
    assert "budget is spent (330 tokens of 250 tokens)" in said
    assert data["exit_code"] == 1


def test_a_run_within_its_budget_succeeds_and_shows_what_it_spent(li_home: str, fake: dict[str, str]) -> None:
    env = {**fake, "FAKE_TURNS": "2", "FAKE_EVERY": "0"}
    data = ended(li_home, submit(li_home, env, "--max-tokens", "1000", "--max-cost", "2"), env)
    assert (data["status"], data["outcome"], data["reason_code"]) == ("completed", "succeeded", None)
    assert data["budget"] == {"max_tokens": 1000, "max_cost_usd": 2.0, "spent_tokens": 220, "spent_cost_usd": 0.5,
                              "exceeded": None}


def test_a_cost_budget_is_handed_to_claude_code_and_its_own_stop_is_budget_exceeded(
        li_home: str, fake: dict[str, str], tmp_path: Path) -> None:
    env = {**fake, "FAKE_TURNS": "1", "FAKE_EVERY": "0", "FAKE_SUBTYPE": "error_max_budget_usd"}
    data = ended(li_home, submit(li_home, env, "--max-cost", "0.25"), env)
    argv = json.loads((tmp_path / "argv").read_text().splitlines()[0])
    assert argv[argv.index("--max-budget-usd") + 1] == "0.25"
    assert (data["status"], data["outcome"], data["reason_code"]) == ("failed", "failed", "budget_exceeded")
    assert data["budget"]["exceeded"] == "cost" and data["budget"]["spent_cost_usd"] == 0.5


def test_li_stops_a_claude_run_whose_reported_cost_reaches_the_limit(li_home: str, fake: dict[str, str]) -> None:
    env = {**fake, "FAKE_TURNS": "1", "FAKE_EVERY": "0"}  # Claude Code's own cap said nothing; li's count does
    data = ended(li_home, submit(li_home, env, "--max-cost", "0.4"), env)
    assert (data["outcome"], data["reason_code"]) == ("failed", "budget_exceeded")
    assert data["budget"]["exceeded"] == "cost"


OPENCODE = f'''#!{sys.executable}
"""An opencode reporting 110 tokens per step (a `step_finish`, as its recorded streams do), 0.4 s apart."""
import json, os, sys, time
sys.stdin.read()
def emit(kind, **part):
    print(json.dumps({{"type": kind, "sessionID": "ses_1", "part": {{"sessionID": "ses_1", **part}}}}), flush=True)
for step in range(1, 11):
    with open(os.environ["FAKE_EVENTS"], "a") as out:
        out.write(f"{{step}}\\n")
    emit("step_start")
    emit("text", text=f"step {{step}}")
    emit("step_finish", reason="stop" if step == 10 else "tool-calls", cost=0,
         tokens={{"total": 110, "input": 100, "output": 10, "reasoning": 0, "cache": {{"write": 0, "read": 0}}}})
    time.sleep(0.4)
'''


def test_a_token_budget_stops_an_opencode_run_within_one_step(li_home: str, tmp_path: Path) -> None:
    env = {"PATH": fake_cli_path(tmp_path, "opencode", OPENCODE), "FAKE_EVENTS": str(tmp_path / "events")}
    run_id = str(machine("agent", "--detach", "--permission-mode", "full", "--max-tokens", "250", "opencode", "count",
                         home=li_home, env=env).data["run_id"])
    data = ended(li_home, run_id, env)
    assert (data["status"], data["reason_code"]) == ("failed", "budget_exceeded")
    assert data["budget"] == {"max_tokens": 250, "max_cost_usd": None, "spent_tokens": 330,
                              "spent_cost_usd": 0.0, "exceeded": "tokens"}
    steps = (tmp_path / "events").read_text().split()
    assert steps[:3] == ["1", "2", "3"] and len(steps) <= 4, steps  # stopped within one step of the limit


@pytest.mark.parametrize(("flags", "model", "said"), [
    (("--max-tokens", "100"), "sh", "reports none"),
    (("--max-cost", "1"), "codex", "reports none"),
    (("--max-cost", "1"), "gemini", "reports none"),
    (("--max-cost", "1"), "opencode", "reports none"),
    (("--max-tokens", "ten"), "claude", "--max-tokens"),
    (("--max-tokens", "0"), "claude", "--max-tokens"),
    (("--max-cost", "-1"), "claude", "--max-cost"),
    (("--max-cost", "nan"), "claude", "--max-cost"),
])
def test_a_budget_li_could_not_keep_is_refused_at_submit(li_home: str, fake: dict[str, str], flags: tuple[str, ...],
                                                          model: str, said: str) -> None:
    env = {**fake, "PATH": f"{Path(__file__).resolve().parents[1] / 'fakes' / 'bin'}{os.pathsep}{fake['PATH']}"}
    done = run_li("agent", "--detach", *flags, model, "echo hi", "--machine", home=li_home, env=env)
    error = json.loads(done.stdout)["error"]
    assert error["kind"] == "invalid_input" and said in error["message"], error
    assert not Path(li_home, "runs").exists() or not os.listdir(Path(li_home, "runs"))  # nothing written
    human = run_li("agent", "--detach", *flags, model, "echo hi", home=li_home, env=env)
    assert human.returncode != 0 and said in human.stderr and "Traceback" not in human.stderr


def test_a_queue_budget_pauses_the_queue_until_its_window_rolls(li_home: str, fake: dict[str, str]) -> None:
    from datetime import datetime

    env = {**fake, "FAKE_TURNS": "2", "FAKE_EVERY": "0"}  # 220 tokens a run
    row = machine("queue", "set", "q", "--parallel", "1", "--max-tokens", "200", "--per", "8s", home=li_home).data
    assert (row["queues"][0]["max_tokens"], row["queues"][0]["per_seconds"]) == (200, 8.0)
    first = ended(li_home, submit(li_home, env, "--queue", "q"), env)
    assert first["outcome"] == "succeeded" and first["budget"] is None  # the queue's budget, not the run's
    queue = machine("queue", "list", home=li_home).data["queues"][0]
    assert (queue["paused"], queue["paused_reason"], queue["paused_by"]) == (True, "budget_exceeded", first["run_id"])
    assert queue["window_spent_tokens"] == 220 and queue["paused_until"] == queue["window_ends"]
    second = submit(li_home, env, "--queue", "q")
    assert machine("job", "status", second, home=li_home).data["status"] == "queued"
    done = ended(li_home, second, env)
    assert done["outcome"] == "succeeded"
    opened = datetime.fromisoformat(queue["paused_until"])
    assert datetime.fromisoformat(done["started_at"]) >= opened  # it started only once the window rolled
    human = run_li("queue", "list", home=li_home)
    assert "tokens 220/200 per 8 s" in human.stdout, human.stdout


@pytest.mark.parametrize("flags", [("--max-tokens", "100"), ("--per", "1h"), ("--max-tokens", "x", "--per", "1h"),
                                   ("--max-tokens", "10", "--per", "0s"), ("--max-tokens", "10", "--per", "soon")])
def test_a_queue_budget_needs_both_halves_and_sane_values(li_home: str, flags: tuple[str, ...]) -> None:
    done = run_li("queue", "set", "q", *flags, "--machine", home=li_home)
    assert json.loads(done.stdout)["error"]["kind"] == "invalid_input", done.stdout
