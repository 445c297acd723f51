"""The submit use case on both worlds: preparing → started with an incarnation, or → a terminal failure."""

from __future__ import annotations

import json

import pytest
from dependency_injector import providers

from lionrun.application.ports import ProviderResult, SpawnRequest
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.lifecycle import derive
from lionrun.domain.request import Leg, ModelSpec, RunRequest


class StubProvider:
    """A provider that is (or is not) installed; submit only asks whether it is available."""

    def __init__(self, name: str, installed: bool = True) -> None:
        self.name = name
        self.installed = installed

    def available(self) -> bool:
        return self.installed

    def run(self, *args: object, **kwargs: object) -> ProviderResult:
        raise AssertionError("submit never runs the work")


def request(prompt: str = "echo hi", model: str = "sh", **fields: object) -> RunRequest:
    provider, _, name = model.partition("/")
    return RunRequest(kind="agent", instruction=prompt, legs=(Leg("main", ModelSpec(provider, name or None)),),
                      cwd="/tmp", **fields)


def submitter(world, **installed: bool):
    registry = {name: StubProvider(name, installed.get(name, True)) for name in ("sh", "claude", "codex", "gemini")}
    world.container.submit.provider_registry.override(providers.Object(registry))
    return world.container.submit.submitter()


def only_run(world) -> str:
    ids = list(world.store.run_ids())
    assert len(ids) == 1, ids
    return ids[0]


def test_a_submit_writes_started_with_the_pid_and_the_process_incarnation(world) -> None:
    handle = submitter(world).submit(request())
    record = world.store.read(handle.run_id)
    assert record.spawn_state == "started" and record.status == "running"
    assert record.pid == handle.pid and record.started_at is not None
    inc = record.incarnation
    assert (inc.host_id, inc.boot_id, inc.pid, inc.create_time, inc.pgid) == ("host-a", "boot-1", handle.pid, 1000.0, handle.pid)
    assert record.generation == 2  # preparing, then the write that attaches the pid
    assert handle.to_wire() == {"run_id": handle.run_id, "pid": handle.pid, "status": "running",
                                "terminal": False, "outcome": None, "log": handle.log, "replayed": False}
    assert handle.log.endswith(f"{handle.run_id}/console.log")


def test_the_record_says_preparing_and_the_instruction_is_on_disk_when_the_child_is_spawned(world) -> None:
    seen: dict[str, object] = {}
    inner = world.spawner

    class Inspecting:
        def spawn(self, spawn: SpawnRequest) -> int:
            run_id = spawn.argv[-1]
            seen["record"] = world.store.read(run_id)
            seen["instruction"] = world.store.read_text(run_id, "instruction.txt")
            seen["request"] = json.loads(world.store.read_text(run_id, "request.json"))
            seen["spawn"] = spawn
            return inner.spawn(spawn)

    world.container.core.spawner.override(providers.Object(Inspecting()))
    handle = submitter(world).submit(request("echo original", label="lab", timeout=5.0))
    record = seen["record"]
    assert record.run_id == handle.run_id and record.spawn_state == "preparing" and record.pid is None
    assert derive(record, None, world.clock.now()).terminal is False
    assert seen["instruction"] == "echo original"
    assert seen["request"]["kind"] == "agent" and seen["request"]["timeout"] == 5.0
    spawn = seen["spawn"]
    assert spawn.argv[-3:] == ["-m", "lionrun.entrypoints.runner", handle.run_id]
    assert spawn.env["LI_HOME"] and spawn.cwd == "/tmp"


def test_a_failed_spawn_leaves_a_terminal_failed_record_and_refuses(world) -> None:
    world.spawner.fail_with = "PermissionError: [Errno 13] Permission denied: '/x/python'"
    with pytest.raises(ContractError) as caught:
        submitter(world).submit(request())
    run_id = only_run(world)
    assert caught.value.kind is ErrorKind.UNAVAILABLE
    assert caught.value.detail == {"run_id": run_id, "reason_code": "spawn_failed", "failure_recorded": True}
    record = world.store.read(run_id)
    assert (record.spawn_state, record.status, record.outcome, record.reason_code) == (
        "failed", "failed", "failed", "spawn_failed")
    assert record.finished_at is not None and record.pid is None
    derived = derive(record, None, world.clock.now())
    assert (derived.terminal, derived.outcome) == (True, "failed")


