"""Queues through the real `li`: limits, `queued` with a position, kill while queued,
pause and resume, the timeout counted from the work's start, and what is refused."""

from __future__ import annotations

import os
import stat
import time

from tests.support import machine, run_li, wait_terminal


def submit(home: str, work: str, *options: str) -> dict[str, object]:
    return machine("agent", "--detach", *options, "sh", work, home=home).data


def wait_for(predicate: object, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)


def gate(tmp: str, name: str) -> tuple[str, str]:
    """A work that writes `started` and waits for the gate file to exist."""
    started = os.path.join(tmp, f"{name}.started")
    opened = os.path.join(tmp, f"{name}.open")
    work = f'touch "{started}"; while [ ! -e "{opened}" ]; do sleep 0.05; done; echo done > "$LI_ARTIFACTS_DIR/a"'
    return work, opened


def test_a_queue_is_set_paused_resumed_and_listed_under_machine(li_home: str) -> None:
    assert machine("queue", "list", home=li_home).data == {"queues": []}
    row = machine("queue", "set", "claude", "--parallel", "2", home=li_home).data["queues"][0]
    assert row == {"name": "claude", "parallel": 2, "running": 0, "waiting": 0, "paused": False,
                   "paused_reason": None, "paused_until": None, "paused_by": None, "line": [],
                   "max_tokens": None, "per_seconds": None, "window_spent_tokens": None, "window_ends": None}
    paused = machine("queue", "pause", "claude", home=li_home).data["queues"][0]
    assert (paused["paused"], paused["paused_reason"]) == (True, "paused")
    assert machine("queue", "resume", "claude", home=li_home).data["queues"][0]["paused"] is False
    assert [q["name"] for q in machine("queue", "list", home=li_home).data["queues"]] == ["claude"]
    unlimited = machine("queue", "set", "claude", "--parallel", "none", home=li_home).data["queues"][0]
    assert unlimited["parallel"] is None


def test_queue_settings_live_in_the_store_private(li_home: str) -> None:
    machine("queue", "set", "q", "--parallel", "1", home=li_home)
    folder = os.path.join(li_home, "queues", "q")
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(folder, "settings.json")).st_mode) == 0o600


def test_bad_queue_input_is_refused_with_its_argument(li_home: str) -> None:
    for argv, argument in ((("queue", "set", "Q", "--parallel", "2"), "NAME"),
                           (("queue", "set", "q", "--parallel", "0"), "--parallel"),
                           (("queue", "set", "q", "--parallel", "many"), "--parallel"),
                           (("queue", "set", "q"), "--parallel"),
                           (("agent", "--detach", "--queue", "a/b", "sh", "true"), "--queue")):
        error = machine(*argv, home=li_home).error
        assert error["kind"] == "invalid_input" and error["detail"]["argument"] == argument, (argv, error)
    assert machine("queue", home=li_home).error["kind"] == "invalid_input"
    human = run_li("queue", "set", "Q", "--parallel", "2", home=li_home)
    assert human.returncode != 0 and human.stderr.count("\n") == 1 and "Traceback" not in human.stderr


def test_queue_with_the_slurm_executor_is_refused_with_the_reason(li_home: str) -> None:
    error = machine("agent", "--detach", "--executor", "slurm", "--queue", "q", "sh", "true", home=li_home).error
    assert error["kind"] == "invalid_input" and "Slurm keeps its own queue" in error["message"]


def test_a_run_of_a_queue_the_store_does_not_keep_starts_at_once(li_home: str) -> None:
    handle = submit(li_home, 'echo x > "$LI_ARTIFACTS_DIR/a"')
    assert handle["status"] == "running"
    ended = wait_terminal(li_home, str(handle["run_id"]))
    assert (ended["outcome"], ended["queue"], ended["queue_position"]) == ("succeeded", "default", None)
    assert machine("queue", "list", home=li_home).data == {"queues": []}


