"""Steps for features/consumer.feature: the contract client fed hand-written answers from `li`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from pytest_bdd import given, parsers, then, when

from lionrun.adapters.contract_client import (
    Completed,
    ContractClient,
    Evidence,
    Handshake,
    Reading,
    Reply,
    RunView,
    UnresolvedPolicy,
    WaitReport,
    read_fields,
    run_view,
)
from tests.fakes.contract_fakes import (
    LI,
    RUN_ID,
    FakeTime,
    ScriptedRunner,
    envelope,
    handshake_data,
    ok,
    run_row,
    wait_data,
)


@dataclass
class ConsumerWorld:
    """The consumer under test, the `li` answers queued for it, and what it concluded."""

    runner: ScriptedRunner = field(default_factory=ScriptedRunner)
    time: FakeTime = field(default_factory=FakeTime)
    policy: UnresolvedPolicy = field(default_factory=UnresolvedPolicy)
    client: ContractClient | None = None
    hello: Handshake | None = None
    reply: Reply | None = None
    report: WaitReport | None = None
    view: RunView | None = None
    reading: Reading | None = None

    def connect(self) -> ContractClient:
        self.client = ContractClient(
            LI, runner=self.runner, policy=self.policy, sleep=self.time.sleep, clock=self.time.clock
        )
        self.hello = self.client.handshake()
        return self.client

    @property
    def consumer(self) -> ContractClient:
        assert self.client is not None, "the consumer has not started"
        return self.client

    def answer(self, *answers: Completed) -> None:
        self.runner.then(*answers)


@pytest.fixture
def consumer_world() -> ConsumerWorld:
    return ConsumerWorld()


def literal(text: str) -> Any:
    """A Gherkin cell written as JSON (`null`, `true`, `"failed"`)."""
    return json.loads(text)


# --- Given ---------------------------------------------------------------------------------------


@given(parsers.parse("li answers the handshake at contract_version {version:d}"))
def _handshake_at(consumer_world: ConsumerWorld, version: int) -> None:
    consumer_world.answer(Completed(0, envelope(handshake_data(version), version=version)))


@given("the consumer has registered against li at contract_version 1")
def _registered(consumer_world: ConsumerWorld) -> None:
    consumer_world.answer(ok(handshake_data(1)))
    consumer_world.connect()
    assert consumer_world.hello is not None and consumer_world.hello.registered


@given(parsers.parse("li now answers at contract_version {version:d} that the run succeeded"))
def _answers_at_version(consumer_world: ConsumerWorld, version: int) -> None:
    row = run_row("completed", True, "succeeded")
    consumer_world.answer(Completed(0, envelope(row, version=version)))


@given("li answers that the run succeeded, beside fields the consumer does not know")
def _answers_with_unknown_fields(consumer_world: ConsumerWorld) -> None:
    row = run_row("completed", True, "succeeded", shard="eu-2", cost={"tokens": 12})
    consumer_world.answer(Completed(0, envelope(row, trace={"id": "abc"}, served_by="li-next")))


@given(parsers.parse('li answers status "{status}" with terminal {terminal} and outcome {outcome}'))
def _answers_status(
    consumer_world: ConsumerWorld, status: str, terminal: str, outcome: str
) -> None:
    consumer_world.answer(ok(run_row(status, literal(terminal), literal(outcome))))


@given(parsers.parse('li answers the run\'s output with its artifacts unavailable as "{reason}"'))
def _output_unavailable(consumer_world: ConsumerWorld, reason: str) -> None:
    artifacts = {
        "available": False,
        "value": None,
        "reason_code": reason,
        "detail": "permission denied",
    }
    consumer_world.answer(ok(output_data(artifacts)))


@given("li answers the run's output with an available, empty artifacts listing")
def _output_empty(consumer_world: ConsumerWorld) -> None:
    artifacts = {"available": True, "value": [], "reason_code": None, "detail": None}
    consumer_world.answer(ok(output_data(artifacts)))


def output_data(artifacts: dict[str, Any]) -> dict[str, Any]:
    console = {
        "available": True,
        "value": "",
        "reason_code": None,
        "detail": None,
        "truncated": False,
    }
    manifest = {"available": False, "value": None, "reason_code": "missing", "detail": None}
    return {"run_id": RUN_ID, "console": console, "artifacts": artifacts, "manifest": manifest}


@given(parsers.parse("li exits {code:d} with an envelope saying the run succeeded on stdout"))
def _exits_with_envelope(consumer_world: ConsumerWorld, code: int) -> None:
    consumer_world.answer(Completed(code, envelope(run_row("completed", True, "succeeded"))))


@given(parsers.parse("li exits {code} with stdout {stdout}"))
def _exits_with_stdout(consumer_world: ConsumerWorld, code: str, stdout: str) -> None:
    consumer_world.answer(Completed(int(code), literal(stdout)))


@given(parsers.parse('li\'s recorded state says the run ended with outcome "{outcome}"'))
def _recorded_end(consumer_world: ConsumerWorld, outcome: str) -> None:
    consumer_world.answer(ok(run_row("exited", True, outcome)))


@given(parsers.parse('li\'s wait reports the run ended with outcome "{outcome}"'))
def _wait_reports_end(consumer_world: ConsumerWorld, outcome: str) -> None:
    consumer_world.answer(ok(wait_data([run_row("completed", True, outcome)])))


@given(
    parsers.parse(
        "the consumer gives up after {attempts:d} attempts, backing off from {first:g} second"
    )
)
def _policy(consumer_world: ConsumerWorld, attempts: int, first: float) -> None:
    consumer_world.policy = UnresolvedPolicy(max_attempts=attempts, backoff_initial=first)


@given(parsers.parse("li's wait keeps returning the run in {bucket}"))
def _keeps_returning(consumer_world: ConsumerWorld, bucket: str) -> None:
    answer = unresolved_answer(bucket)
    consumer_world.answer(*[answer] * (consumer_world.policy.max_attempts + 2))


def unresolved_answer(bucket: str) -> Completed:
    if bucket == "stopped_without_end":
        return ok(wait_data([run_row("exited", possibly_orphaned=True)], stopped=[RUN_ID]))
    if bucket == "unresolved_spawn":
        return ok(wait_data([run_row(spawn_state="preparing")], unresolved=[RUN_ID]))
    assert bucket == "pending when the window closes", bucket
    return ok(wait_data([run_row()], pending=[RUN_ID], timed_out=True))


@given(
    parsers.parse(
        'li\'s wait returns the run in stopped_without_end, then ended with outcome "{outcome}"'
    )
)
def _stopped_then_ended(consumer_world: ConsumerWorld, outcome: str) -> None:
    ended = ok(wait_data([run_row("killed", True, outcome)]))
    consumer_world.answer(unresolved_answer("stopped_without_end"), ended)


# --- When ----------------------------------------------------------------------------------------


@when("the consumer starts up")
def _starts_up(consumer_world: ConsumerWorld) -> None:
    consumer_world.connect()


@when("the consumer reads the run's status")
def _reads_status(consumer_world: ConsumerWorld) -> None:
    reply = consumer_world.consumer.status(RUN_ID)
    consumer_world.reply = reply
    consumer_world.view = run_view(reply.data) if reply.data is not None else None


@when("the consumer reads the run's output")
def _reads_output(consumer_world: ConsumerWorld) -> None:
    reply = consumer_world.consumer.output(RUN_ID)
    assert reply.data is not None, reply
    consumer_world.reply = reply
    consumer_world.reading = read_fields(reply.data, ["artifacts"])["artifacts"]


@when(parsers.parse('a notice arrives saying the run "{outcome}"'))
def _notice_arrives(consumer_world: ConsumerWorld, outcome: str) -> None:
    notice = {"run_id": RUN_ID, "status": "completed", "outcome": outcome, "reason_code": None}
    reply = consumer_world.consumer.confirm_notice(json.dumps(notice))
    consumer_world.reply = reply
    consumer_world.view = run_view(reply.data) if reply.data is not None else None


@when("the consumer waits for the run without any notice")
@when("the consumer settles the run")
def _settles(consumer_world: ConsumerWorld) -> None:
    report = consumer_world.consumer.settle([RUN_ID], max_wait=5, poll_interval=0.5)
    consumer_world.report = report
    consumer_world.view = report.runs[0] if report.runs else None


# --- Then ----------------------------------------------------------------------------------------


@then("the consumer registers no verb")
def _no_verb(consumer_world: ConsumerWorld) -> None:
    assert consumer_world.hello is not None and not consumer_world.hello.registered
    assert consumer_world.hello.reply.data is None


@then(parsers.parse('a status read is answered "{verdict}" without running li'))
def _answered_without_li(consumer_world: ConsumerWorld, verdict: str) -> None:
    calls = len(consumer_world.runner.calls)
    assert consumer_world.consumer.status(RUN_ID).verdict.value == verdict
    assert len(consumer_world.runner.calls) == calls


@then(parsers.parse('the surface is reported "{verdict}"'))
def _surface_is(consumer_world: ConsumerWorld, verdict: str) -> None:
    assert consumer_world.reply is not None and consumer_world.reply.verdict.value == verdict


@then("no data is decoded")
def _no_data(consumer_world: ConsumerWorld) -> None:
    assert consumer_world.reply is not None and consumer_world.reply.data is None
    assert consumer_world.view is None


@then('the next status read is "degraded" until a handshake succeeds again')
def _degraded_until_handshake(consumer_world: ConsumerWorld) -> None:
    consumer = consumer_world.consumer
    assert consumer.status(RUN_ID).verdict.value == "degraded"
    consumer_world.answer(ok(handshake_data(1)), ok(run_row()))
    assert consumer.handshake().registered
    assert consumer.status(RUN_ID).verdict.value == "ok"


@then(parsers.parse('the run\'s status is shown as "{status}"'))
def _status_shown(consumer_world: ConsumerWorld, status: str) -> None:
    assert consumer_world.view is not None and consumer_world.view.to_wire()["status"] == status


@then(parsers.parse('the run\'s branch is "{branch}"'))
def _branch_is(consumer_world: ConsumerWorld, branch: str) -> None:
    assert consumer_world.view is not None, consumer_world.reply
    assert consumer_world.view.branch.value == branch


@then(parsers.parse('the artifacts are described as unknown, citing "{reason}"'))
def _described_unknown(consumer_world: ConsumerWorld, reason: str) -> None:
    reading = consumer_world.reading
    assert reading is not None and reading.evidence is Evidence.UNKNOWN
    assert reason in reading.describe()


@then("the artifacts are not described as none")
def _not_none(consumer_world: ConsumerWorld) -> None:
    reading = consumer_world.reading
    assert reading is not None and reading.evidence is not Evidence.NONE
    assert "none" not in reading.describe().split() and reading.value is None


@then("the artifacts are described as none")
def _described_none(consumer_world: ConsumerWorld) -> None:
    reading = consumer_world.reading
    assert (
        reading is not None and reading.evidence is Evidence.NONE and reading.describe() == "none"
    )


@then("nothing is attributed to the run")
def _not_attributed(consumer_world: ConsumerWorld) -> None:
    reply = consumer_world.reply
    assert reply is not None and reply.to_wire()["surface_fault"] is True
    assert reply.data is None and consumer_world.view is None


@then("the consumer has read the run's status from li")
def _read_status(consumer_world: ConsumerWorld) -> None:
    assert consumer_world.runner.calls[-1][1:3] == ["job", "status"]


@then(parsers.parse("the run is reported abandoned after {attempts:d} attempts"))
def _abandoned(consumer_world: ConsumerWorld, attempts: int) -> None:
    report = consumer_world.report
    assert report is not None and report.abandoned == [RUN_ID] and report.settled
    assert report.standings[RUN_ID].attempts == attempts
    assert consumer_world.view is not None and consumer_world.view.branch.value == "not_ended"


@then(parsers.parse("the consumer backed off {pauses} seconds between attempts"))
def _backed_off(consumer_world: ConsumerWorld, pauses: str) -> None:
    expected = [] if pauses == "none" else [float(p) for p in pauses.split(",")]
    assert consumer_world.time.slept == expected


@then("the run is not abandoned")
def _not_abandoned(consumer_world: ConsumerWorld) -> None:
    report = consumer_world.report
    assert report is not None and report.abandoned == [] and report.settled
