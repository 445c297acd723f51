"""`li job retry RUN_ID`: a new run from the recorded request; the new run records `retry_of`."""

from __future__ import annotations

import json
import os

from lionrun.adapters.fs_store import FsRunStore
from tests.support import machine, run_li


def submitted(home: str, cwd: str, *argv: str) -> str:
    data = machine("agent", "--detach", *argv, home=home, cwd=cwd).data
    machine("job", "wait", data["run_id"], "--max-wait", "30", home=home)
    return str(data["run_id"])


def test_retry_starts_a_new_run_from_the_recorded_request(li_home: str, tmp_path) -> None:
    first = submitted(li_home, str(tmp_path), "--label", "flaky", "--timeout", "30", "sh",
                      'echo "attempt in $PWD"; exit 3')
    handle = machine("job", "retry", first, home=li_home).data
    assert handle["run_id"] != first and handle["terminal"] is False and handle["status"] == "running"
    waited = machine("job", "wait", handle["run_id"], "--max-wait", "30", home=li_home).data
    assert waited["runs"][0]["status"] == "failed" and waited["runs"][0]["label"] == "flaky"
    status = machine("job", "status", handle["run_id"], home=li_home).data
    assert status["retry_of"] == first and status["exit_code"] == 3
    assert machine("job", "status", first, home=li_home).data["retry_of"] is None
    waited_by_person = run_li("job", "wait", handle["run_id"], "--max-wait", "5", home=li_home)
    assert waited_by_person.stdout.split()[1:] == ["failed", "failed", "(exit_nonzero)", "exit", "code", "3"]
    store = FsRunStore(li_home)
    request = json.loads(store.read_text(handle["run_id"], "request.json"))
    assert request["extra"]["retry_of"] == first and request["timeout"] == 30 and request["cwd"] == str(tmp_path)
    assert store.read_text(handle["run_id"], "instruction.txt") == 'echo "attempt in $PWD"; exit 3'
    output = machine("job", "output", handle["run_id"], home=li_home).data
    assert output["console"]["value"].startswith(f"attempt in {tmp_path}")


def test_a_person_retries_by_short_id_and_sees_retry_of(li_home: str, tmp_path) -> None:
    first = submitted(li_home, str(tmp_path), "sh", "echo again")
    ran = run_li("job", "retry", first[-4:], home=li_home)
    assert ran.returncode == 0 and "again" in ran.stdout
    new = ran.stderr.splitlines()[0].split()[1]
    shown = run_li("job", "status", new, home=li_home)
    assert f"retry of   {first}" in shown.stdout
    detached = run_li("job", "retry", "@last", "--detach", home=li_home)
    assert detached.returncode == 0 and len(detached.stdout.split()) == 1


def test_retry_refuses_what_it_cannot_rerun(li_home: str, tmp_path) -> None:
    assert machine("job", "retry", "20990101T000000-abcdef", home=li_home).error["kind"] == "not_found"
    assert machine("job", "retry", "@last", home=li_home).error["kind"] == "invalid_input"
    gone = tmp_path / "gone"
    gone.mkdir()
    first = submitted(li_home, str(gone), "sh", "true")
    os.rmdir(gone)
    assert machine("job", "retry", first, home=li_home).error["kind"] == "invalid_input"
    folder = FsRunStore(li_home).run_dir(first)
    os.unlink(os.path.join(folder, "request.json"))
    refused = machine("job", "retry", first, home=li_home).error
    assert refused["kind"] == "unavailable" and refused["detail"]["run_id"] == first
