"""The terminal notice: template choice and rendering, payload, and the Notices service on both worlds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lionrun.application.notify import Notices
from lionrun.application.ports import NoticeResult, StoreRefused
from lionrun.domain.notify import (
    NotifyTemplateError,
    choose,
    payload,
    render,
    split_template,
    template_of,
)
from lionrun.domain.run import STARTED, DeliveryValue, Run
from tests.builders import Refusing, RunState, a_run, end

ENDED = Run("20260803T000000-abcdef", "agent", "completed_empty", "2026-08-03T00:00:00.000000+00:00",
            label="my label", spawn_state=STARTED, finished_at="2026-08-03T00:01:00.000000+00:00",
            reason_code="no_artifacts")


def test_the_payload_carries_the_terminal_and_the_producers_outcome() -> None:
    assert payload(ENDED) == {
        "run_id": ENDED.run_id, "kind": "agent", "label": "my label", "status": "completed_empty",
        "terminal": True, "outcome": "failed", "reason_code": "no_artifacts",
        "finished_at": "2026-08-03T00:01:00.000000+00:00",
    }


def test_every_placeholder_renders_and_each_argument_stays_one_argument() -> None:
    argv = render(["notify", "{run_id}:{status}", "{outcome}", "{reason_code}", "{label}", "{payload}"],
                  payload(ENDED))
    assert argv[:5] == ["notify", f"{ENDED.run_id}:completed_empty", "failed", "no_artifacts", "my label"]
    assert json.loads(argv[5]) == payload(ENDED)


def test_a_null_value_renders_empty_and_unknown_braces_are_left_alone() -> None:
    body = {**payload(ENDED), "reason_code": None, "label": "{status}"}
    assert render(["x={reason_code}", "{unknown}", "{", "{label}"], body) == ["x=", "{unknown}", "{", "{status}"]


def test_the_flag_wins_over_the_environment_and_the_environment_over_the_config() -> None:
    assert choose("a '{run_id}'", "b", "c").template == ["a", "{run_id}"]
    assert choose(None, "b x", ["c"]).template == ["b", "x"]
    assert choose(None, "", ["c", "d"]).template == ["c", "d"]
    assert (choose(None, None, None).template, choose(None, None, None).source) == (None, None)
    assert choose(None, "b", None).source == "env"


@pytest.mark.parametrize("bad", ["", "   ", "unterminated 'quote"])
def test_an_unusable_template_string_is_refused(bad: str) -> None:
    with pytest.raises(NotifyTemplateError):
        split_template(bad)


@pytest.mark.parametrize("bad", [[], [1, 2], {"cmd": "x"}, 3])
def test_an_unusable_config_entry_is_refused(bad: object) -> None:
    with pytest.raises(NotifyTemplateError):
        template_of(bad)


# ---- the Notices service, on the in-memory and the filesystem store --------------------------

def ended_run(world: Any, notify: list[str] | None) -> Run:
    run = a_run(world.store, world.clock.now(), RunState.GONE, notify=notify)
    end(world.store, run.run_id, "failed", "failed")
    return world.store.read(run.run_id)  # type: ignore[no-any-return]


def test_a_configured_notice_is_sent_once_and_its_outcome_recorded(world: Any) -> None:
    run = ended_run(world, ["notify", "{run_id}"])
    notices = world.container.notices.notices()
    notices.send(run)
    notices.send(world.store.read(run.run_id))  # a second call sends nothing more
    assert world.notifier.sent == [(["notify", run.run_id], payload(run))]
    assert world.store.read(run.run_id).delivery == DeliveryValue(True, True, 0, None, None)


def test_nothing_configured_is_recorded_as_not_attempted(world: Any) -> None:
    run = ended_run(world, None)
    world.container.notices.notices().send(run)
    assert world.notifier.sent == []
    assert world.store.read(run.run_id).delivery == DeliveryValue(attempted=False)


def test_a_failed_delivery_is_recorded_and_the_runs_own_outcome_is_unchanged(world: Any) -> None:
    run = ended_run(world, ["notify"])
    world.notifier.result = NoticeResult(ok=False, exit_code=3, error="boom", failure_class="nonzero_exit")
    world.container.notices.notices().send(run)
    after = world.store.read(run.run_id)
    assert after.delivery == DeliveryValue(True, False, 3, "boom", "nonzero_exit")
    assert (after.status, after.outcome, after.finished_at) == (run.status, run.outcome, run.finished_at)


def test_the_attempt_is_on_record_before_the_command_runs(world: Any) -> None:
    run = ended_run(world, ["notify"])
    seen: list[DeliveryValue | None] = []

    class Peeking:
        def deliver(self, argv: Any, body: Any) -> NoticeResult:
            seen.append(world.store.read(run.run_id).delivery)
            return NoticeResult(ok=True, exit_code=0)

    Notices(world.store, Peeking()).send(run)
    assert seen == [DeliveryValue(attempted=True, ok=None)]


def test_a_sender_that_dies_mid_delivery_leaves_attempted_with_an_unknown_outcome(world: Any) -> None:
    run = ended_run(world, ["notify"])

    class Dying:
        def deliver(self, argv: Any, body: Any) -> NoticeResult:
            raise SystemExit("the runner was killed here")

    with pytest.raises(SystemExit):
        Notices(world.store, Dying()).send(run)
    assert world.store.read(run.run_id).delivery == DeliveryValue(attempted=True, ok=None)


def test_a_run_without_an_end_sends_nothing(world: Any) -> None:
    run = a_run(world.store, world.clock.now(), RunState.GONE, notify=["notify"])
    world.container.notices.notices().send(run)
    assert world.notifier.sent == [] and world.store.read(run.run_id) == run


def test_an_attempt_that_cannot_be_recorded_is_not_sent(world: Any) -> None:
    run = ended_run(world, ["notify"])
    Notices(Refusing(world.store, 1, StoreRefused), world.notifier).send(run)
    assert world.notifier.sent == [] and world.store.read(run.run_id).delivery is None


# ---- the reap winner's notice: claimed in the reader, delivered by a detached sender ----------

def detached(world: Any) -> Any:
    from lionrun.application.notify import DetachedNotices

    return DetachedNotices(world.container.notices.notices(), world.spawner, ["notice-sender"], {"E": "1"}, "/", "/dev/null")


def test_a_reap_winner_claims_the_notice_and_starts_one_sender_without_running_the_command(world: Any) -> None:
    run = ended_run(world, ["notify", "{run_id}"])
    sender = detached(world)
    sender.send(run)
    sender.send(world.store.read(run.run_id))  # a second reader finds it claimed
    assert world.notifier.sent == []  # the command runs in the sender, not in the reader
    assert [list(r.argv) for r in world.spawner.spawned] == [["notice-sender", run.run_id]]
    assert world.store.read(run.run_id).delivery == DeliveryValue(attempted=True, ok=None)


def test_the_sender_delivers_the_claim_once_and_records_its_outcome(world: Any) -> None:
    run = ended_run(world, ["notify", "{run_id}"])
    detached(world).send(run)
    notices = world.container.notices.notices()
    notices.deliver_claimed(run.run_id)
    notices.deliver_claimed(run.run_id)  # already settled: nothing more is sent
    assert world.notifier.sent == [(["notify", run.run_id], payload(world.store.read(run.run_id)))]
    assert world.store.read(run.run_id).delivery == DeliveryValue(True, True, 0, None, None)


def test_a_sender_that_cannot_start_leaves_a_recorded_failure_not_an_unknown(world: Any) -> None:
    run = ended_run(world, ["notify"])
    world.spawner.fail_with = "no descriptors left"
    detached(world).send(run)
    delivery = world.store.read(run.run_id).delivery
    assert (delivery.attempted, delivery.ok, delivery.failure_class) == (True, False, "unknown")
    assert "no descriptors left" in delivery.error


def test_nothing_configured_starts_no_sender(world: Any) -> None:
    run = ended_run(world, None)
    detached(world).send(run)
    assert world.spawner.spawned == []
    assert world.store.read(run.run_id).delivery == DeliveryValue(attempted=False)
