"""The contract client against hand-written `li` answers: every consumer obligation of ADR-0106."""

from __future__ import annotations

import json
import math
import sys
import threading
from collections.abc import Sequence

import pytest

from lionrun.adapters.contract_client import (
    Branch,
    Completed,
    ContractClient,
    Evidence,
    Reply,
    SubprocessRunner,
    SurfaceState,
    UnresolvedLedger,
    UnresolvedPolicy,
    Verdict,
    branch_outcome,
    classify,
    read_availability,
    run_view,
)
from lionrun.domain.contract import is_well_formed
from tests.fakes.contract_fakes import (
    LI,
    OTHER_ID,
    RUN_ID,
    FakeTime,
    ScriptedRunner,
    envelope,
    handshake_data,
    ok,
    refusal,
    run_row,
    wait_data,
)

V1 = frozenset({1})


def trusted(
    runner: ScriptedRunner, policy: UnresolvedPolicy | None = None, time: FakeTime | None = None
) -> ContractClient:
    """A client that has completed a v1 handshake on `runner`."""
    time = time or FakeTime()
    runner.answers.insert(0, ok(handshake_data()))
    client = ContractClient(LI, runner=runner, policy=policy, sleep=time.sleep, clock=time.clock)
    assert client.handshake().registered
    return client


# --- C1: handshake governs registration; the version is checked on every envelope ----------------


def test_a_v1_handshake_registers_the_surface() -> None:
    runner = ScriptedRunner().then(ok(handshake_data()))
    client = ContractClient(LI, runner=runner)
    hello = client.handshake()
    assert hello.registered and client.state is SurfaceState.TRUSTED
    assert hello.reply.data is not None and hello.reply.data["implementation"] == "lionrun"
    assert runner.calls == [[LI, "handshake", "--machine"]]


def test_a_v2_handshake_refuses_to_register_any_verb() -> None:
    runner = ScriptedRunner().then(Completed(0, envelope(handshake_data(2), version=2)))
    client = ContractClient(LI, runner=runner)
    hello = client.handshake()
    assert not hello.registered and hello.reply.verdict is Verdict.DEGRADED
    assert hello.reply.data is None and "contract_version 2" in (hello.reason or "")
    assert client.status(RUN_ID).verdict is Verdict.UNREGISTERED
    assert len(runner.calls) == 1


def test_a_v1_envelope_announcing_a_v2_contract_is_not_registered() -> None:
    client = ContractClient(LI, runner=ScriptedRunner().then(ok(handshake_data(2))))
    hello = client.handshake()
    assert not hello.registered and hello.reply.data is None


def test_verbs_are_not_answered_before_a_handshake() -> None:
    runner = ScriptedRunner()
    reply = ContractClient(LI, runner=runner).status(RUN_ID)
    assert reply.verdict is Verdict.UNREGISTERED and reply.data is None and runner.calls == []


def test_a_v2_envelope_mid_session_degrades_instead_of_decoding() -> None:
    runner = ScriptedRunner().then(
        Completed(0, envelope(run_row("completed", True, "succeeded"), version=2))
    )
    client = trusted(runner)
    reply = client.status(RUN_ID)
    assert reply.verdict is Verdict.DEGRADED and reply.data is None and reply.contract_version == 2
    assert client.state is SurfaceState.DEGRADED


def test_a_degraded_surface_stays_untrusted_until_a_new_handshake() -> None:
    runner = ScriptedRunner().then(Completed(0, envelope(run_row(), version=2)))
    client = trusted(runner)
    client.status(RUN_ID)
    assert client.status(RUN_ID).verdict is Verdict.DEGRADED
    runner.then(ok(handshake_data()), ok(run_row()))
    assert client.handshake().registered
    assert client.status(RUN_ID).verdict is Verdict.OK