def test_an_unexpected_error_from_the_spawner_still_ends_the_run(world) -> None:
    class Broken:
        def spawn(self, spawn: SpawnRequest) -> int:
            raise RuntimeError("descriptor table full")

    world.container.core.spawner.override(providers.Object(Broken()))
    with pytest.raises(ContractError):
        submitter(world).submit(request())
    record = world.store.read(only_run(world))
    assert record.end_recorded and record.reason_code == "spawn_error"


def test_a_pid_that_cannot_be_attached_is_killed_and_the_run_ended(world) -> None:
    class Blind:
        def host(self):
            raise OSError("cannot read /proc")

        def observe(self, pid):
            raise OSError("cannot read /proc")

    world.container.core.prober.override(providers.Object(Blind()))
    with pytest.raises(ContractError) as caught:
        submitter(world).submit(request())
    assert caught.value.detail["reason_code"] == "attach_failed"
    assert world.signaller.signals == [(world.spawner.next_pid, "kill")]
    assert world.store.read(only_run(world)).end_recorded


@pytest.mark.parametrize("bad", [request(""), request("  "), request("x" * (256 * 1024 + 1))])
def test_an_invalid_request_is_refused_before_any_run_exists(world, bad: RunRequest) -> None:
    with pytest.raises(ContractError) as caught:
        submitter(world).submit(bad)
    assert caught.value.kind is ErrorKind.INVALID_INPUT
    assert list(world.store.run_ids()) == [] and world.spawner.spawned == []


def test_a_provider_that_is_not_installed_is_unavailable_and_leaves_no_run(world) -> None:
    with pytest.raises(ContractError) as caught:
        submitter(world, codex=False).submit(request("hi", "codex/o3"))
    assert caught.value.kind is ErrorKind.UNAVAILABLE and caught.value.detail == {"provider": "codex"}
    assert list(world.store.run_ids()) == []


def test_the_notification_config_is_recorded_with_where_it_came_from(world) -> None:
    handle = submitter(world).submit(request(notify=("notify-send", "{run_id}"), notify_source="env"))
    record = world.store.read(handle.run_id)
    assert record.notify == ["notify-send", "{run_id}"] and record.notify_source == "env"


def test_submits_get_distinct_ids(world) -> None:
    service = submitter(world)
    ids = {service.submit(request()).run_id for _ in range(5)}
    assert len(ids) == 5


# -- one run per idempotency key, on both worlds --------------------------------------


def test_a_key_answers_its_run_again_and_starts_nothing_new(world) -> None:
    service = submitter(world)
    first = service.submit(request(), idempotency_key="k")
    spawned = len(world.spawner.requests) if hasattr(world.spawner, "requests") else None
    again = service.submit(request(), idempotency_key="k")
    assert (again.run_id, again.pid, again.replayed, first.replayed) == (first.run_id, first.pid, True, False)
    assert only_run(world) == first.run_id
    if spawned is not None:
        assert len(world.spawner.requests) == spawned


def test_another_request_under_a_key_is_a_conflict(world) -> None:
    service = submitter(world)
    first = service.submit(request(), idempotency_key="k")
    with pytest.raises(ContractError) as refused:
        service.submit(request("echo other"), idempotency_key="k")
    assert refused.value.kind is ErrorKind.CONFLICT and refused.value.detail["run_id"] == first.run_id
    assert only_run(world) == first.run_id


def test_a_key_whose_run_was_removed_starts_a_new_run(world) -> None:
    service = submitter(world)
    first = service.submit(request(), idempotency_key="k")
    world.store.remove(first.run_id)
    second = service.submit(request("echo new"), idempotency_key="k")
    assert second.run_id != first.run_id and second.replayed is False


def test_a_submit_without_a_key_is_never_replayed(world) -> None:
    service = submitter(world)
    assert service.submit(request()).run_id != service.submit(request()).run_id
