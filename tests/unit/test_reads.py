"""The read use cases on both worlds: status, output and list answer from the one authority (D4, D6, D7)."""

from __future__ import annotations

import pytest

from lionrun.application.reads import RunReads
from lionrun.domain.contract import ContractError
from lionrun.domain.run import FAILED, Run
from tests.builders import (
    RunState,
    a_run,
    corrupt,
    delivered,
    end,
    manifest_with,
    raw_record,
    scripted_incarnation,
    write_file,
)

STATUS_KEYS = {"run_id", "kind", "label", "status", "terminal", "outcome", "reason_code", "alive", "pid",
               "spawn_state", "submitted_at", "finished_at", "possibly_orphaned", "age_seconds", "delivery",
               "manifest", "usage", "agents", "model", "exit_code", "started_at", "retry_of", "host",
               "job", "queue", "queue_position", "reap_withheld", "runner_end", "cost_usd", "retry_at", "session_id",
               "confinement", "confinement_detail", "processes", "processes_detail", "finding",
               "worktree", "changes", "continues", "chain", "leg_worktrees", "parent",
               "after", "failed_dependency", "priority", "evidence_spool",
               "budget", "attempts", "approvals"}
AV_KEYS = {"available", "value", "reason_code", "detail"}


def reads(world) -> RunReads:
    return world.container.reads.reads()


def live_run(world, pid: int = 4242, **fields):
    world.prober.start(pid, create_time=1000.0)
    return a_run(world.store, world.clock.now(), RunState.STARTED, pid=pid,
                   incarnation=scripted_incarnation(world.prober, pid), **fields)


def test_a_status_answer_has_exactly_the_wire_fields(world) -> None:
    run = live_run(world, label="nightly")
    data = reads(world).status(run.run_id)
    assert set(data) == STATUS_KEYS
    assert {k: data[k] for k in ("status", "terminal", "outcome", "alive", "pid", "label")} == {
        "status": "running", "terminal": False, "outcome": None, "alive": True, "pid": 4242, "label": "nightly"}
    for key in ("delivery", "manifest", "usage", "agents"):
        assert set(data[key]) == AV_KEYS


def test_status_is_reported_verbatim_even_when_nobody_knows_it(world) -> None:
    run = live_run(world)
    end(world.store, run.run_id, "reticulated", None, now=world.clock.now())
    data = reads(world).status(run.run_id)
    assert (data["status"], data["terminal"], data["outcome"]) == ("reticulated", True, "indeterminate")


def test_completed_empty_is_terminal_and_failed(world) -> None:
    run = live_run(world)
    end(world.store, run.run_id, "completed_empty", "failed", "no_artifacts", now=world.clock.now())
    data = reads(world).status(run.run_id)
    assert (data["terminal"], data["outcome"], data["reason_code"]) == (True, "failed", "no_artifacts")


def test_a_recorded_end_is_terminal_even_while_the_process_lives(world) -> None:
    run = live_run(world)
    end(world.store, run.run_id, "completed", "succeeded", now=world.clock.now())
    data = reads(world).status(run.run_id)
    assert (data["terminal"], data["outcome"], data["alive"]) == (True, "succeeded", True)


def test_a_completed_run_whose_pid_was_reused_stays_succeeded_and_is_not_alive(world) -> None:
    run = live_run(world)
    end(world.store, run.run_id, "completed", "succeeded", now=world.clock.now())
    world.prober.start(4242, create_time=5000.0)  # another process now holds the pid
    data = reads(world).status(run.run_id)
    assert (data["status"], data["terminal"], data["outcome"], data["alive"]) == (
        "completed", True, "succeeded", False)


def test_a_status_name_alone_never_makes_a_run_terminal(world) -> None:
    run = live_run(world, status="completed")
    data = reads(world).status(run.run_id)
    assert (data["status"], data["terminal"], data["outcome"]) == ("completed", False, None)


def test_a_started_run_gone_with_an_inconclusive_finding_reads_exited_and_possibly_orphaned(world) -> None:
    run = a_run(world.store, world.clock.now(), RunState.STARTED, pid=4343)  # a pid but no recorded incarnation
    data = reads(world).status(run.run_id)
    assert (data["status"], data["terminal"], data["outcome"], data["alive"], data["possibly_orphaned"]) == (
        "exited", False, None, False, True)
    assert reads(world).status(run.run_id)["terminal"] is False  # and it stays that way