def test_a_v2_handshake_after_trust_leaves_the_surface_degraded() -> None:
    runner = ScriptedRunner().then(Completed(0, envelope(handshake_data(2), version=2)))
    client = trusted(runner)
    assert not client.handshake().registered
    assert client.status(RUN_ID).verdict is Verdict.DEGRADED


def test_an_envelope_without_an_integer_version_is_a_contract_violation() -> None:
    for version in (None, "1", True, 1.0):
        reply = classify(Completed(0, envelope(run_row(), version=version)), V1)
        assert reply.verdict is Verdict.CONTRACT_VIOLATION and reply.data is None


def test_the_client_refuses_a_relative_li_path() -> None:
    with pytest.raises(ValueError, match="absolute"):
        ContractClient("li")


# --- C2: unknown fields are ignored ---------------------------------------------------------------


def test_unknown_fields_in_the_envelope_and_in_data_are_ignored() -> None:
    data = run_row("completed", True, "succeeded", colour="green", nested={"new": [1, 2]})
    reply = classify(Completed(0, envelope(data, trace_id="abc", extensions={"x": 1})), V1)
    assert reply.verdict is Verdict.OK and reply.data is not None
    assert run_view(reply.data).branch is Branch.SUCCEEDED


# --- C3: status is carried verbatim and never mapped ---------------------------------------------


def test_an_unseen_status_is_carried_verbatim() -> None:
    view = run_view(run_row("paused_by_operator", False, None))
    assert view.status == "paused_by_operator" and view.branch is Branch.NOT_ENDED


@pytest.mark.parametrize("status", ["completed", "succeeded", "ok", "done"])
def test_a_status_that_sounds_successful_does_not_make_a_success(status: str) -> None:
    view = run_view(run_row(status, True, "failed"))
    assert view.status == status and view.branch is Branch.FAILED


def test_completed_empty_is_the_failure_its_outcome_says() -> None:
    view = run_view(run_row("completed_empty", True, "failed", reason_code="no_artifacts"))
    assert view.branch is Branch.FAILED and view.status == "completed_empty"


# --- C4: outcome is branched totally ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("terminal", "outcome", "branch", "recognised"),
    [
        (False, None, Branch.NOT_ENDED, True),
        (True, "succeeded", Branch.SUCCEEDED, True),
        (True, "failed", Branch.FAILED, True),
        (True, "cancelled", Branch.CANCELLED, True),
        (True, "indeterminate", Branch.INDETERMINATE, True),
        (True, "partially_succeeded", Branch.INDETERMINATE, False),
        (True, None, Branch.INDETERMINATE, False),
        (True, 7, Branch.INDETERMINATE, False),
        (False, "succeeded", Branch.NOT_ENDED, False),
        (None, None, Branch.NOT_ENDED, True),
        ("true", "succeeded", Branch.NOT_ENDED, False),
    ],
)
def test_every_outcome_has_a_branch(
    terminal: object, outcome: object, branch: Branch, recognised: bool
) -> None:
    assert branch_outcome(terminal, outcome) == (branch, recognised)


def test_an_out_of_vocabulary_outcome_is_never_success_nor_failure() -> None:
    view = run_view(run_row("completed", True, "mostly_fine"))
    assert view.branch is Branch.INDETERMINATE and not view.outcome_recognised
    assert view.to_wire()["outcome"] == "mostly_fine"


def test_a_row_that_could_not_be_read_is_unobserved_not_running() -> None:
    row = run_row(error={"kind": "record_unusable", "message": "corrupt"}, terminal=None)
    view = run_view(row)
    assert view.branch is Branch.UNOBSERVED and "could not be observed" in view.to_wire()["advice"]


# --- C5: available: false is never "none" ---------------------------------------------------------


def test_an_unavailable_listing_is_unknown_and_never_none() -> None:
    reading = read_availability(
        {
            "available": False,
            "value": None,
            "reason_code": "unreadable",
            "detail": "permission denied",
        }
    )
    assert reading.evidence is Evidence.UNKNOWN
    assert "none" not in reading.describe().split() and "unreadable" in reading.describe()


