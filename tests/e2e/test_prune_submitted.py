"""`li job prune` beside runs submitted through `li agent`: a live run survives, its end makes it prunable."""

from __future__ import annotations

import os
import time

from tests.support import machine, status_data, submit_detached


def test_a_submitted_run_is_kept_while_it_runs_and_removed_once_it_ended(li_home) -> None:
    long_run = machine("agent", "--detach", "sh", "sleep 30", home=li_home).data["run_id"]
    quick = machine("agent", "--detach", "sh", "echo done", home=li_home).data["run_id"]
    waited = machine("job", "wait", quick, "--max-wait", "30", "--poll-interval", "0.1", home=li_home).data
    assert waited["all_terminal"] is True
    data = machine("job", "prune", home=li_home).data
    assert data["removed"] == [quick]
    assert data["kept"] == [{"run_id": long_run, "reason": "not_ended", "detail": "status running"}]
    assert os.listdir(os.path.join(li_home, "runs")) == [long_run]
    machine("job", "kill", long_run, home=li_home)
    waited = machine("job", "wait", long_run, "--max-wait", "30", "--poll-interval", "0.1", home=li_home).data
    assert waited["all_terminal"] is True
    assert machine("job", "prune", home=li_home).data["removed"] == [long_run]
    assert os.listdir(os.path.join(li_home, "runs")) == []


# --- found by an adversarial review of the real li; each pins one fixed defect ---------------


def test_prune_keeps_a_run_whose_notice_is_in_flight(li_home: str, tmp_path) -> None:
    # The notice stays in flight until the test releases it (not for a fixed time a loaded machine
    # could outlast), bounded so that nothing is left behind if the test fails.
    release = tmp_path / "release"
    hold = f"sh -c 'i=0; while [ ! -e {release} ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done'"
    run_id = submit_detached(li_home, "--notify", hold, 'echo hi > "$LI_ARTIFACTS_DIR/a"')
    deadline = time.monotonic() + 15
    while True:
        data = status_data(li_home, run_id)
        if data["terminal"] and data["delivery"]["value"] and data["delivery"]["value"]["attempted"]:
            break
        assert time.monotonic() < deadline, data
        time.sleep(0.1)
    assert data["delivery"]["value"]["ok"] is None  # the notify command is still running
    try:
        machine("job", "prune", home=li_home)
        assert machine("job", "status", run_id, home=li_home).envelope["ok"] is True
    finally:
        release.touch()