def test_a_conclusively_gone_started_run_is_reaped_by_the_first_read(world) -> None:
    run = live_run(world)
    world.prober.kill(4242)
    data = reads(world).status(run.run_id)
    assert (data["status"], data["terminal"], data["outcome"]) == ("exited", True, "indeterminate")
    assert data["reason_code"] == "process_gone_without_outcome"


def test_a_preparing_record_reports_its_age_and_is_flagged_only_past_the_threshold(world) -> None:
    run = a_run(world.store, world.clock.now(), RunState.PREPARING)
    world.clock.advance(30)
    young = reads(world).status(run.run_id)
    assert (young["age_seconds"], young["possibly_orphaned"], young["terminal"]) == (30.0, False, False)
    world.clock.advance(3600)
    old = reads(world).status(run.run_id)
    assert (old["possibly_orphaned"], old["terminal"], old["outcome"], old["status"]) == (
        True, False, None, "running")


def test_a_producer_written_spawn_failure_is_terminal_and_failed(world) -> None:
    run = a_run(world.store, world.clock.now(), RunState.STARTED, spawn_state=FAILED, status="failed", outcome="failed",
                  reason_code="spawn_failed")
    data = reads(world).status(run.run_id)
    assert (data["terminal"], data["outcome"], data["pid"]) == (True, "failed", None)


@pytest.mark.parametrize("bad", ["../../etc/passwd", "", "20260725T175010-97F334", "x" * 300, "20260725T175010"])
def test_an_id_not_of_the_run_id_form_is_invalid_input(world, bad: str) -> None:
    for ask in (lambda: reads(world).status(bad), lambda: reads(world).output(bad),
                lambda: world.container.reads.killer().kill(bad)):
        with pytest.raises(ContractError) as refused:
            ask()
        assert refused.value.kind.value == "invalid_input"


def test_a_well_formed_id_with_no_run_is_not_found(world) -> None:
    for ask in (reads(world).status, reads(world).output, world.container.reads.killer().kill):
        with pytest.raises(ContractError) as refused:
            ask("20260101T000000-abcdef")
        assert refused.value.kind.value == "not_found"


def test_a_corrupt_record_is_unavailable_with_a_reason_and_is_never_rewritten(world) -> None:
    run = live_run(world)
    corrupt(world, run.run_id)
    for ask in (reads(world).status, reads(world).output, world.container.reads.killer().kill):
        with pytest.raises(ContractError) as refused:
            ask(run.run_id)
        assert refused.value.kind.value == "unavailable"
        assert refused.value.detail["reason_code"] == "malformed"
    reads(world).listing()
    assert raw_record(world, run.run_id) == "{not json"


def test_a_record_of_an_unknown_schema_is_unavailable(world) -> None:
    run = live_run(world)
    corrupt(world, run.run_id, '{"schema_version": 99, "run_id": "x"}')
    with pytest.raises(ContractError) as refused:
        reads(world).status(run.run_id)
    assert refused.value.detail["reason_code"] == "unknown_schema"


# --- delivery and usage under D7 ------------------------------------------------------------------


def test_no_notice_configured_is_an_available_fact_not_a_failure(world) -> None:
    run = live_run(world)
    assert reads(world).status(run.run_id)["delivery"] == {
        "available": True,
        "value": {"attempted": False, "ok": None, "exit_code": None, "error": None, "failure_class": None},
        "reason_code": None, "detail": None}


def test_a_recorded_delivery_is_carried_as_recorded(world) -> None:
    run = live_run(world, notify=["notify-me", "{run_id}"], delivery=delivered(False, "nonzero_exit"))
    delivery = reads(world).status(run.run_id)["delivery"]
    assert delivery["available"] is True
    assert delivery["value"]["attempted"] is True and delivery["value"]["ok"] is False
    assert delivery["value"]["failure_class"] == "nonzero_exit"


def test_a_configured_notice_without_a_recorded_attempt_is_never_attempted_false(world) -> None:
    run = live_run(world, notify=["notify-me"])
    before = reads(world).status(run.run_id)["delivery"]
    assert (before["available"], before["reason_code"]) == (False, "not_yet_written")
    end(world.store, run.run_id, "completed", "succeeded", now=world.clock.now())
    after = reads(world).status(run.run_id)["delivery"]
    assert (after["available"], after["reason_code"]) == (False, "not_recorded")


