"""D4's derivations as properties: terminal only from a recorded end, outcome null exactly when not terminal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.evidence import (
    ACCESS_DENIED,
    ALIVE,
    CONCLUSIVE,
    FOREIGN_HOST,
    IDENTITY_NOT_RECORDED,
    Finding,
)
from lionrun.domain.lifecycle import classify, derive
from lionrun.domain.run import Run, iso
from lionrun.domain.vocabulary import OUTCOMES, STATUSES_AT_V1

NOW = datetime(2026, 7, 25, 18, 0, tzinfo=UTC)
SUBMITTED = iso(NOW - timedelta(seconds=30))
KNOWN = {"completed", "completed_empty", "failed", "timed_out", "killed", "cancelled", "aborted"}

statuses = st.sampled_from(STATUSES_AT_V1) | st.text(max_size=12)
unknown_statuses = st.text(max_size=12).filter(lambda s: s not in KNOWN)
findings = st.none() | st.builds(
    Finding,
    st.sampled_from(sorted(CONCLUSIVE | {ALIVE, FOREIGN_HOST, ACCESS_DENIED, IDENTITY_NOT_RECORDED})),
    st.sampled_from([True, False, None]),
    st.booleans(),
)
ends = st.none() | st.just(iso(NOW))
phases = st.sampled_from([None, "preparing", "started", "failed"])
recorded_outcomes = st.none() | st.sampled_from([*OUTCOMES, "success", "completed", ""])


def run(status: str, finished_at: str | None = None, spawn_state: str | None = "started",
        outcome: str | None = None) -> Run:
    return Run(run_id="20260725T175010-97f334", kind="agent", status=status, submitted_at=SUBMITTED,
               spawn_state=spawn_state, finished_at=finished_at, outcome=outcome, pid=4242)


@given(statuses, ends, phases, recorded_outcomes, findings)
def test_outcome_is_null_exactly_when_terminal_is_false(
    status: str, end: str | None, phase: str | None, outcome: str | None, finding: Finding | None
) -> None:
    d = derive(run(status, end, phase, outcome), finding, NOW)
    assert (d.outcome is None) == (not d.terminal)
    assert d.outcome is None or d.outcome in OUTCOMES


@given(statuses, ends, phases, recorded_outcomes, findings)
def test_terminal_is_true_exactly_when_an_end_is_recorded(
    status: str, end: str | None, phase: str | None, outcome: str | None, finding: Finding | None
) -> None:
    d = derive(run(status, end, phase, outcome), finding, NOW)
    assert d.terminal == (end is not None or phase == "failed")


@given(statuses, st.sampled_from([None, "preparing", "started"]), recorded_outcomes, findings)
def test_terminal_never_follows_from_liveness_or_a_status_name(
    status: str, phase: str | None, outcome: str | None, finding: Finding | None
) -> None:
    # No recorded end: whatever the status says and whatever the probe saw, not terminal.
    d = derive(run(status, None, phase, outcome), finding, NOW)
    assert d.terminal is False and d.outcome is None


@given(unknown_statuses, st.none() | st.sampled_from(["success", "ok", ""]), phases, findings)
def test_an_unknown_status_with_a_recorded_end_is_indeterminate_never_succeeded(
    status: str, outcome: str | None, phase: str | None, finding: Finding | None
) -> None:
    d = derive(run(status, iso(NOW), phase, outcome), finding, NOW)
    assert d.terminal is True and d.outcome == "indeterminate"


@given(statuses, st.text(max_size=12).filter(lambda o: o not in OUTCOMES), phases, findings)
def test_a_recorded_outcome_outside_the_vocabulary_is_indeterminate_whatever_the_status(
    status: str, outcome: str, phase: str | None, finding: Finding | None
) -> None:
    d = derive(run(status, iso(NOW), phase, outcome), finding, NOW)
    assert d.terminal is True and d.outcome == "indeterminate"


@given(statuses, ends, phases, findings)
def test_status_is_reported_verbatim_except_an_established_dead_process(
    status: str, end: str | None, phase: str | None, finding: Finding | None
) -> None:
    d = derive(run(status, end, phase), finding, NOW)
    established_dead = (end is None and phase not in ("preparing", "failed") and finding is not None
                        and finding.local and finding.alive is False)
    assert d.status == ("exited" if established_dead else status)


def test_the_producer_classifies_every_v1_status_it_knows() -> None:
    assert {s: classify(s) for s in STATUSES_AT_V1} == {
        "running": "indeterminate", "completed": "succeeded", "completed_empty": "failed",
        "failed": "failed", "timed_out": "failed", "aborted": "cancelled", "cancelled": "cancelled",
        "killed": "failed", "exited": "indeterminate", "unknown": "indeterminate",
        "queued": "indeterminate",  # never a success: a queued run has no end to classify
        "waiting": "indeterminate",  # nor a run that waits for others
        "waiting_approval": "indeterminate",  # nor one waiting for a person's approval
    }


@given(st.text())
def test_classify_is_total_and_only_completed_is_a_success(status: str) -> None:
    assert classify(status) in OUTCOMES
    assert (classify(status) == "succeeded") == (status == "completed")


def test_completed_empty_is_terminal_and_failed() -> None:
    d = derive(run("completed_empty", iso(NOW)), None, NOW)
    assert (d.terminal, d.outcome) == (True, "failed")


def test_a_recorded_outcome_from_the_writer_is_kept() -> None:
    d = derive(run("exited", iso(NOW), outcome="indeterminate"), None, NOW)
    assert d.outcome == "indeterminate"


def test_a_spawn_failure_is_terminal_without_a_finish_time() -> None:
    d = derive(run("failed", None, "failed", "failed"), None, NOW)
    assert (d.terminal, d.outcome) == (True, "failed")


def test_a_preparing_run_ages_into_possibly_orphaned_but_never_terminal() -> None:
    young = derive(run("running", None, "preparing"), None, NOW, preparing_threshold=600)
    old = derive(run("running", None, "preparing"), None, NOW + timedelta(seconds=601), preparing_threshold=600)
    assert (young.possibly_orphaned, young.terminal) == (False, False)
    assert (old.possibly_orphaned, old.aged_preparing, old.terminal, old.outcome) == (True, True, False, None)


def test_liveness_is_reported_as_advisory_beside_a_recorded_end() -> None:
    d = derive(run("completed", iso(NOW)), Finding(ALIVE, True), NOW)
    assert (d.alive, d.terminal, d.outcome, d.status) == (True, True, "succeeded", "completed")


def test_age_is_measured_from_submission() -> None:
    assert derive(run("running"), None, NOW).age_seconds == 30.0


def test_a_live_pid_the_record_cannot_attribute_is_alive_null_never_true() -> None:
    """No host id, or no create time, and a process at the pid: alive is null
    (it may be anyone's), and it is still no evidence the run stopped."""
    from lionrun.domain.evidence import HostFacts, ProcessObservation, judge
    from lionrun.domain.run import Incarnation

    here = HostFacts(host_id="h", boot_id="b")
    seen = ProcessObservation(pid=42, exists=True, create_time=5.0)
    for incarnation in (None, Incarnation("h", "b", 42, None, 42), Incarnation(None, "b", 42, 5.0, 42)):
        finding = judge(incarnation, 42, seen, here)
        assert (finding.code, finding.alive, finding.present) == (IDENTITY_NOT_RECORDED, None, True)
    gone = judge(None, 42, ProcessObservation(pid=42, exists=False), here)
    assert (gone.alive, gone.present) == (False, False)


generations = st.integers(min_value=0, max_value=5)
conclusive_findings = st.builds(Finding, st.sampled_from(sorted(CONCLUSIVE)), st.just(False), st.booleans())


@given(generations, generations, ends, phases, conclusive_findings)
def test_a_fenced_reap_writes_only_over_the_generation_it_judged(
        judged_at: int, current_at: int, finished_at: str | None, phase: str | None, finding: Finding) -> None:
    """The fence (R-rules) in one pure function both stores' writers go through: a record that moved
    on is never reaped; one that did not is reaped exactly as `reap` says, one generation on."""
    from lionrun.domain.lifecycle import fenced_reap, next_generation, reap

    judged = run("running", spawn_state=phase).evolve(generation=judged_at)
    current = run("running", finished_at, phase).evolve(generation=current_at)
    written = fenced_reap(judged, current, finding, NOW, {"why": "test"})
    if judged_at != current_at:
        assert written is None
    else:
        assert written == reap(current, finding, NOW, {"why": "test"})
    if written is not None:
        assert current.finished_at is None and written.terminal_source == "reaper"
        assert next_generation(current, written).generation == current_at + 1
