"""The reaper through the real `li`: a SIGKILLed run becomes terminal on the next status read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from typing import Any

from lionrun.domain.lifecycle import REAP_REASONS
from tests.builders import kill_session
from tests.support import li_bin, machine


def submit(home: str, command: str, *extra: str) -> dict[str, Any]:
    return machine("agent", "--detach", *extra, "sh", command, home=home).data


def record(home: str, run_id: str) -> dict[str, Any]:
    with open(os.path.join(home, "runs", run_id, "record.json"), encoding="utf-8") as handle:
        return json.load(handle)  # type: ignore[no-any-return]


def kill_run(home: str, run_id: str) -> None:
    """SIGKILL the whole run: its runner's session, the work's own process groups included."""
    kill_session(run_id, record(home, run_id)["incarnation"])


def test_a_sigkilled_run_is_terminal_indeterminate_on_the_next_status_and_wait_agrees(li_home: str) -> None:
    handle = submit(li_home, "sleep 300")
    kill_run(li_home, handle["run_id"])
    status = machine("job", "status", handle["run_id"], home=li_home).data
    assert (status["terminal"], status["outcome"]) == (True, "indeterminate")
    finding = record(li_home, handle["run_id"])["terminal_evidence"]["finding"]
    assert status["reason_code"] == REAP_REASONS[finding]
    waited = machine("job", "wait", handle["run_id"], "--max-wait", "0", home=li_home).data
    assert waited["runs"][0]["terminal"] is True and waited["all_terminal"] is True
    assert waited["stopped_without_end"] == [] and waited["pending"] == []


def settled_delivery(home: str, run_id: str, within: float = 60.0) -> dict[str, Any]:
    """The record once its delivery outcome is known (the reap winner's sender runs detached)."""
    deadline = time.monotonic() + within
    while True:
        current = record(home, run_id)
        delivery = current.get("delivery") or {}
        if delivery.get("ok") is not None or time.monotonic() > deadline:
            return current
        time.sleep(0.05)


def test_thirty_two_concurrent_status_reads_publish_one_reap_and_one_notice(li_home: str, tmp_path: Any) -> None:
    notices = str(tmp_path / "notices.jsonl")
    notify = f"sh -c 'cat >> \"$0\"; echo >> \"$0\"' {notices}"
    handle = submit(li_home, "sleep 300", "--notify", notify)
    before = record(li_home, handle["run_id"])
    kill_run(li_home, handle["run_id"])
    env = {**os.environ, "LI_HOME": li_home}
    readers = [subprocess.Popen([li_bin(), "job", "status", handle["run_id"], "--machine"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(32)]
    answers = [json.loads(reader.communicate(timeout=120)[0]) for reader in readers]
    assert {(a["data"]["terminal"], a["data"]["outcome"]) for a in answers} == {(True, "indeterminate")}
    after = settled_delivery(li_home, handle["run_id"])  # delivered by the detached sender
    assert after["terminal_source"] == "reaper"
    assert after["terminal_evidence"]["judged_generation"] == before["generation"]
    assert after["generation"] == before["generation"] + 3  # the reap, the attempt, its outcome
    assert after["delivery"]["ok"] is True
    with open(notices, encoding="utf-8") as handle_:
        assert len([line for line in handle_ if line.strip()]) == 1


def test_a_record_copied_from_another_host_is_never_reaped_nor_called_stopped(li_home: str) -> None:
    handle = submit(li_home, "sleep 300")
    kill_run(li_home, handle["run_id"])
    theirs = record(li_home, handle["run_id"])
    theirs["incarnation"]["host_id"] = "a-machine-far-away"
    copy_id = handle["run_id"][:-6] + "f0f0f0"
    folder = os.path.join(li_home, "runs", copy_id)
    shutil.copytree(os.path.join(li_home, "runs", handle["run_id"]), folder)
    theirs["run_id"] = copy_id
    with open(os.path.join(folder, "record.json"), "w", encoding="utf-8") as out:
        json.dump(theirs, out)
    status = machine("job", "status", copy_id, home=li_home).data
    assert (status["terminal"], status["outcome"], status["possibly_orphaned"]) == (False, None, False)
    waited = machine("job", "wait", copy_id, "--max-wait", "0", home=li_home).data
    assert waited["stopped_without_end"] == [] and waited["pending"] == [copy_id]
    assert record(li_home, copy_id) == theirs


def test_a_status_read_that_wins_a_reap_answers_without_waiting_for_the_notice_command(
    li_home: str, tmp_path: Any
) -> None:
    gate, seen = tmp_path / "gate", tmp_path / "notice.json"
    notify = f"sh -c 'cat > \"$1\"; i=0; while [ ! -e \"$0\" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done' {gate} {seen}"
    handle = submit(li_home, "sleep 300", "--notify", notify)
    kill_run(li_home, handle["run_id"])
    # A reader that ran the command itself would block until the gate opens (never) or the
    # 120 s notify timeout: the subprocess timeout below would then fail this test.
    status = machine("job", "status", handle["run_id"], home=li_home, timeout=30,
                     env={"LI_NOTIFY_TIMEOUT": "120"}).data
    assert (status["terminal"], status["outcome"]) == (True, "indeterminate")
    assert status["delivery"]["value"]["attempted"] is True and status["delivery"]["value"]["ok"] is None
    gate.write_text("open")
    after = settled_delivery(li_home, handle["run_id"])
    assert after["delivery"]["ok"] is True
    assert json.loads(seen.read_text())["run_id"] == handle["run_id"]