def test_an_available_empty_listing_definitively_means_none() -> None:
    reading = read_availability(
        {"available": True, "value": [], "reason_code": None, "detail": None}
    )
    assert reading.evidence is Evidence.NONE and reading.describe() == "none"


def test_an_available_listing_with_entries_is_present() -> None:
    row = {"name": "response.md", "path": "/x/response.md", "size": 3, "sha256": "ab"}
    reading = read_availability(
        {"available": True, "value": [row], "reason_code": None, "detail": None}
    )
    assert reading.evidence is Evidence.PRESENT and reading.value == [row]


@pytest.mark.parametrize(
    "wrapper", [None, [], "none", {"value": []}, {"available": "yes", "value": []}]
)
def test_a_missing_or_malformed_wrapper_is_unknown(wrapper: object) -> None:
    assert read_availability(wrapper).evidence is Evidence.UNKNOWN


# --- D3: the envelope's shape --------------------------------------------------------------------


def test_ok_is_the_only_field_that_decides_success() -> None:
    reply = classify(Completed(0, refusal("conflict", "already ended")), V1)
    assert (
        reply.verdict is Verdict.REFUSED
        and reply.error is not None
        and reply.error["kind"] == "conflict"
    )
    assert reply.data is None


@pytest.mark.parametrize(
    "text",
    [
        envelope(run_row(), error={"kind": "internal", "message": "x", "detail": None}),
        envelope(None),
        envelope(None, ok=False),
        envelope(run_row(), ok="true"),
        envelope([1, 2]),
        refusal("teapot"),
        envelope(None, ok=False, error="nope"),
    ],
    ids=[
        "both-set",
        "both-null",
        "refusal-without-error",
        "ok-not-bool",
        "data-not-object",
        "unknown-error-kind",
        "error-not-object",
    ],
)
def test_a_malformed_envelope_is_a_contract_violation(text: str) -> None:
    reply = classify(Completed(0, text), V1)
    assert (
        reply.verdict is Verdict.CONTRACT_VIOLATION and reply.data is None and reply.error is None
    )


# --- C6: exit status before stdout -----------------------------------------------------------------


def test_exit_78_is_an_environment_fault_and_stdout_is_not_parsed() -> None:
    reply = classify(
        Completed(78, envelope(run_row("completed", True, "succeeded")), "no module"), V1
    )
    assert reply.verdict is Verdict.ENVIRONMENT_FAULT and reply.data is None
    assert reply.to_wire()["surface_fault"] is True and reply.stderr == "no module"


@pytest.mark.parametrize(
    ("done", "words"),
    [
        (Completed(0, "{not json"), "not one JSON value"),
        (Completed(0, ""), "empty"),
        (Completed(0, envelope(run_row()) + envelope(run_row())), "not one JSON value"),
        (Completed(0, "[1, 2]"), "not an object"),
        (Completed(0, '{"ok": true, "contract_version": NaN}'), "not one JSON value"),
        (Completed(-9, envelope(run_row())[:20]), "killed by signal 9"),
        (Completed(2, "usage: li ..."), "exited 2"),
        (Completed(None, launch_error="FileNotFoundError: no such file"), "could not be launched"),
        (Completed(None, '{"ok"', timed_out=True), "did not answer"),
    ],
    ids=[
        "malformed",
        "empty",
        "two-objects",
        "array",
        "nan",
        "killed",
        "usage",
        "launch",
        "timeout",
    ],
)
def test_an_exit_without_a_valid_envelope_is_a_transport_fault(done: Completed, words: str) -> None:
    reply = classify(done, V1)
    assert reply.verdict is Verdict.TRANSPORT_FAULT and reply.data is None
    assert words in (reply.diagnostic or "")


def test_a_valid_envelope_is_authoritative_whatever_the_exit_status() -> None:
    reply = classify(Completed(1, envelope(run_row())), V1)
    assert reply.verdict is Verdict.OK and reply.exit_code == 1


