"""The page's board (`li serve`): the grouping rule (domain/board.py) and the Board service on both worlds."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lionrun.application.board import Board, options
from lionrun.domain.board import GROUPS, elapsed_words, group_of, matches
from lionrun.domain.partition import PENDING, STOPPED_WITHOUT_END, TERMINAL, UNRESOLVED_SPAWN
from lionrun.entrypoints.serve import page
from tests.builders import RunState, a_run, corrupt, end, scripted_incarnation, write_file

# The grouping rule


def test_a_success_or_a_persons_cancel_is_done_any_other_end_needs_the_person() -> None:
    assert group_of("completed", True, "succeeded", TERMINAL) == "done"
    assert group_of("cancelled", True, "cancelled", TERMINAL) == "done"
    for status, outcome in (("failed", "failed"), ("timed_out", "failed"), ("unknown", "indeterminate")):
        assert group_of(status, True, outcome, TERMINAL) == "needs_you"


def test_a_run_stopped_without_an_end_or_an_aged_spawn_needs_the_person() -> None:
    assert group_of("running", False, None, STOPPED_WITHOUT_END) == "needs_you"
    assert group_of("running", False, None, UNRESOLVED_SPAWN) == "needs_you"
    assert group_of(None, None, None, None) == "needs_you"  # a record that could not be read


def test_running_is_working_and_queued_is_queued_unless_its_queue_is_paused() -> None:
    assert group_of("running", False, None, PENDING) == "working"
    assert group_of("queued", False, None, PENDING) == "queued"
    assert group_of("queued", False, None, PENDING, queue_paused=True) == "needs_you"


def test_later_steering_states_are_grouped_by_their_shape_not_a_list() -> None:
    assert group_of("waiting_approval", False, None, PENDING) == "needs_you"
    assert group_of("waiting_input", False, None, PENDING) == "needs_you"
    assert group_of("waiting", False, None, PENDING) == "queued"  # waits on other runs
    assert group_of("waiting", False, None, PENDING, queue_paused=True) == "needs_you"
    assert group_of("starting", False, None, PENDING) == "working"  # any other pending status


@given(st.text(max_size=30), st.booleans(), st.sampled_from([None, "succeeded", "failed", "cancelled",
                                                             "indeterminate"]),
       st.sampled_from([None, TERMINAL, PENDING, STOPPED_WITHOUT_END, UNRESOLVED_SPAWN]), st.booleans())
def test_every_run_lands_in_exactly_one_known_group(status: str, terminal: bool, outcome: str | None,
                                                    bucket: str | None, paused: bool) -> None:
    assert group_of(status, terminal, outcome, bucket, paused) in GROUPS


def test_filters_match_exactly_and_an_empty_one_matches_all() -> None:
    row = {"label": "a", "queue": "q", "host": "h", "model": "claude"}
    assert matches(row, {"label": "a", "queue": "", "host": "h"})
    assert not matches(row, {"label": "b"})
    assert matches(row, {"other": "x"})  # not a filter


def test_elapsed_reads_as_a_person_says_it() -> None:
    assert [elapsed_words(s) for s in (5, 65, 3725, None)] == ["5s", "1m 05s", "1h 02m", ""]


# The Board service, on the memory and the filesystem stores


def board(world: Any) -> Board:
    reads = world.container.reads.reads()
    return Board(reads, world.store, world.container.core.queues, world.clock)


def live(world: Any, **fields: Any) -> Any:
    pid = 4000 + len(list(world.store.run_ids()))
    world.prober.start(pid, create_time=1000.0)
    return a_run(world.store, world.clock.now(), RunState.STARTED, pid=pid,
                 incarnation=scripted_incarnation(world.prober, pid), **fields)


def test_the_board_groups_every_run_and_reports_only_what_changed(world: Any) -> None:
    going = live(world, label="build")
    done = a_run(world.store, world.clock.now(), RunState.COMPLETED, prober=world.prober)
    failed = a_run(world.store, world.clock.now(), RunState.FAILED, prober=world.prober)
    shown = board(world)
    first = shown.refresh()
    assert {e.run_id: e.group for e in first.changed} == {going.run_id: "working", done.run_id: "done",
                                                          failed.run_id: "needs_you"}
    assert shown.refresh().changed == ()  # nothing changed: nothing reported
    end(world.store, going.run_id)
    after = shown.refresh()
    assert [(e.run_id, e.group) for e in after.changed] == [(going.run_id, "done")]
    assert [e.run_id for e in shown.ordered()] == sorted([going.run_id, done.run_id, failed.run_id], reverse=True)


def test_an_ended_run_is_not_read_again_and_a_removed_one_leaves(world: Any) -> None:
    done = a_run(world.store, world.clock.now(), RunState.COMPLETED, prober=world.prober)
    shown = board(world)
    shown.refresh()
    corrupt(world, done.run_id)  # were it read again, it would now be "could not read"
    assert shown.refresh().changed == ()
    world.store.remove(done.run_id)
    assert shown.refresh().removed == (done.run_id,)
    assert shown.ordered() == []


def test_an_unreadable_record_needs_the_person_and_says_so(world: Any) -> None:
    run = a_run(world.store, world.clock.now(), RunState.COMPLETED, prober=world.prober)
    corrupt(world, run.run_id)
    shown = board(world)
    (entry,) = shown.refresh().changed
    assert entry.group == "needs_you" and entry.row["error"] is not None
    assert "could not read" in page.row_html(entry)


def test_a_working_runs_last_console_line_is_shown_as_text(world: Any) -> None:
    going = live(world)
    write_file(world.store, going.run_id, "console.log", "first\n<script>alert(1)</script>\n\n")
    shown = board(world)
    (entry,) = shown.refresh().changed
    assert entry.last_line == "<script>alert(1)</script>"
    html = page.row_html(entry)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_filters_offer_the_values_the_board_holds(world: Any) -> None:
    live(world, label="b")
    a_run(world.store, world.clock.now(), RunState.COMPLETED, prober=world.prober, label="a")
    shown = board(world)
    shown.refresh()
    assert options(shown.ordered())["label"] == ["a", "b"]


# The page's HTML


def test_an_availability_that_could_not_be_read_says_so_never_none() -> None:
    unread = {"available": False, "value": None, "reason_code": "unreadable", "detail": "EACCES"}
    assert page.availability(unread) == '<span class="unread">could not read: unreadable — EACCES</span>'
    meter = {"available": True, "value": {"tokens": {"available": False, "value": None, "reason_code": "not_reported",
                                                     "detail": None}, "wall_seconds": 1.5}}
    html = page.availability(meter)
    assert "could not read: not_reported" in html and "1.5" in html and "none" not in html.lower()


def test_every_value_a_run_wrote_is_escaped_on_its_page() -> None:
    status = {"run_id": "20260101T000000-abcdef", "status": "<b>x</b>", "terminal": True, "label": "<script>",
              "session_id": "s", "manifest": None, "usage": None, "delivery": None, "agents": None,
              "retry_of": None, "chain": None}
    output = {"console": {"available": True, "value": "", "truncated": False},
              "artifacts": {"available": True, "value": [{"name": "<img src=x>", "size": 1, "path": "p"}]}}
    diff = {"files": {"available": True, "value": [{"path": "<i>f</i>", "insertions": 1, "deletions": 0}]},
            "patch": {"available": True, "value": "+<script>alert(1)</script>\n"}}
    html = page.run_page(status, output, diff, "<svg onload=alert(1)>", "csrf")
    body = html.split("<main>", 1)[1]
    for raw in ("<b>x</b>", "<script>", "<img src=x>", "<i>f</i>", "<svg"):
        assert raw not in body, raw
    assert 'name="csrf_token" value="csrf"' in body


def test_a_queued_run_is_queued_with_its_place_until_a_person_pauses_its_queue(world: Any) -> None:
    from lionrun.domain.queue import QueueSettings, pause

    queues = world.container.core.queues()
    run = a_run(world.store, world.clock.now(), RunState.QUEUED, prober=world.prober)
    shown = board(world)
    (entry,) = shown.refresh().changed
    assert entry.group == "queued"
    queues.change("q", lambda settings: pause(settings or QueueSettings(name="q")))
    (entry,) = shown.refresh().changed
    assert (entry.run_id, entry.group) == (run.run_id, "needs_you")


# Approvals, budgets and attempts


def test_a_run_waiting_for_approval_needs_you_with_its_open_request_and_answer_forms(world: Any) -> None:
    asking = {"id": "a1", "tool": "Bash", "input": {"command": "echo '<script>alert(1)</script>'"},
              "tool_use_id": "t1", "requested_at": "2026-12-05T12:00:00+00:00", "behavior": None, "message": None,
              "answered_at": None, "answered_by": None}
    answered = {**asking, "id": "a0", "behavior": "deny", "message": "no", "answered_by": "li (me)"}
    run = live(world, status="waiting_approval", approvals=[answered, asking])
    shown = board(world)
    (entry,) = shown.refresh().changed
    assert (entry.group, entry.row["status"]) == ("needs_you", "waiting_approval")
    assert [r["id"] for r in entry.approvals] == ["a1"]  # the open one only
    html = page.row_html(entry, "csrf")
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert f'action="/runs/{run.run_id}/approve"' in html and f'action="/runs/{run.run_id}/deny"' in html
    assert html.count('name="csrf_token" value="csrf"') == 2 and 'name="request" value="a1"' in html
    assert 'name="reason"' in html
    assert "<form" not in page.row_html(entry)  # no token, no button (never a form that cannot pass)


def test_an_answered_request_changes_the_board_and_leaves_no_button(world: Any) -> None:
    run = a_run(world.store, world.clock.now(), RunState.WAITING_APPROVAL, prober=world.prober)
    shown = board(world)
    (entry,) = shown.refresh().changed
    assert entry.group == "needs_you" and [r["id"] for r in entry.approvals] == ["a1"]
    from lionrun.application.approvals import ApprovalService

    ApprovalService(world.store, world.clock).answer(run.run_id, "a1", "allow", None, "li (me)")
    (entry,) = shown.refresh().changed
    assert (entry.group, entry.approvals) == ("working", ())
    assert "approve" not in page.row_html(entry, "csrf")


def status_with(**fields: Any) -> dict[str, Any]:
    return {"run_id": "20260101T000000-abcdef", "status": "running", "terminal": False, "label": None,
            "session_id": None, "manifest": None, "usage": None, "delivery": None, "agents": None, "retry_of": None,
            "chain": None, **fields}


OUTPUT = {"console": {"available": True, "value": "", "truncated": False}, "artifacts": {"available": True, "value": []}}


def test_the_run_page_shows_requests_budget_and_attempts() -> None:
    asking = {"run_id": "20260101T000000-abcdef", "id": "a2", "tool": "Write", "input": {"path": "<b>f</b>"},
              "requested_at": "t", "behavior": None, "message": None, "answered_at": None, "answered_by": None}
    done = {**asking, "id": "a1", "tool": "Bash", "behavior": "allow", "answered_by": "li (me)"}
    budget = {"max_tokens": 1500, "max_cost_usd": 0.5, "spent_tokens": 2000, "spent_cost_usd": None,
              "exceeded": "tokens"}
    attempts = [{"attempt": 1, "started_at": "s1", "ended_at": "e1", "status": "failed",
                 "reason_code": "provider_rate_limited", "next_at": "n1"},
                {"attempt": 2, "started_at": "s2", "ended_at": None, "status": None, "reason_code": None, "next_at": None}]
    html = page.run_page(status_with(status="waiting_approval", approvals=[done, asking], budget=budget,
                                     attempts=attempts), OUTPUT, None, None, "csrf")
    body = html.split("<main>", 1)[1]
    assert "<b>f</b>" not in body and "&lt;b&gt;f&lt;/b&gt;" in body
    assert 'id="approve-a2"' in body and 'id="deny-a2"' in body and 'id="approve-a1"' not in body
    assert "allow by li (me)" in body
    tokens = body.split('id="budget-tokens"', 1)[1].split("</tr>", 1)[0]
    assert "2000" in tokens and "1500" in tokens and "exceeded" in tokens
    cost = body.split('id="budget-cost"', 1)[1].split("</tr>", 1)[0]
    assert "could not read" in cost and "exceeded" not in cost  # no price reported: said, never 0
    assert "provider_rate_limited" in body and body.count("<tr><td>") == 2


def test_an_ended_runs_requests_show_without_buttons_and_a_plain_run_shows_none_of_it() -> None:
    asking = {"run_id": "20260101T000000-abcdef", "id": "a1", "tool": "Bash", "input": {}, "behavior": None}
    html = page.run_page(status_with(terminal=True, status="failed", approvals=[asking]), OUTPUT, None, None, "csrf")
    assert 'id="approvals"' in html and "approve-a1" not in html
    plain = page.run_page(status_with(), OUTPUT, None, None, "csrf")
    assert 'id="approvals"' not in plain and 'id="budget"' not in plain and 'id="attempts"' not in plain
