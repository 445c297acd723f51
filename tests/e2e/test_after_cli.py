"""Runs that wait for runs through the real `li`: `--after RUN[:ok|:fail|:any]`, the
`waiting` status, `dependency_failed`, a wait kept by the store through SIGKILLed runners, and
`--priority` within a queue."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from tests.builders import kill_session
from tests.support import machine, run_li, wait_terminal


def submit(home: str, work: str, *options: str) -> dict[str, Any]:
    return machine("agent", "--detach", *options, "sh", work, home=home).data


def status(home: str, run_id: str) -> dict[str, Any]:
    return machine("job", "status", run_id, home=home).data


def wait_for(predicate: Any, seconds: float = 30.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"{what} never held"
        time.sleep(0.05)


def gated(tmp: str, name: str, code: int = 0) -> tuple[str, str]:
    """A work that waits for its gate file to exist, then exits `code`."""
    opened = os.path.join(tmp, f"{name}.open")
    return f'while [ ! -e "{opened}" ]; do sleep 0.05; done; exit {code}', opened


def marking(marks: str, name: str, code: int = 0) -> str:
    """A work that appends its name to `marks` (one line per start), then exits `code`."""
    return f'echo {name} >> "{marks}"; echo x > "$LI_ARTIFACTS_DIR/a"; exit {code}'


def lines(path: str) -> list[str]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


def record(home: str, run_id: str) -> dict[str, Any]:
    with open(os.path.join(home, "runs", run_id, "record.json"), encoding="utf-8") as handle:
        return json.load(handle)  # type: ignore[no-any-return]


def test_a_chain_ok_then_any_runs_on_after_a_failure(li_home: str, tmp_path: Any) -> None:
    tmp, marks = str(tmp_path), str(tmp_path / "marks")
    work, gate = gated(tmp, "a")
    a = submit(li_home, work)["run_id"]
    b_handle = submit(li_home, marking(marks, "B", 1), "--after", a)
    b = b_handle["run_id"]
    c = submit(li_home, marking(marks, "C"), "--after", f"{b}:any")["run_id"]
    assert (b_handle["status"], b_handle["terminal"], b_handle["outcome"]) == ("waiting", False, None)
    seen = status(li_home, b)
    assert (seen["status"], seen["terminal"], seen["outcome"], seen["started_at"]) == ("waiting", False, None, None)
    assert seen["after"] == [{"run_id": a, "condition": "ok", "status": "running", "terminal": False,
                              "outcome": None, "state": "pending", "matched": None}]
    assert status(li_home, c)["after"][0]["condition"] == "any"
    waited = machine("job", "wait", b, c, "--max-wait", "0", home=li_home).data  # D10: waiting is pending
    assert sorted(waited["pending"]) == sorted([b, c]) and waited["all_terminal"] is False
    time.sleep(0.5)
    assert lines(marks) == []  # nothing started while A runs
    open(gate, "w").close()
    ended = {run_id: wait_terminal(li_home, run_id, 60) for run_id in (a, b, c)}
    assert [ended[r]["outcome"] for r in (a, b, c)] == ["succeeded", "failed", "succeeded"]
    assert lines(marks) == ["B", "C"]
    assert status(li_home, c)["after"][0] | {"status": None} == {
        "run_id": b, "condition": "any", "status": None, "terminal": True, "outcome": "failed",
        "state": "terminal", "matched": True}


def test_a_failed_dependency_ends_the_run_unstarted_and_a_fail_dependant_runs(li_home: str, tmp_path: Any) -> None:
    tmp, marks = str(tmp_path), str(tmp_path / "marks")
    work, gate = gated(tmp, "a", code=3)
    a = submit(li_home, work)["run_id"]
    b = submit(li_home, marking(marks, "B"), "--after", f"{a}:ok")["run_id"]
    d = submit(li_home, marking(marks, "D"), "--after", f"{a}:fail")["run_id"]
    open(gate, "w").close()
    assert wait_terminal(li_home, a, 60)["outcome"] == "failed"
    ended_b = wait_terminal(li_home, b, 60)
    assert (ended_b["status"], ended_b["outcome"], ended_b["reason_code"]) == (
        "cancelled", "cancelled", "dependency_failed")
    assert ended_b["failed_dependency"] == a and ended_b["started_at"] is None
    assert ended_b["after"][0]["matched"] is False
    assert wait_terminal(li_home, d, 60)["outcome"] == "succeeded"
    assert lines(marks) == ["D"]  # B's marker was never written: its work never started
    human = run_li("job", "status", b, home=li_home)
    assert "dependency_failed" in human.stdout and a[-6:] in human.stdout + human.stderr


def test_people_name_dependencies_by_short_id_and_at_last(li_home: str, tmp_path: Any) -> None:
    marks = str(tmp_path / "marks")
    work, gate = gated(str(tmp_path), "a")
    a = submit(li_home, work)["run_id"]
    by_last = run_li("agent", "--detach", "--after", "@last", "sh", marking(marks, "B"), home=li_home)
    assert by_last.returncode == 0, by_last.stderr
    b = by_last.stdout.strip()
    by_short = run_li("agent", "--detach", "--after", f"{a[-6:]}:any", "sh", marking(marks, "C"), home=li_home)
    assert by_short.returncode == 0, by_short.stderr
    c = by_short.stdout.strip()
    assert [x["run_id"] for x in status(li_home, b)["after"]] == [a]
    assert [x["run_id"] for x in status(li_home, c)["after"]] == [a]
    # --machine takes whole ids only
    assert machine("agent", "--detach", "--after", a[-6:], "sh", "true", home=li_home).error["kind"] == "invalid_input"
    open(gate, "w").close()
    for run_id in (b, c):
        assert wait_terminal(li_home, run_id, 60)["outcome"] == "succeeded"


def test_an_unknown_dependency_a_cycle_and_a_bad_condition_are_refused(li_home: str, tmp_path: Any) -> None:
    unknown = machine("agent", "--detach", "--after", "20261205T000000-abcdef", "sh", "true", home=li_home).error
    assert unknown["kind"] == "invalid_input" and unknown["detail"]["argument"] == "--after"
    work, gate = gated(str(tmp_path), "x")
    x = submit(li_home, work)["run_id"]
    y = submit(li_home, "true", "--after", x)["run_id"]
    # a record that waits for its own dependant (written by hand, or by another li): X -> Y -> X
    path = os.path.join(li_home, "runs", x, "record.json")
    data = record(li_home, x)
    data["after"] = [{"run_id": y, "condition": "any"}]
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    cycle = machine("agent", "--detach", "--after", y, "sh", "true", home=li_home).error
    assert cycle["kind"] == "invalid_input" and "cycle" in cycle["message"], cycle
    bad = machine("agent", "--detach", "--after", f"{x}:maybe", "sh", "true", home=li_home).error
    assert bad["kind"] == "invalid_input" and bad["detail"]["argument"] == "--after"
    twice = machine("agent", "--detach", "--after", f"{x}:ok", "--after", f"{x}:fail", "sh", "true",
                    home=li_home).error
    assert twice["kind"] == "invalid_input"
    human = run_li("agent", "--detach", "--after", "20261205T000000-abcdef", "sh", "true", home=li_home)
    assert human.returncode != 0 and human.stderr.count("\n") == 1 and "Traceback" not in human.stderr
    open(gate, "w").close()
    wait_terminal(li_home, y, 60)


def test_a_waiting_run_killed_ends_cancelled_and_its_work_never_starts(li_home: str, tmp_path: Any) -> None:
    marks = str(tmp_path / "marks")
    work, gate = gated(str(tmp_path), "a")
    a = submit(li_home, work)["run_id"]
    b = submit(li_home, marking(marks, "B"), "--after", a)["run_id"]
    wait_for(lambda: status(li_home, b)["alive"] is True, what="B's runner alive")
    assert machine("job", "kill", b, home=li_home).data["action"] == "signalled"
    ended = wait_terminal(li_home, b, 30)
    assert (ended["status"], ended["outcome"], ended["started_at"]) == ("cancelled", "cancelled", None)
    open(gate, "w").close()
    assert wait_terminal(li_home, a, 60)["outcome"] == "succeeded"
    time.sleep(0.5)
    assert lines(marks) == []


def test_sigkill_of_every_runner_while_runs_wait_then_one_list_starts_each_once(li_home: str, tmp_path: Any) -> None:
    marks = str(tmp_path / "marks")
    work, gate = gated(str(tmp_path), "a")
    a = submit(li_home, work)["run_id"]
    b = submit(li_home, marking(marks, "B"), "--after", f"{a}:any")["run_id"]
    c = submit(li_home, marking(marks, "C"), "--after", f"{b}:ok")["run_id"]
    d = submit(li_home, marking(marks, "D"), "--after", f"{a}:any")["run_id"]
    for run_id in (a, b, c, d):
        wait_for(lambda r=run_id: record(li_home, r).get("incarnation") is not None, what=f"{run_id} attached")
    # dependants first: a live waiting runner observes its dependencies, and would start (or
    # restart) one whose runner it finds gone, as any observer does
    for run_id in (c, d, b, a):
        kill_session(run_id, record(li_home, run_id)["incarnation"])
    time.sleep(0.3)
    assert lines(marks) == []
    for run_id in (b, c, d):
        assert record(li_home, run_id)["status"] == "waiting"  # kept by the store, not by the runner
    listed = machine("job", "list", home=li_home).data["runs"]
    assert {row["run_id"]: row["terminal"] for row in listed}[a] is True  # reaped: no end will come
    for run_id in (b, c, d):
        assert wait_terminal(li_home, run_id, 60)["outcome"] == "succeeded"
    assert sorted(lines(marks)) == ["B", "C", "D"]  # each started exactly once
    assert lines(marks).index("B") < lines(marks).index("C")
    for run_id in (b, c, d):
        assert record(li_home, run_id)["extra"]["runner_restarts"] == 1
    machine("job", "list", home=li_home)  # a later look starts nothing again
    time.sleep(0.5)
    assert sorted(lines(marks)) == ["B", "C", "D"]


def test_a_priority_ten_run_submitted_last_starts_next_in_a_parallel_one_queue(li_home: str, tmp_path: Any) -> None:
    marks = str(tmp_path / "marks")
    machine("queue", "set", "q", "--parallel", "1", home=li_home)
    work, gate = gated(str(tmp_path), "a")
    a = submit(li_home, work, "--queue", "q")["run_id"]
    wait_for(lambda: status(li_home, a)["status"] == "running", what="A holds the slot")
    b = submit(li_home, marking(marks, "B"), "--queue", "q")["run_id"]
    c = submit(li_home, marking(marks, "C"), "--queue", "q")["run_id"]
    d = submit(li_home, marking(marks, "D"), "--queue", "q", "--priority", "10")["run_id"]
    wait_for(lambda: len(machine("queue", "list", home=li_home).data["queues"][0]["line"]) == 3, what="three in line")
    line = machine("queue", "list", home=li_home).data["queues"][0]["line"]
    assert line == [{"run_id": d, "position": 1, "priority": 10}, {"run_id": b, "position": 2, "priority": 0},
                    {"run_id": c, "position": 3, "priority": 0}]
    assert status(li_home, d)["queue_position"] == 1 and status(li_home, d)["priority"] == 10
    rows = machine("job", "list", "--sort", "priority", home=li_home).data["runs"]
    assert [row["run_id"] for row in rows] == [d, c, b, a]  # the highest first, equal ones newest first
    assert "priority 10" in run_li("queue", "list", home=li_home).stdout
    open(gate, "w").close()
    for run_id in (b, c, d):
        wait_terminal(li_home, run_id, 60)
    assert lines(marks) == ["D", "B", "C"]
    assert machine("job", "list", "--sort", "size", home=li_home).error["kind"] == "invalid_input"
    assert machine("agent", "--detach", "--priority", "high", "sh", "true", home=li_home).error["kind"] == "invalid_input"


def test_a_waiting_run_of_a_queue_enters_the_line_only_once_its_dependency_ended(
        li_home: str, tmp_path: Any) -> None:
    marks = str(tmp_path / "marks")
    machine("queue", "set", "q", "--parallel", "1", home=li_home)
    work, gate = gated(str(tmp_path), "a")
    a = submit(li_home, work)["run_id"]  # default queue: not kept, starts at once
    b = submit(li_home, marking(marks, "B"), "--queue", "q", "--after", a)["run_id"]
    c = submit(li_home, marking(marks, "C"), "--queue", "q")["run_id"]  # not held up by the waiting B
    assert wait_terminal(li_home, c, 60)["outcome"] == "succeeded"
    assert status(li_home, b)["status"] == "waiting"
    open(gate, "w").close()
    assert wait_terminal(li_home, b, 60)["outcome"] == "succeeded"
    assert lines(marks) == ["C", "B"]
