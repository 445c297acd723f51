"""SIGKILL at every phase of a run's life: every verb's answer stays true, and no other run is disturbed.

Real processes and a real store; the runner pauses at a phase through `LI_FAULT_PAUSE` (see
adapters/faults.py) so the kill lands exactly there.
"""

from __future__ import annotations

import os
import pathlib
import shlex

import pytest

from tests.builders import kill_session
from tests.faults.helpers import (
    ask,
    assert_truthful,
    assert_undisturbed,
    bystander,
    marker,
    raw_record,
    record,
    sigkill,
    submit,
    wait_until_ended,
)
from tests.support import machine

ARTIFACT = 'echo answer > "$LI_ARTIFACTS_DIR/a.txt"'


def paused(phase: str) -> dict[str, str]:
    return {"LI_FAULT_PAUSE": phase, "LI_FAULT_SECONDS": "120"}


@pytest.fixture
def witness(li_home: str) -> tuple[str, bytes]:
    """A bystander that completed before the fault, and its record's bytes."""
    run_id = bystander(li_home)
    return run_id, raw_record(li_home, run_id)


def test_a_runner_killed_before_the_work_is_never_a_success(
    li_home: str, tmp_path: pathlib.Path, witness: tuple[str, bytes]
) -> None:
    proof = tmp_path / "work-ran"
    run_id = submit(li_home, f"touch {shlex.quote(str(proof))}; {ARTIFACT}", paused("before_work"))
    pid = marker(li_home, "before_work")
    live = ask(li_home, run_id)
    assert_truthful(live, work_completed=False, record_end=False)
    assert (live.status["data"]["terminal"], live.status["data"]["alive"]) == (False, True)
    sigkill(pid)
    after = ask(li_home, run_id)
    assert_truthful(after, work_completed=False, record_end=True)
    data = after.status["data"]
    assert (data["terminal"], data["outcome"]) == (True, "indeterminate"), data
    assert data["reason_code"].startswith("process_gone"), data
    assert not proof.exists()
    assert_undisturbed(li_home, *witness)


@pytest.mark.parametrize("what", ["runner", "session"])
def test_a_runner_killed_during_the_work_is_never_a_success(
    what: str, li_home: str, tmp_path: pathlib.Path, witness: tuple[str, bytes]
) -> None:
    started = tmp_path / "working"
    run_id = submit(li_home, f"echo $$ > {shlex.quote(str(started))}; sleep 120; {ARTIFACT}")
    for _ in range(600):
        if started.exists() and started.read_text().strip():
            break
        machine("job", "wait", run_id, "--max-wait", "0.05", "--poll-interval", "0.05", home=li_home)
    incarnation = record(li_home, run_id)["incarnation"]
    try:
        assert_truthful(ask(li_home, run_id), work_completed=False, record_end=False)
        if what == "runner":
            sigkill(incarnation["pid"])
            # The work still runs in the runner's session (its own process group): the run lives on.
            alive = ask(li_home, run_id)
            assert_truthful(alive, work_completed=False, record_end=False)
            assert (alive.status["data"]["terminal"], alive.status["data"]["alive"]) == (False, True)
        kill_session(run_id, incarnation)
        after = ask(li_home, run_id)
        assert_truthful(after, work_completed=False, record_end=True)
        assert after.status["data"]["outcome"] == "indeterminate", after.status
        assert after.output["data"]["artifacts"]["value"] == []
    finally:
        kill_session(run_id, incarnation)
    assert_undisturbed(li_home, *witness)


def test_a_runner_killed_between_its_artifacts_and_its_end_is_not_called_a_success(
    li_home: str, witness: tuple[str, bytes]
) -> None:
    run_id = submit(li_home, ARTIFACT, paused("after_artifacts"))
    pid = marker(li_home, "after_artifacts")
    live = ask(li_home, run_id)
    assert_truthful(live, work_completed=False, record_end=False)
    assert live.output["data"]["manifest"]["available"] is True
    sigkill(pid)
    after = ask(li_home, run_id)
    assert_truthful(after, work_completed=False, record_end=True)
    assert after.status["data"]["outcome"] == "indeterminate", after.status
    names = [a["name"] for a in after.output["data"]["artifacts"]["value"]]
    assert names == ["a.txt"]  # the outputs that exist are still shown; the result is still unknown
    assert_undisturbed(li_home, *witness)


def test_a_runner_killed_between_its_end_and_its_notice_keeps_the_true_end_and_says_no_notice_is_known(
    li_home: str, tmp_path: pathlib.Path, witness: tuple[str, bytes]
) -> None:
    noticed = tmp_path / "noticed"
    notify = f"touch {shlex.quote(str(noticed))}"
    run_id = submit(li_home, ARTIFACT, paused("after_end"), "--notify", notify)
    pid = marker(li_home, "after_end")
    sigkill(pid)
    after = ask(li_home, run_id)
    assert_truthful(after, work_completed=True, record_end=True)
    data = after.status["data"]
    assert (data["status"], data["terminal"], data["outcome"]) == ("completed", True, "succeeded")
    assert data["delivery"]["available"] is False, data["delivery"]  # never "attempted: false"
    assert data["delivery"]["reason_code"], data["delivery"]
    assert not noticed.exists()
    assert record(li_home, run_id)["terminal_source"] == "runner"  # the reaper never relabels it
    assert_undisturbed(li_home, *witness)


def test_the_submitter_killed_between_the_preparing_write_and_the_spawn_leaves_an_honest_preparing_run(
    li_home: str, witness: tuple[str, bytes]
) -> None:
    import subprocess

    from tests.support import li_bin

    env = {**os.environ, "LI_HOME": li_home, **paused("before_spawn")}
    submitter = subprocess.Popen([li_bin(), "agent", "--machine", "--detach", "sh", ARTIFACT], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        pid = marker(li_home, "before_spawn")
        assert pid == submitter.pid
        sigkill(pid)
        out, _ = submitter.communicate(timeout=30)
    finally:
        submitter.kill()
    assert out == b""  # killed by a signal: a transport fault, no envelope (D8)
    (run_id,) = [r for r in os.listdir(os.path.join(li_home, "runs")) if r != witness[0]]
    answers = ask(li_home, run_id)
    assert_truthful(answers, work_completed=False, record_end=False)
    data = answers.status["data"]
    assert (data["spawn_state"], data["terminal"], data["outcome"]) == ("preparing", False, None)
    assert run_id in answers.wait["data"]["pending"]  # fresh: never reaped, never called stopped
    assert record(li_home, run_id)["spawn_state"] == "preparing"
    assert_undisturbed(li_home, *witness)


def test_a_run_that_is_not_killed_still_ends_normally_under_the_fault_switch(li_home: str) -> None:
    """The pause point itself changes nothing: a paused run resumes and records its true end."""
    env = {"LI_FAULT_PAUSE": "after_artifacts", "LI_FAULT_SECONDS": "0.2"}
    run_id = submit(li_home, ARTIFACT, env)
    data = wait_until_ended(li_home, run_id)
    assert (data["status"], data["outcome"]) == ("completed", "succeeded"), data