def test_usage_is_carried_as_the_manifest_recorded_it(world) -> None:
    run = live_run(world)
    meter = {"wall_seconds": 12.5, "input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.0123}
    manifest_with(world.store, run.run_id, {"legs": [], "usage": meter})
    assert reads(world).status(run.run_id)["usage"] == {
        "available": True, "value": meter, "reason_code": None, "detail": None}


@pytest.mark.parametrize(("manifest", "reason"), [
    (None, "missing"), ("{broken", "malformed"), ({"legs": []}, "not_recorded"), ({"usage": 0}, "malformed"),
])
def test_an_absent_or_unreadable_meter_is_unavailable_never_zero(world, manifest, reason: str) -> None:
    run = live_run(world)
    if manifest is not None:
        text = manifest if isinstance(manifest, str) else __import__("json").dumps(manifest)
        write_file(world.store, run.run_id, "manifest.json", text)
    usage = reads(world).status(run.run_id)["usage"]
    assert (usage["available"], usage["value"], usage["reason_code"]) == (False, None, reason)


# --- output ----------------------------------------------------------------------------------------


def test_output_carries_console_artifacts_and_manifest_under_the_wrapper(world) -> None:
    run = live_run(world)
    write_file(world.store, run.run_id, "console.log", "line one\nline two\n")
    manifest_with(world.store, run.run_id, {"answer": "response.md"})
    data = reads(world).output(run.run_id, 5)
    assert data["console"] == {"available": True, "value": " two\n", "reason_code": None, "detail": None,
                               "truncated": True}
    assert data["manifest"]["value"] == {"answer": "response.md"}
    assert set(data["artifacts"]) == AV_KEYS


def test_a_console_that_is_not_there_is_unavailable_not_empty(world) -> None:
    run = live_run(world)
    console = reads(world).output(run.run_id)["console"]
    assert (console["available"], console["value"], console["reason_code"], console["truncated"]) == (
        False, None, "missing", None)


def test_an_empty_console_is_available_empty_and_whole(world) -> None:
    run = live_run(world)
    write_file(world.store, run.run_id, "console.log", "")
    console = reads(world).output(run.run_id)["console"]
    assert (console["available"], console["value"], console["truncated"]) == (True, "", False)


# --- list ------------------------------------------------------------------------------------------


def test_list_is_newest_first_bounded_and_says_when_truncated(world) -> None:
    ids = []
    for _ in range(5):
        ids.append(live_run(world).run_id)
        world.clock.advance(1)
    page = reads(world).listing(limit=3)
    assert [r["run_id"] for r in page["runs"]] == ids[::-1][:3]
    assert (page["truncated"], page["limit"]) == (True, 3)
    whole = reads(world).listing(limit=5)
    assert (len(whole["runs"]), whole["truncated"]) == (5, False)


def test_every_list_row_carries_status_terminal_and_outcome(world) -> None:
    run = live_run(world)
    end(world.store, run.run_id, "timed_out", "failed", now=world.clock.now())
    row = reads(world).listing()["runs"][0]
    assert set(row) == {"run_id", "kind", "label", "status", "terminal", "outcome", "reason_code",
                        "possibly_orphaned", "spawn_state", "submitted_at", "host", "queue", "reap_withheld", "runner_end",
                        "error",
                        "model", "exit_code", "started_at", "finished_at", "command", "cost_usd", "retry_at", "session_id", "changes",
                        "leg_worktrees", "priority"}
    assert (row["status"], row["terminal"], row["outcome"], row["error"]) == ("timed_out", True, "failed", None)


def test_an_unreadable_record_is_a_row_that_says_so_and_the_listing_goes_on(world) -> None:
    good = live_run(world)
    world.clock.advance(1)
    bad = live_run(world, pid=4343)
    corrupt(world, bad.run_id)
    rows = reads(world).listing()["runs"]
    assert [r["run_id"] for r in rows] == [bad.run_id, good.run_id]
    assert rows[0]["error"] == {"kind": "record_unusable", "reason_code": "malformed", "message": rows[0]["error"]["message"]}
    assert (rows[0]["status"], rows[0]["terminal"], rows[0]["outcome"]) == (None, None, None)
    assert rows[1]["status"] == "running"


def test_list_filters_on_the_verbatim_derived_status(world) -> None:
    a = live_run(world)
    end(world.store, a.run_id, "completed", "succeeded", now=world.clock.now())
    world.clock.advance(1)
    live_run(world, pid=4343)
    world.clock.advance(1)
    orphan = a_run(world.store, world.clock.now(), RunState.STARTED, pid=4444)  # inconclusive: reads exited
    assert [r["run_id"] for r in reads(world).listing(status="completed")["runs"]] == [a.run_id]
    assert [r["run_id"] for r in reads(world).listing(status="exited")["runs"]] == [orphan.run_id]
    assert reads(world).listing(status="nothing-like-this")["runs"] == []


def test_a_reservation_without_a_record_is_not_a_run(world) -> None:
    run = live_run(world)
    world.clock.advance(1)
    world.store.reserve(world.clock.now())  # a submit in flight: folder, no record yet
    assert [r["run_id"] for r in reads(world).listing()["runs"]] == [run.run_id]


def test_a_listing_of_nothing_is_an_empty_answer(world) -> None:
    assert reads(world).listing() == {"runs": [], "truncated": False, "limit": 50}


def test_the_runners_metering_block_is_the_usage_and_keeps_its_unreported_parts_unavailable(world) -> None:
    from lionrun.application.work import build_manifest

    run = live_run(world)
    manifest = build_manifest(run.run_id, None, [], 1.25)
    manifest_with(world.store, run.run_id, manifest)
    usage = reads(world).status(run.run_id)["usage"]
    assert usage["available"] is True
    assert usage["value"]["wall_seconds"] == 1.25
    assert usage["value"]["tokens"]["available"] is False  # never a zero


@pytest.mark.parametrize(("raw", "expected"), [(None, 50), ("1", 1), (" 20 ", 20), ("1000", 1000),
                                               ("1001", 1000), ("9" * 40, 1000)])
def test_a_limit_is_a_positive_integer_and_a_large_one_is_clamped(raw, expected: int) -> None:
    from lionrun.application.reads import LIMIT_DEFAULT, LIMIT_MAX, bounded_count

    assert bounded_count(raw, "--limit", LIMIT_DEFAULT, LIMIT_MAX, minimum=1) == expected


@pytest.mark.parametrize("raw", ["0", "-1", "1.5", "1e3", "ten", "", "٣", "0x10", "nan"])
def test_anything_else_as_a_limit_is_invalid_input(raw: str) -> None:
    from lionrun.application.reads import bounded_count

    with pytest.raises(ContractError) as refused:
        bounded_count(raw, "--limit", 50, 1000, minimum=1)
    assert refused.value.kind.value == "invalid_input"


@pytest.mark.parametrize(("status", "code"), [("completed", 0), ("failed", 1), ("completed_empty", 1),
                                              ("timed_out", 124), ("cancelled", 143), ("exited", 1),
                                              ("aborted", 130), ("something-new", 1)])
def test_an_ended_runs_human_exit_code_follows_its_status(status: str, code: int) -> None:
    from lionrun.domain.lifecycle import exit_code_of

    assert exit_code_of(status) == code


@pytest.mark.parametrize("digits", [5000, 50_000])
def test_a_count_with_thousands_of_digits_clamps_instead_of_failing(digits: int) -> None:
    from lionrun.application.reads import bounded_count

    assert bounded_count("9" * digits, "--limit", 50, 1000, minimum=1) == 1000
    assert bounded_count("0" * digits + "7", "--limit", 50, 1000, minimum=1) == 7


@pytest.mark.parametrize(("request_json", "available", "value_or_reason"), [
    (None, False, "missing"),
    ('{"kind": "agent", "legs": []}', True, {}),
    ('{"agents": {"codex": {"permission_mode": "edits", "provider_args": ["-c", "a=b"]}}}', True,
     {"codex": {"permission_mode": "edits", "provider_args": ["-c", "a=b"]}}),
    ('{"agents": {"codex": {"permission_mode": "root"}}}', False, "malformed"),
    ('{"agents": ["codex"]}', False, "malformed"),
    ("not json", False, "malformed"),
])
def test_status_reports_each_agent_clis_options_from_the_request_or_why_it_cannot(
        world, request_json: str | None, available: bool, value_or_reason: object) -> None:
    run = live_run(world)
    if request_json is not None:
        world.store.write_text(run.run_id, "request.json", request_json)
    agents = reads(world).status(run.run_id)["agents"]
    assert agents["available"] is available
    assert (agents["value"] if available else agents["reason_code"]) == value_or_reason


def test_every_status_bearing_answer_names_the_host_the_run_belongs_to(world) -> None:
    """A run belongs to the host that submitted it (a shared store holds many hosts' runs)."""
    run = world.store.create(Run(run_id=world.store.reserve(world.clock.now()), kind="agent", status="running",
                                 submitted_at=world.clock.now().isoformat(), spawn_state="preparing",
                                 host_id="host-b"))
    assert reads(world).status(run.run_id)["host"] == "host-b"
    assert [r["host"] for r in reads(world).listing()["runs"]] == ["host-b"]
