"""Regressions found by an adversarial review of the real `li` (ADR-0106); each test pins one
defect that was fixed, so it cannot come back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.fs_store import FsRunStore
from tests.builders import RunState, Sleeper, a_run
from tests.support import li_bin, machine, run_li

FAST = {"LI_KILL_GRACE": "0.3"}


def _envelope(result) -> dict:
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    value = json.loads(result.stdout)
    assert value["contract_version"] == 1
    return value


def _submit(home: str, *argv: str) -> str:
    return machine("agent", "--detach", *argv, home=home).data["run_id"]


def _status(home: str, run_id: str) -> dict:
    return machine("job", "status", run_id, home=home).data


def _wait_terminal(home: str, run_id: str, timeout: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        data = _status(home, run_id)
        if data["terminal"] or time.monotonic() > deadline:
            return data
        time.sleep(0.1)


@pytest.fixture
def sleepers():
    started: list[Sleeper] = []
    yield started
    for process in started:
        process.stop()


# --- kill trusts the recorded pgid -------------------------------------------------------------


def test_kill_with_recorded_pgid_zero_does_not_signal_the_callers_group(li_home: str, sleepers) -> None:
    process = Sleeper()
    sleepers.append(process)
    store = FsRunStore(li_home)
    run = a_run(store, datetime.now(UTC), RunState.STARTED, pid=process.pid,
                  incarnation=replace(process.incarnation(), pgid=0))
    env = dict(os.environ, LI_HOME=li_home, **FAST)
    # setsid: li leads its own group, so a killpg(0) can only hit li itself and not pytest
    proc = subprocess.run(["setsid", "-w", li_bin(), "job", "kill", run.run_id, "--machine"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert json.loads(proc.stdout)["contract_version"] == 1


def test_kill_signals_the_runs_own_group_not_a_recorded_foreign_one(li_home: str, sleepers) -> None:
    target, bystander = Sleeper(), Sleeper()
    sleepers.extend([target, bystander])
    store = FsRunStore(li_home)
    run = a_run(store, datetime.now(UTC), RunState.STARTED, pid=target.pid,
                  incarnation=replace(target.incarnation(), pgid=bystander.pid))
    data = machine("job", "kill", run.run_id, home=li_home, env=FAST).data
    time.sleep(0.3)
    assert bystander.proc.poll() is None, "a process outside the run's group was killed"
    assert data["action"] != "signalled" or target.proc.poll() is not None


def test_kill_with_a_negative_recorded_pgid_is_not_internal(li_home: str, sleepers) -> None:
    process = Sleeper()
    sleepers.append(process)
    store = FsRunStore(li_home)
    run = a_run(store, datetime.now(UTC), RunState.STARTED, pid=process.pid,
                  incarnation=replace(process.incarnation(), pgid=-7))
    envelope = _envelope(run_li("job", "kill", run.run_id, "--machine", home=li_home, env=FAST))
    assert envelope["ok"] is True or envelope["error"]["kind"] != "internal", envelope


# --- kill during preparing is recorded, then ignored --------------------------------------------


def test_kill_recorded_during_preparing_is_honoured_when_the_runner_starts(li_home: str) -> None:
    template = _submit(li_home, "true")
    _wait_terminal(li_home, template)
    store = FsRunStore(li_home)
    record = json.loads(Path(store.run_dir(template), "record.json").read_text())
    run = a_run(store, datetime.now(UTC), RunState.PREPARING, model=record["model"],
                  cwd=record["cwd"], extra=record["extra"])
    marker = Path(li_home) / "work-ran"
    for name in ("request.json", "instruction.txt"):
        shutil.copy(Path(store.run_dir(template), name), Path(store.run_dir(run.run_id), name))
    Path(store.run_dir(run.run_id), "instruction.txt").write_text(f'touch {marker}; echo x > "$LI_ARTIFACTS_DIR/a"')

    kill = machine("job", "kill", run.run_id, home=li_home, env=FAST).data
    assert kill["terminal"] is False  # nothing to signal yet; the request is recorded
    # the submitter's spawn happens now, right after its pre-spawn write
    subprocess.run([sys.executable, "-m", "entrypoints.runner", run.run_id], capture_output=True,
                   timeout=60, env=dict(os.environ, LI_HOME=li_home),
                   cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    after = _status(li_home, run.run_id)
    assert after["terminal"] is True
    assert after["outcome"] == "cancelled", after
    assert not marker.exists(), "the work ran although a kill was recorded before it started"


# --- outcome derivation -------------------------------------------------------------------------


def test_out_of_vocabulary_recorded_outcome_is_never_reported_as_success(li_home: str) -> None:
    store = FsRunStore(li_home)
    now = datetime.now(UTC)
    run = a_run(store, now, RunState.STARTED, status="completed", outcome="partial", finished_at=now.isoformat())
    for data in (_status(li_home, run.run_id),
                 machine("job", "wait", run.run_id, "--max-wait", "0", home=li_home).data["runs"][0]):
        assert data["terminal"] is True
        assert data["outcome"] == "indeterminate", data


# --- input that reaches `internal` --------------------------------------------------------------


def test_deeply_nested_flow_spec_is_invalid_input_not_internal(li_home: str, tmp_path: Path) -> None:
    spec = tmp_path / "deep.json"
    spec.write_text("[" * 5000 + "]" * 5000)
    envelope = _envelope(run_li("orchestrate", "flow", "--detach", str(spec), "--machine", home=li_home))
    assert envelope["ok"] is False
    assert envelope["error"]["kind"] == "invalid_input", envelope["error"]


# --- retention vs. the notice -------------------------------------------------------------------


def test_prune_keeps_a_run_whose_notice_is_in_flight(li_home: str) -> None:
    run_id = _submit(li_home, "--notify", "sleep 3", 'echo hi > "$LI_ARTIFACTS_DIR/a"')
    deadline = time.monotonic() + 15
    while True:
        data = _status(li_home, run_id)
        if data["terminal"] and data["delivery"]["value"] and data["delivery"]["value"]["attempted"]:
            break
        assert time.monotonic() < deadline, data
        time.sleep(0.1)
    assert data["delivery"]["value"]["ok"] is None  # the notify command is still running
    machine("job", "prune", home=li_home)
    assert machine("job", "status", run_id, home=li_home).envelope["ok"] is True


# --- artifacts listing ---------------------------------------------------------------------------


def test_artifact_symlink_to_a_directory_is_not_silently_dropped(li_home: str) -> None:
    run_id = _submit(li_home, 'echo a > "$LI_ARTIFACTS_DIR/a"; ln -s /etc "$LI_ARTIFACTS_DIR/etc-link"')
    _wait_terminal(li_home, run_id)
    artifacts = machine("job", "output", run_id, home=li_home).data["artifacts"]
    assert artifacts["available"], artifacts
    entries = {entry["name"]: entry for entry in artifacts["value"]}
    assert sorted(entries) == ["a", "etc-link"]  # listed as the link it is, never walked into
    assert (entries["etc-link"]["type"], entries["etc-link"]["link"], entries["etc-link"]["sha256"]) \
        == ("symlink", "/etc", None)


# --- regressions from the code review -----------------------------------------------------------


@pytest.mark.parametrize("verb", [("job", "list"), ("job", "prune")])
def test_a_store_that_cannot_be_listed_is_unavailable_not_internal(tmp_path: Path, verb: tuple[str, ...]) -> None:
    home = tmp_path / "not-a-folder"
    home.write_text("a file where LI_HOME should be")
    error = machine(*verb, home=str(home)).error
    assert (error["kind"], error["detail"]["reason_code"]) == ("unavailable", "store_unreadable")
    person = run_li(*verb, home=str(home))
    assert person.returncode != 0 and len(person.stderr.splitlines()) == 1 and "Traceback" not in person.stderr


def test_a_flow_spec_holding_an_impossible_date_is_invalid_input(li_home: str, tmp_path: Path) -> None:
    spec = tmp_path / "flow.yaml"
    spec.write_text("steps:\n  - id: a\n    prompt: echo hi\n    description: 2020-13-45\n")
    error = machine("orchestrate", "flow", "--detach", str(spec), home=li_home).error
    assert error["kind"] == "invalid_input"
    assert not os.path.isdir(os.path.join(li_home, "runs")) or os.listdir(os.path.join(li_home, "runs")) == []


def test_a_reader_that_went_away_ends_a_human_listing_quietly(li_home: str) -> None:
    _submit(li_home, "sh", "true")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before li writes a byte: `li job list | head -0`
    try:
        proc = subprocess.run([li_bin(), "job", "list"], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=60, env=dict(os.environ, LI_HOME=li_home))
    finally:
        os.close(write_end)
    assert proc.returncode == 141
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_li_mcp_takes_its_documented_options_and_drives_the_li_that_started_it(li_home: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LI_BIN"}
    env.update(LI_HOME=li_home, PATH="/usr/bin:/bin")  # no li on PATH: it must use its own path
    hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    proc = subprocess.Popen([li_bin(), "mcp", "--max-attempts", "3", "--backoff", "0.5", "--backoff-max", "2"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        proc.stdin.write(hello + "\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        reply = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    assert reply["id"] == 1 and "result" in reply, reply


def test_ctrl_c_in_a_foreground_agent_kills_the_run_through_the_kill_use_case(li_home: str) -> None:
    import signal

    env = dict(os.environ, LI_HOME=li_home, **FAST)
    person = subprocess.Popen([li_bin(), "agent", "sh", "echo started; sleep 60"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert person.stdout.readline().strip() == "started"  # type: ignore[union-attr]
        person.send_signal(signal.SIGINT)
        out, err = person.communicate(timeout=60)
    finally:
        if person.poll() is None:
            person.kill()
    [run_id] = os.listdir(os.path.join(li_home, "runs"))
    data = _wait_terminal(li_home, run_id)
    assert (data["status"], data["outcome"], data["reason_code"]) == ("cancelled", "cancelled", "kill_requested")
    assert person.returncode == 143, err


def test_a_foreground_agent_writes_the_works_output_to_stdout_and_its_own_lines_to_stderr(li_home: str) -> None:
    person = run_li("agent", "sh", 'echo hello; printf "no newline"', home=li_home)
    assert person.returncode == 0, person.stderr
    assert person.stdout == "hello\nno newline"
    assert "li runner: completed" in person.stderr