def test_a_transport_fault_does_not_change_trust() -> None:
    client = trusted(ScriptedRunner().then(Completed(-9, ""), ok(run_row())))
    assert client.status(RUN_ID).verdict is Verdict.TRANSPORT_FAULT
    assert client.status(RUN_ID).verdict is Verdict.OK


def test_a_killed_li_process_is_a_transport_fault() -> None:
    done = SubprocessRunner()(["/bin/sh", "-c", "printf '{\"ok\": tr'; kill -9 $$"], timeout=10)
    reply = classify(done, V1)
    assert done.exit_code == -9 and reply.verdict is Verdict.TRANSPORT_FAULT


def test_an_li_that_cannot_be_launched_is_a_transport_fault(tmp_path: object) -> None:
    done = SubprocessRunner()([f"{tmp_path}/no-such-li", "handshake"], timeout=10)
    assert classify(done, V1).verdict is Verdict.TRANSPORT_FAULT


def test_an_li_that_outlives_the_bound_is_a_transport_fault() -> None:
    done = SubprocessRunner()([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.3)
    assert done.timed_out and classify(done, V1).verdict is Verdict.TRANSPORT_FAULT


# --- C7: a notice is a prompt to read state ------------------------------------------------------


def test_a_notice_is_confirmed_by_reading_status_not_believed() -> None:
    runner = ScriptedRunner().then(ok(run_row("failed", True, "failed")))
    client = trusted(runner)
    notice = json.dumps({"run_id": RUN_ID, "status": "completed", "outcome": "succeeded"})
    reply = client.confirm_notice(notice)
    assert reply.data is not None and run_view(reply.data).branch is Branch.FAILED
    assert runner.calls[-1] == [LI, "job", "status", "--machine", "--", RUN_ID]


def test_a_notice_without_a_run_id_is_not_acted_on() -> None:
    runner = ScriptedRunner()
    client = trusted(runner)
    assert client.confirm_notice({"status": "completed"}).verdict is Verdict.CONTRACT_VIOLATION
    assert len(runner.calls) == 1


# --- C8: a policy for ids a bounded wait does not resolve ----------------------------------------


def stopped_answer(run_id: str = RUN_ID) -> Completed:
    row = run_row("exited", False, None, run_id=run_id, possibly_orphaned=True)
    return ok(wait_data([row], stopped=[run_id]))


def test_a_stopped_run_is_abandoned_after_the_policy_s_attempts_with_backoff() -> None:
    time = FakeTime()
    policy = UnresolvedPolicy(
        max_attempts=3, backoff_initial=1.0, backoff_factor=2.0, backoff_max=60
    )
    runner = ScriptedRunner().then(*[stopped_answer() for _ in range(3)])
    client = trusted(runner, policy, time)
    report = client.settle([RUN_ID], max_wait=10, poll_interval=0.5)
    assert report.abandoned == [RUN_ID] and report.settled
    assert time.slept == [1.0, 2.0]
    assert report.standings[RUN_ID].bucket == "stopped_without_end"
    assert report.runs[0].branch is Branch.NOT_ENDED


def test_an_unresolved_spawn_is_abandoned_the_same_way() -> None:
    row = run_row("running", False, None, spawn_state="preparing")
    answer = ok(wait_data([row], unresolved=[RUN_ID]))
    client = trusted(ScriptedRunner().then(answer, answer), UnresolvedPolicy(max_attempts=2))
    report = client.settle([RUN_ID], max_wait=5)
    assert report.abandoned == [RUN_ID] and report.standings[RUN_ID].bucket == "unresolved_spawn"


def test_a_pending_run_counts_an_attempt_only_when_the_window_closes() -> None:
    pending = ok(wait_data([run_row()], pending=[RUN_ID]))
    expired = ok(wait_data([run_row()], pending=[RUN_ID], timed_out=True))
    client = trusted(
        ScriptedRunner().then(pending, expired, expired), UnresolvedPolicy(max_attempts=2)
    )
    assert client.wait([RUN_ID], 0).standings[RUN_ID].attempts == 0
    assert client.wait([RUN_ID], 5).standings[RUN_ID].attempts == 1
    last = client.wait([RUN_ID], 5)
    assert last.abandoned == [RUN_ID]


def test_a_pending_run_is_observed_again_without_backoff() -> None:
    time = FakeTime()
    expired = ok(wait_data([run_row()], pending=[RUN_ID], timed_out=True))
    client = trusted(ScriptedRunner().then(expired, expired), time=time)
    client.wait([RUN_ID], 5)
    client.wait([RUN_ID], 5)
    assert time.slept == []


def test_a_run_that_ends_later_is_reported_terminal_not_abandoned() -> None:
    done = ok(wait_data([run_row("completed", True, "succeeded")]))
    client = trusted(
        ScriptedRunner().then(stopped_answer(), done), UnresolvedPolicy(max_attempts=3)
    )
    report = client.settle([RUN_ID], max_wait=5)
    assert report.abandoned == [] and report.runs[0].branch is Branch.SUCCEEDED


def test_settling_a_mixed_batch_keeps_what_each_round_learned() -> None:
    time = FakeTime()
    first = ok(
        wait_data(
            [run_row("completed", True, "succeeded"), run_row("exited", run_id=OTHER_ID)],
            stopped=[OTHER_ID],
        )
    )
    runner = ScriptedRunner().then(first, stopped_answer(OTHER_ID))
    client = trusted(runner, UnresolvedPolicy(max_attempts=2), time)
    report = client.settle([RUN_ID, OTHER_ID], max_wait=5)
    assert [v.branch for v in report.runs] == [Branch.SUCCEEDED, Branch.NOT_ENDED]
    assert report.abandoned == [OTHER_ID]
    assert runner.calls[-1][-1] == OTHER_ID and RUN_ID not in runner.calls[-1]


def test_an_unknown_id_is_a_per_id_error_not_a_retry() -> None:
    # Issue 27 changed what `settled` means, on purpose: it once counted an errored id as
    # finished, so a wait on an unknown id answered `settled: true` and an agent read "your run
    # ended". Settled now means every id is a run that ended (or was abandoned): an unknown id is an
    # error for that id, keeps the report unsettled, and is still not waited on again.
    row = run_row(run_id=OTHER_ID, error={"kind": "not_found", "message": "no such run"})
    runner = ScriptedRunner().then(ok(wait_data([row])))
    client = trusted(runner)
    report = client.settle([OTHER_ID], max_wait=5)
    assert (
        not report.settled and report.errors[OTHER_ID]["kind"] == "not_found" and report.abandoned == []
    )
    assert report.waiting_on == [] and len(runner.calls) == 2  # the handshake and one wait: no retry
    assert report.to_wire()["settled"] is False and report.to_wire()["waiting_on"] == []


def test_one_unknown_id_beside_an_ended_run_leaves_the_wait_unsettled() -> None:
    rows = [run_row("completed", True, "succeeded"),
            run_row(run_id=OTHER_ID, error={"kind": "not_found", "message": "no such run"})]
    report = trusted(ScriptedRunner().then(ok(wait_data(rows)))).wait([RUN_ID, OTHER_ID], 5)
    assert not report.settled and list(report.errors) == [OTHER_ID] and report.waiting_on == []
    ended = trusted(ScriptedRunner().then(ok(wait_data(rows[:1])))).wait([RUN_ID], 5)
    assert ended.settled and ended.errors == {}


def test_a_surface_fault_stops_settling_and_is_not_an_outcome() -> None:
    client = trusted(ScriptedRunner().then(stopped_answer(), Completed(78, "")))
    report = client.settle([RUN_ID], max_wait=5)
    assert report.reply.verdict is Verdict.ENVIRONMENT_FAULT and not report.settled


def test_backoff_is_capped_by_the_wait_window() -> None:
    time = FakeTime()
    client = trusted(
        ScriptedRunner().then(stopped_answer(), stopped_answer()),
        UnresolvedPolicy(backoff_initial=50),
        time,
    )
    client.wait([RUN_ID], 5)
    client.wait([RUN_ID], 0.5)
    assert time.slept == [0.5]


# --- the argv the client sends --------------------------------------------------------------------


def test_submit_runs_li_by_absolute_path_with_the_prompt_on_stdin_never_on_argv() -> None:
    runner = ScriptedRunner().then(
        ok(
            {
                "run_id": RUN_ID,
                "pid": 1,
                "status": "running",
                "terminal": False,
                "outcome": None,
                "log": "/x",
            }
        )
    )
    client = trusted(runner)
    reply = client.submit_agent("-rf echo hi", "sh", label="demo", timeout=5)
    assert reply.ok
    assert runner.calls[-1] == [
        LI,
        "agent",
        "--machine",
        "--detach",
        "--label=demo",
        "--timeout=5",
        "--prompt-file",
        "-",
        "--",
        "sh",
    ]
    assert runner.stdins[-1] == "-rf echo hi"


def test_submit_agent_passes_permission_mode_provider_args_and_notify_as_the_cli_spells_them() -> None:
    runner = ScriptedRunner().then(ok(run_row()))
    client = trusted(runner)
    client.submit_agent("hi", "claude", permission_mode="edits", provider_args=["--max-turns", "3"],
                        notify="notify-send {run_id}")
    assert runner.calls[-1] == [
        LI, "agent", "--machine", "--detach", "--permission-mode=edits", "--notify=notify-send {run_id}",
        "--provider-arg=--max-turns", "--provider-arg=3", "--prompt-file", "-", "--", "claude",
    ]


def test_an_artifact_not_served_says_why_with_a_refusal_kind(tmp_path: object) -> None:
    from lionrun.adapters.contract_client.artifacts import artifact_of

    listed = {"available": True, "value": [{"name": "a.md", "path": "/nowhere/a.md", "type": "file",
                                            "sha256": "00"}], "reason_code": None, "detail": None}
    missing = artifact_of(Reply(Verdict.OK, {"artifacts": listed}), "b.md")
    assert missing["text"] is None and missing["kind"] == "not_found" and "a.md" in missing["says"]
    unreadable = artifact_of(Reply(Verdict.OK, {"artifacts": listed}), "a.md")
    assert unreadable["text"] is None and unreadable["kind"] == "unavailable"
    unknown = {"available": False, "value": None, "reason_code": "unreadable", "detail": "EACCES"}
    unlisted = artifact_of(Reply(Verdict.OK, {"artifacts": unknown}), "a.md")
    assert unlisted["kind"] == "unavailable" and "unknown" in unlisted["says"]


def test_every_prompt_travels_on_stdin_for_agents_and_fanouts() -> None:
    runner = ScriptedRunner().then(ok(run_row())).then(ok(run_row())).then(ok(run_row()))
    client = trusted(runner)
    for submit, prompt in ((client.submit_agent, "short secret"), (client.submit_agent, "x" * 200_000),
                           (client.submit_fanout, "fanout secret")):
        submit(prompt, "sh")
        assert "--prompt-file" in runner.calls[-1] and runner.stdins[-1] == prompt
        assert not any(prompt in word for word in runner.calls[-1])


def test_wait_and_fanout_pass_their_bounds_and_lists() -> None:
    runner = ScriptedRunner().then(ok(wait_data([])), ok(run_row()))
    client = trusted(runner)
    client.wait([RUN_ID, OTHER_ID], 2.5, 0.1)
    client.submit_fanout("q", legs=2, models=["claude", "codex"])
    assert runner.calls[1] == [
        LI,
        "job",
        "wait",
        "--machine",
        "--max-wait=2.5",
        "--poll-interval=0.1",
        "--",
        RUN_ID,
        OTHER_ID,
    ]
    assert runner.calls[2] == [
        LI,
        "orchestrate",
        "fanout",
        "--machine",
        "--detach",
        "--legs=2",
        "--models=claude,codex",
        "--prompt-file",
        "-",
        "--",
    ]
    assert runner.stdins[2] == "q"


# --- review findings: nothing a caller or li sends makes the client raise ------------------------


@pytest.mark.parametrize(
    "notice",
    ["{not json", "", "[1, 2]", '"a string"', '{"run_id": NaN}', "[" * 100_000],
    ids=["malformed", "empty", "array", "string", "nan", "too-deep"],
)
def test_a_malformed_notice_is_a_contract_violation_and_reads_nothing(notice: str) -> None:
    runner = ScriptedRunner()
    client = trusted(runner)
    reply = client.confirm_notice(notice)
    assert reply.verdict is Verdict.CONTRACT_VIOLATION and reply.data is None
    assert "notice" in (reply.diagnostic or "") and len(runner.calls) == 1


def test_stdout_nested_too_deeply_is_a_transport_fault_not_an_exception() -> None:
    reply = classify(Completed(0, "[" * 100_000), V1)
    assert reply.verdict is Verdict.TRANSPORT_FAULT and "not one JSON value" in (
        reply.diagnostic or ""
    )


HUGE = 10**5000  # more digits than Python will print by default


@pytest.mark.parametrize(
    ("value", "word"),
    [(math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf"), (HUGE, "inf"), (-HUGE, "-inf")],
    ids=["nan", "inf", "-inf", "huge", "-huge"],
)
def test_a_non_finite_or_huge_option_goes_to_li_to_judge_and_never_raises(
    value: float, word: str
) -> None:
    runner = ScriptedRunner().then(Completed(0, refusal("invalid_input", "bad --tail-chars")))
    client = trusted(runner)
    reply = client.output(RUN_ID, tail_chars=value)  # type: ignore[arg-type]
    assert reply.verdict is Verdict.REFUSED
    assert f"--tail-chars={word}" in runner.calls[-1]


def test_a_huge_member_of_a_list_option_is_sent_as_infinity() -> None:
    runner = ScriptedRunner().then(ok(run_row()))
    trusted(runner).submit_fanout("q", models=["claude", HUGE])  # type: ignore[list-item]
    assert "--models=claude,inf" in runner.calls[-1]


@pytest.mark.parametrize(
    ("max_wait", "window"),
    [(math.nan, 0.0), (-5.0, 0.0), (math.inf, 600.0), (1e308, 600.0), (HUGE, 600.0), (5.0, 5.0)],
    ids=["nan", "negative", "inf", "1e308", "huge-int", "ordinary"],
)
def test_the_client_bounds_its_own_wait_as_li_clamps_the_window(
    max_wait: float, window: float
) -> None:
    time = FakeTime()
    runner = ScriptedRunner().then(stopped_answer(), stopped_answer())
    client = trusted(runner, UnresolvedPolicy(backoff_initial=1000, backoff_max=1000), time)
    client.wait([RUN_ID], max_wait)
    client.wait([RUN_ID], max_wait)
    assert runner.timeouts[-1] == window + client.call_timeout
    assert time.slept == ([window] if window else [])


def test_a_runner_given_an_infinite_bound_reports_a_launch_fault_not_an_exception() -> None:
    done = SubprocessRunner()([sys.executable, "-c", "pass"], timeout=math.inf)
    assert classify(done, V1).verdict is Verdict.TRANSPORT_FAULT


# --- review findings: the unresolved ledger stays bounded in a long-lived server -----------------


def test_a_run_seen_ended_by_status_leaves_the_ledger() -> None:
    ended = ok(run_row("completed", True, "succeeded"))
    client = trusted(ScriptedRunner().then(stopped_answer(), ended))
    client.wait([RUN_ID], 0)
    assert len(client.ledger) == 1
    client.status(RUN_ID)
    assert len(client.ledger) == 0


def test_a_run_li_no_longer_knows_leaves_the_ledger() -> None:
    gone = Completed(0, refusal("not_found", "no run with that id"))
    client = trusted(ScriptedRunner().then(stopped_answer(), gone))
    client.wait([RUN_ID], 0)
    client.status(RUN_ID)
    assert len(client.ledger) == 0


def test_a_run_that_ends_leaves_the_ledger_through_wait() -> None:
    done = ok(wait_data([run_row("completed", True, "succeeded")]))
    client = trusted(ScriptedRunner().then(stopped_answer(), done))
    client.wait([RUN_ID], 0)
    client.wait([RUN_ID], 0)
    assert len(client.ledger) == 0


def test_the_ledger_never_holds_more_than_its_capacity() -> None:
    ledger = UnresolvedLedger(UnresolvedPolicy(), FakeTime().clock, capacity=3)
    for n in range(50):
        ledger.observe(f"20260725T175010-{n:06x}", "stopped_without_end", False)
    assert len(ledger) == 3


def test_a_full_ledger_forgets_an_abandoned_id_before_one_still_being_counted() -> None:
    ledger = UnresolvedLedger(UnresolvedPolicy(max_attempts=2), FakeTime().clock, capacity=2)
    ledger.observe(OTHER_ID, "stopped_without_end", False)  # oldest, still being counted
    ledger.observe(RUN_ID, "stopped_without_end", False)
    ledger.observe(RUN_ID, "stopped_without_end", False)  # abandoned
    ledger.observe("20260725T175012-0d0e0f", "stopped_without_end", False)
    assert ledger.abandoned() == [] and len(ledger) == 2
    assert ledger.observe(OTHER_ID, "stopped_without_end", False).abandoned


# --- review findings: the surface state is one value, changed under a lock -----------------------


def test_parallel_calls_never_see_a_half_changed_surface() -> None:
    """Worker threads degrade and re-trust the surface while others read it through the gate."""

    class Flipping:
        def __call__(
            self, argv: Sequence[str], timeout: float, stdin: str | None = None
        ) -> Completed:
            if argv[1] == "handshake":
                return ok(handshake_data())
            return Completed(0, envelope(run_row(), version=2))

    client = ContractClient(LI, runner=Flipping())
    seen: list[str] = []
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            client.handshake()
            client.status(RUN_ID)

    def read() -> None:
        for _ in range(20_000):
            said = (client._gate() or Reply(Verdict.OK)).diagnostic or ""
            if "trusted" in said or "None" in said:  # a state read apart from its reason
                seen.append(said)

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=flip), threading.Thread(target=read)]
        for worker in workers:
            worker.start()
        workers[1].join()
        stop.set()
        workers[0].join()
    finally:
        sys.setswitchinterval(previous)
    assert seen == []


# --- review finding: the envelope's shape is judged by the domain's own rule ---------------------


@pytest.mark.parametrize(
    "body",
    [
        {"ok": True, "contract_version": 1, "data": {}, "error": None},
        {"ok": False, "contract_version": 1, "data": None, "error": {"kind": "internal"}},
        {"ok": True, "contract_version": 1, "data": None, "error": None},
        {"ok": True, "contract_version": 1, "data": None, "error": {"kind": "internal"}},
        {"ok": False, "contract_version": 1, "data": {}, "error": None},
        {"ok": False, "contract_version": 1, "data": None, "error": {"kind": "teapot"}},
        {"ok": 1, "contract_version": 1, "data": {}, "error": None},
    ],
)
def test_the_client_and_the_domain_agree_on_which_envelopes_are_well_formed(
    body: dict[str, object],
) -> None:
    reply = classify(Completed(0, json.dumps(body)), V1)
    assert (reply.verdict is not Verdict.CONTRACT_VIOLATION) == is_well_formed(body)
