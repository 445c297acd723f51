"""`li job prune` beside runs submitted through `li agent`: a live run survives, its end makes it prunable."""

from __future__ import annotations

import os

from tests.support import machine


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
