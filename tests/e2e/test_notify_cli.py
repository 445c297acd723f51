"""D9 through the real `li`: the notice runs after the end and the artifacts, and its outcome is recorded."""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path
from typing import Any

from tests.support import li_bin, machine

WORK = 'echo answer > "$LI_ARTIFACTS_DIR/out.txt"'


def run_with_notice(home: str, notify: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Submit a small run with `--notify`, wait for its end, then for its delivery to settle."""
    handle = machine("agent", "--detach", "--notify", notify, "sh", WORK, home=home, env=env).data
    machine("job", "wait", handle["run_id"], "--max-wait", "60", "--poll-interval", "0.1", home=home)
    return settled(home, handle["run_id"])


def settled(home: str, run_id: str) -> dict[str, Any]:
    for _ in range(400):
        status = machine("job", "status", run_id, home=home).data
        delivery = status["delivery"]["value"] or {}
        if delivery.get("ok") is not None or delivery.get("attempted") is False:
            return status  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"the delivery never settled: {status['delivery']}")


def test_when_the_notice_runs_the_artifacts_exist_and_status_already_says_terminal(
        li_home: str, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    script = (f'cat > "$0.payload"; ls "$LI_HOME/runs/$1/artifacts" > "$0.artifacts"; '
              f'{shlex.quote(li_bin())} job status "$1" --machine > "$0.status"')
    status = run_with_notice(li_home, f"sh -c {shlex.quote(script)} {seen} {{run_id}}")
    payload = json.loads(Path(f"{seen}.payload").read_text())
    assert payload["run_id"] == status["run_id"] and payload["terminal"] is True
    assert payload["outcome"] == "succeeded" and payload["finished_at"] == status["finished_at"]
    assert Path(f"{seen}.artifacts").read_text().split() == ["out.txt"]
    during = json.loads(Path(f"{seen}.status").read_text())["data"]
    assert (during["terminal"], during["outcome"]) == (True, "succeeded")
    assert during["delivery"]["value"] == {"attempted": True, "ok": None, "exit_code": None,
                                           "error": None, "failure_class": None}
    assert status["delivery"]["value"]["ok"] is True


def test_a_failing_notice_is_recorded_and_the_runs_outcome_is_unchanged(li_home: str) -> None:
    status = run_with_notice(li_home, "sh -c 'exit 3'")
    assert status["outcome"] == "succeeded"
    delivery = status["delivery"]["value"]
    assert (delivery["attempted"], delivery["ok"], delivery["exit_code"], delivery["failure_class"]) == (
        True, False, 3, "nonzero_exit")


def test_a_missing_notice_executable_is_recorded_as_command_not_found(li_home: str, tmp_path: Path) -> None:
    status = run_with_notice(li_home, f"{tmp_path}/no-such-notifier {{run_id}}")
    assert status["outcome"] == "succeeded"
    assert status["delivery"]["value"]["failure_class"] == "command_not_found"


def test_a_hanging_notice_is_killed_at_the_timeout_and_recorded(li_home: str) -> None:
    status = run_with_notice(li_home, "sleep 300", env={"LI_NOTIFY_TIMEOUT": "1"})
    assert status["outcome"] == "succeeded"
    delivery = status["delivery"]["value"]
    assert (delivery["ok"], delivery["failure_class"]) == (False, "timeout")


def test_a_runner_killed_in_the_middle_of_delivery_leaves_an_attempt_of_unknown_outcome(li_home: str) -> None:
    handle = machine("agent", "--detach", "--notify", "sh -c 'kill -KILL $PPID; sleep 1'", "sh", WORK,
                     home=li_home).data
    machine("job", "wait", handle["run_id"], "--max-wait", "60", "--poll-interval", "0.1", home=li_home)
    for _ in range(400):
        try:
            os.kill(handle["pid"], 0)
        except ProcessLookupError:
            break
        if _zombie(handle["pid"]):
            break
        time.sleep(0.05)
    status = machine("job", "status", handle["run_id"], home=li_home).data
    assert (status["terminal"], status["outcome"]) == (True, "succeeded")
    assert status["delivery"]["available"] is True
    assert status["delivery"]["value"] == {"attempted": True, "ok": None, "exit_code": None,
                                           "error": None, "failure_class": None}


def test_no_notice_configured_is_attempted_false_not_a_failure(li_home: str) -> None:
    handle = machine("agent", "--detach", "sh", WORK, home=li_home).data
    machine("job", "wait", handle["run_id"], "--max-wait", "60", "--poll-interval", "0.1", home=li_home)
    status = settled(li_home, handle["run_id"])
    assert status["delivery"]["available"] is True
    assert status["delivery"]["value"]["attempted"] is False
    assert status["delivery"]["value"].get("failure_class") is None


def test_the_environments_notice_command_is_captured_at_submit(li_home: str, tmp_path: Path) -> None:
    out = tmp_path / "env-notice"
    status = run_with_notice(li_home, f"sh -c 'cat > {out}'",
                             env={"LI_NOTIFY_COMMAND": "sh -c 'exit 9'"})  # the flag wins
    assert status["delivery"]["value"]["ok"] is True and out.exists()
    handle = machine("agent", "--detach", "sh", WORK, home=li_home,
                     env={"LI_NOTIFY_COMMAND": f"sh -c 'cat > {out}.env'"}).data
    with open(os.path.join(li_home, "runs", handle["run_id"], "record.json"), encoding="utf-8") as rec:
        recorded = json.load(rec)
    assert (recorded["notify"], recorded["notify_source"]) == (["sh", "-c", f"cat > {out}.env"], "env")
    machine("job", "wait", handle["run_id"], "--max-wait", "60", "--poll-interval", "0.1", home=li_home)
    assert settled(li_home, handle["run_id"])["delivery"]["value"]["ok"] is True


def _zombie(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
