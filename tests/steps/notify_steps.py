"""Steps for features/d09_notify.feature: the terminal notice is a prompt, its delivery a recorded fact."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from pytest_bdd import given, parsers, then, when

from lionrun.application.notify import Notices
from lionrun.application.ports import NoticeResult
from lionrun.domain.run import DeliveryValue, Run
from tests.builders import RunState, a_run, end
from tests.support import li_bin, machine


class Peeking:
    """A notifier that records what the run's record said at the moment the command ran."""

    def __init__(self, store: Any, result: NoticeResult) -> None:
        self.store, self.result = store, result
        self.sent: list[tuple[list[str], dict[str, Any]]] = []
        self.record_then: list[Run] = []

    def deliver(self, argv: Sequence[str], payload: Mapping[str, Any]) -> NoticeResult:
        self.record_then.append(self.store.read(payload["run_id"]))
        self.sent.append((list(argv), dict(payload)))
        return self.result


@pytest.fixture
def notice_ctx() -> dict[str, Any]:
    return {"result": NoticeResult(ok=True, exit_code=0)}


@given(parsers.parse('a run that recorded its end as "{status}" with a notice configured'))
def _ended_with_notice(world: Any, notice_ctx: dict[str, Any], status: str) -> None:
    run = a_run(world.store, world.clock.now(), RunState.GONE, notify=["notify-me", "{run_id}", "{status}"])
    end(world.store, run.run_id, status, "succeeded" if status == "completed" else "failed", now=world.clock.now())
    notice_ctx["run"] = world.store.read(run.run_id)


@given("a run that recorded its end with no notice configured")
def _ended_without_notice(world: Any, notice_ctx: dict[str, Any]) -> None:
    run = a_run(world.store, world.clock.now(), RunState.GONE)
    end(world.store, run.run_id, now=world.clock.now())
    notice_ctx["run"] = world.store.read(run.run_id)


@given(parsers.parse('the notice command will fail with "{failure_class}"'))
def _will_fail(notice_ctx: dict[str, Any], failure_class: str) -> None:
    code = 3 if failure_class == "nonzero_exit" else None
    notice_ctx["result"] = NoticeResult(ok=False, exit_code=code, error="it failed", failure_class=failure_class)


@when("whoever recorded the end sends the notice")
def _send(world: Any, notice_ctx: dict[str, Any]) -> None:
    notifier = Peeking(world.store, notice_ctx["result"])
    notice_ctx["notifier"] = notifier
    Notices(world.store, notifier).send(notice_ctx["run"])


@then("the notice says only which run to go and read, and a status read agrees with it")
def _agrees(world: Any, notice_ctx: dict[str, Any]) -> None:
    (_argv, payload), = notice_ctx["notifier"].sent
    assert set(payload) == {"run_id", "kind", "label", "status", "terminal", "outcome", "reason_code",
                            "finished_at"}
    d = world.container.reads.observer().observe(payload["run_id"]).derivation
    assert (payload["status"], payload["terminal"], payload["outcome"]) == (d.status, d.terminal, d.outcome)


@then("the end was on record before the notice command ran")
def _end_first(notice_ctx: dict[str, Any]) -> None:
    (then_,) = notice_ctx["notifier"].record_then
    assert then_.end_recorded and then_.delivery == DeliveryValue(attempted=True, ok=None)


@then("no notice command ran")
def _none_ran(notice_ctx: dict[str, Any]) -> None:
    assert notice_ctx["notifier"].sent == []


@then("the recorded delivery is attempted and succeeded")
def _delivered(world: Any, notice_ctx: dict[str, Any]) -> None:
    assert world.store.read(notice_ctx["run"].run_id).delivery == DeliveryValue(True, True, 0)


@then(parsers.parse('the recorded delivery is attempted and failed with "{failure_class}"'))
def _failed(world: Any, notice_ctx: dict[str, Any], failure_class: str) -> None:
    delivery = world.store.read(notice_ctx["run"].run_id).delivery
    assert (delivery.attempted, delivery.ok, delivery.failure_class) == (True, False, failure_class)


@then("the recorded delivery is not attempted")
def _not_attempted(world: Any, notice_ctx: dict[str, Any]) -> None:
    assert world.store.read(notice_ctx["run"].run_id).delivery == DeliveryValue(attempted=False)


@then("the run's own end is unchanged by the delivery")
def _unchanged(world: Any, notice_ctx: dict[str, Any]) -> None:
    before, after = notice_ctx["run"], world.store.read(notice_ctx["run"].run_id)
    assert (after.status, after.outcome, after.reason_code, after.finished_at) == (
        before.status, before.outcome, before.reason_code, before.finished_at)


# ---- the CLI-level scenario of D9.4 ------------------------------------------------------------

@given("li ran a run that writes an artifact, with a notice command that looks around when it runs")
def _cli_run(li_home: str, tmp_path: Path, notice_ctx: dict[str, Any]) -> None:
    seen = tmp_path / "seen"
    script = (f'ls "$LI_HOME/runs/$1/artifacts" > "$0.artifacts"; '
              f'{shlex.quote(li_bin())} job status "$1" --machine > "$0.status"')
    handle = machine("agent", "--detach", "--notify", f"sh -c {shlex.quote(script)} {seen} {{run_id}}",
                     "sh", 'echo answer > "$LI_ARTIFACTS_DIR/out.txt"', home=li_home).data
    notice_ctx.update(run_id=handle["run_id"], seen=seen, home=li_home)


@when("the notice has been delivered")
def _cli_delivered(notice_ctx: dict[str, Any]) -> None:
    for _ in range(600):
        status = machine("job", "status", notice_ctx["run_id"], home=notice_ctx["home"]).data
        if (status["delivery"]["value"] or {}).get("ok") is not None:
            assert status["delivery"]["value"]["ok"] is True
            return
        time.sleep(0.05)
    raise AssertionError("the notice was never delivered")


@then("the notice command found the run's artifact already written")
def _cli_artifacts(notice_ctx: dict[str, Any]) -> None:
    assert Path(f"{notice_ctx['seen']}.artifacts").read_text().split() == ["out.txt"]


@then("the notice command found li job status already reporting the run terminal")
def _cli_terminal(notice_ctx: dict[str, Any]) -> None:
    data = json.loads(Path(f"{notice_ctx['seen']}.status").read_text())["data"]
    assert (data["terminal"], data["outcome"]) == (True, "succeeded")