def test_runs_wait_queued_with_their_position_and_start_first_come_first_served(li_home: str, tmp_path: object) -> None:
    machine("queue", "set", "q", "--parallel", "1", home=li_home)
    tmp = str(tmp_path)
    works = [gate(tmp, f"w{i}") for i in range(3)]
    handles = [submit(li_home, work, "--queue", "q") for work, _ in works]
    assert [h["status"] for h in handles] == ["queued"] * 3
    ids = [str(h["run_id"]) for h in handles]
    wait_for(lambda: os.path.exists(os.path.join(tmp, "w0.started")))
    first, second, third = (machine("job", "status", i, home=li_home).data for i in ids)
    assert (first["status"], first["queue_position"]) == ("running", None)
    assert (second["status"], second["terminal"], second["outcome"], second["spawn_state"]) == (
        "queued", False, None, "started")
    assert (second["queue_position"], third["queue_position"]) == (1, 2)
    assert second["alive"] is True and second["queue"] == "q"
    row = machine("queue", "list", home=li_home).data["queues"][0]
    assert (row["running"], row["waiting"]) == (1, 2)
    waited = machine("job", "wait", ids[1], "--max-wait", "0", home=li_home).data
    assert waited["pending"] == [ids[1]] and waited["all_terminal"] is False
    for index, (_work, opened) in enumerate(works):
        time.sleep(0.3)
        assert not os.path.exists(os.path.join(tmp, f"w{index + 1}.started")), "a run started before its turn"
        open(opened, "w").close()
        if index + 1 < len(works):
            wait_for(lambda i=index: os.path.exists(os.path.join(tmp, f"w{i + 1}.started")))
    assert [wait_terminal(li_home, i)["outcome"] for i in ids] == ["succeeded"] * 3


def test_killing_a_queued_run_ends_it_cancelled_without_starting_its_work(li_home: str, tmp_path: object) -> None:
    machine("queue", "set", "q", "--parallel", "1", home=li_home)
    tmp = str(tmp_path)
    holder, opened = gate(tmp, "holder")
    first = str(submit(li_home, holder, "--queue", "q")["run_id"])
    wait_for(lambda: os.path.exists(os.path.join(tmp, "holder.started")))
    marker = os.path.join(tmp, "never")
    queued = str(submit(li_home, f'touch "{marker}"', "--queue", "q")["run_id"])
    wait_for(lambda: machine("job", "status", queued, home=li_home).data["queue_position"] == 1)
    killed = machine("job", "kill", queued, home=li_home).data
    assert killed["action"] == "signalled"
    ended = wait_terminal(li_home, queued)
    assert (ended["status"], ended["outcome"]) == ("cancelled", "cancelled")
    assert ended["reason_code"] == "kill_requested"
    assert not os.path.exists(marker)
    assert machine("queue", "list", home=li_home).data["queues"][0]["waiting"] == 0
    open(opened, "w").close()
    assert wait_terminal(li_home, first)["outcome"] == "succeeded"


def test_a_paused_queue_keeps_its_runs_queued_until_resumed(li_home: str, tmp_path: object) -> None:
    machine("queue", "set", "q", "--parallel", "2", home=li_home)
    machine("queue", "pause", "q", home=li_home)
    run_id = str(submit(li_home, 'echo x > "$LI_ARTIFACTS_DIR/a"', "--queue", "q")["run_id"])
    time.sleep(1.0)
    assert machine("job", "status", run_id, home=li_home).data["status"] == "queued"
    machine("queue", "resume", "q", home=li_home)
    assert wait_terminal(li_home, run_id)["outcome"] == "succeeded"


def test_the_timeout_counts_from_when_the_work_starts(li_home: str, tmp_path: object) -> None:
    machine("queue", "set", "q", "--parallel", "1", home=li_home)
    machine("queue", "pause", "q", home=li_home)
    run_id = str(submit(li_home, 'sleep 1; echo x > "$LI_ARTIFACTS_DIR/a"', "--queue", "q", "--timeout", "3")["run_id"])
    time.sleep(4)  # queued longer than its timeout: the wait for a slot is not the work's time
    machine("queue", "resume", "q", home=li_home)
    assert wait_terminal(li_home, run_id, timeout=30)["status"] == "completed"


def test_a_model_default_queue_comes_from_config(li_home: str) -> None:
    with open(os.path.join(li_home, "config.toml"), "w", encoding="utf-8") as handle:
        handle.write('[queues]\nsh = "shells"\n')
    run_id = str(submit(li_home, 'echo x > "$LI_ARTIFACTS_DIR/a"')["run_id"])
    assert wait_terminal(li_home, run_id)["queue"] == "shells"
    explicit = str(submit(li_home, 'echo x > "$LI_ARTIFACTS_DIR/a"', "--queue", "other")["run_id"])
    assert wait_terminal(li_home, explicit)["queue"] == "other"
