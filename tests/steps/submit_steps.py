"""Steps for features/d05_submit.feature: submit on both worlds, and through the real `li`."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from typing import Any

import pytest
from dependency_injector import providers
from pytest_bdd import given, parsers, then, when

from lionrun.application.ports import SpawnFailed, SpawnRequest
from lionrun.domain.run import PREPARING
from tests.builders import RunState, a_run
from tests.support import li_bin, machine


@pytest.fixture
def submit_ctx(tmp_path: Any) -> dict[str, Any]:
    """What one D5 scenario learned along the way."""
    return {"tmp": tmp_path}


def _home(ctx: dict[str, Any]) -> str:
    home = ctx.setdefault("home", str(ctx["tmp"] / "li-home-d05"))
    os.makedirs(home, exist_ok=True)
    return home


def _record(ctx: dict[str, Any], run_id: str) -> dict[str, Any]:
    with open(os.path.join(_home(ctx), "runs", run_id, "record.json"), encoding="utf-8") as handle:
        return json.load(handle)


def _ended(ctx: dict[str, Any], run_id: str, within: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        record = _record(ctx, run_id)
        if record.get("finished_at"):
            return record
        time.sleep(0.05)
    raise AssertionError(f"{run_id} did not end")


def _artifact(ctx: dict[str, Any], run_id: str, name: str) -> str:
    with open(os.path.join(_home(ctx), "runs", run_id, "artifacts", name), encoding="utf-8") as handle:
        return handle.read()


def _agent_request(cwd: str = "/tmp") -> Any:
    from lionrun.domain.request import Leg, ModelSpec, RunRequest

    return RunRequest(kind="agent", instruction="echo watched", legs=(Leg("main", ModelSpec("sh")),), cwd=cwd)


# --- CLI ------------------------------------------------------------------------------------------


@when(parsers.parse('a program submits the shell work "{work}" detached through li'))
def submit_sh_cli(submit_ctx: dict[str, Any], work: str) -> None:
    submit_ctx["handle"] = machine("agent", "--detach", "sh", work, home=_home(submit_ctx)).data


@when("a program submits the shell work that reports its session and stdin detached through li")
def submit_reporting_cli(submit_ctx: dict[str, Any]) -> None:
    # its session is read from the host, while it sleeps (in its own PID namespace the work's /proc
    # is the namespace's, where a session led from outside reads 0)
    work = ('ls -l /proc/self/fd/0 > "$LI_ARTIFACTS_DIR/stdin"; touch "$LI_ARTIFACTS_DIR/started"; sleep 3')
    submit_ctx["handle"] = machine("agent", "--detach", "sh", work, home=_home(submit_ctx)).data


@then('the submit answer is a handle: run id, pid, status "running", terminal false, outcome null and the console path')
def handle_shape_cli(submit_ctx: dict[str, Any]) -> None:
    handle = submit_ctx["handle"]
    assert isinstance(handle["pid"], int) and handle["pid"] > 0
    assert (handle["status"], handle["terminal"], handle["outcome"]) == ("running", False, None)
    assert handle["log"] == os.path.join(_home(submit_ctx), "runs", handle["run_id"], "console.log")


@then("the submitted run has not recorded an end yet")
def not_ended_yet(submit_ctx: dict[str, Any]) -> None:
    assert _record(submit_ctx, submit_ctx["handle"]["run_id"]).get("finished_at") is None


@when("a shell submits a run through li and is then killed with its whole process group")
def submit_then_kill_shell(submit_ctx: dict[str, Any]) -> None:
    work = 'sleep 1; echo survived > "$LI_ARTIFACTS_DIR/x"'
    script = f"{shlex.quote(li_bin())} agent --machine --detach sh {shlex.quote(work)}; sleep 60"
    shell = subprocess.Popen(["/bin/sh", "-c", script], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             env={**os.environ, "LI_HOME": _home(submit_ctx)}, start_new_session=True, text=True)
    try:
        assert shell.stdout is not None
        submit_ctx["handle"] = json.loads(shell.stdout.readline())["data"]
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()


@then("the submitted run still completes and writes its artifact")
def survived(submit_ctx: dict[str, Any]) -> None:
    run_id = submit_ctx["handle"]["run_id"]
    assert _ended(submit_ctx, run_id)["status"] == "completed"
    assert _artifact(submit_ctx, run_id, "x") == "survived\n"


@then("the run's process leads its own session and its stdin is /dev/null")
def own_session(submit_ctx: dict[str, Any]) -> None:
    import time

    from tests.builders import session_work

    handle = submit_ctx["handle"]
    started = os.path.join(_home(submit_ctx), "runs", handle["run_id"], "artifacts", "started")
    deadline = time.monotonic() + 30
    while not os.path.exists(started):
        assert time.monotonic() < deadline, "the work never started"
        time.sleep(0.05)
    assert session_work(handle["pid"]) != [], "no process of the work in the session the runner leads"
    assert handle["pid"] != os.getsid(0)
    _ended(submit_ctx, handle["run_id"])
    assert _artifact(submit_ctx, handle["run_id"], "stdin").rstrip().endswith("/dev/null")


@when(parsers.parse("a program submits with the arguments {arguments}"))
def submit_arguments(submit_ctx: dict[str, Any], arguments: str) -> None:
    submit_ctx["result"] = machine(*shlex.split(arguments), "--detach", home=_home(submit_ctx))


@when(parsers.parse("a program submits a prompt file of {size:d} bytes"))
def submit_big_prompt(submit_ctx: dict[str, Any], size: int) -> None:
    path = submit_ctx["tmp"] / "big-prompt.txt"
    path.write_text("x" * size)
    submit_ctx["result"] = machine("agent", "--detach", "sh", "--prompt-file", str(path), home=_home(submit_ctx))


@when("a program submits with a configured notify command holding a 200 KiB argument")
def submit_unexecutable_notify(submit_ctx: dict[str, Any]) -> None:
    # li's own argv cannot carry a 200 KiB string (exec caps one at 128 KiB), config.toml can
    with open(os.path.join(_home(submit_ctx), "config.toml"), "w", encoding="utf-8") as handle:
        handle.write(f'notify = ["true", "{"n" * 200 * 1024}"]\n')
    submit_ctx["result"] = machine("agent", "--detach", "sh", "true", home=_home(submit_ctx))


@when("a program submits a shell script of 250 KiB as a prompt file")
def submit_big_script(submit_ctx: dict[str, Any]) -> None:
    path = submit_ctx["tmp"] / "big-script.sh"
    line = "# " + "c" * 97 + "\n"
    path.write_text(line * (250 * 1024 // len(line)) + "echo ok\n")
    submit_ctx["handle"] = machine("agent", "--detach", "--prompt-file", str(path), "sh",
                                   home=_home(submit_ctx)).data


@when("a program submits a flow whose steps depend on each other in a cycle")
def submit_cycle(submit_ctx: dict[str, Any]) -> None:
    spec = submit_ctx["tmp"] / "cycle.yaml"
    spec.write_text("steps:\n  - {id: a, prompt: x, depends_on: [b]}\n  - {id: b, prompt: y, depends_on: [a]}\n")
    submit_ctx["result"] = machine("orchestrate", "flow", "--detach", str(spec), home=_home(submit_ctx))


@when("a program submits work for codex on a PATH without a codex executable")
def submit_missing_codex(submit_ctx: dict[str, Any]) -> None:
    empty = submit_ctx["tmp"] / "empty-bin"
    empty.mkdir()
    os.symlink("/bin/sh", empty / "sh")
    submit_ctx["result"] = machine("agent", "--detach", "codex", "hi", home=_home(submit_ctx),
                                   env={"PATH": str(empty)})


@then(parsers.parse('the submit is refused with kind "{kind}"'))
def refused_with(submit_ctx: dict[str, Any], kind: str) -> None:
    assert submit_ctx["result"].error["kind"] == kind


@then("no run folder exists")
def no_run_folder(submit_ctx: dict[str, Any]) -> None:
    runs = os.path.join(_home(submit_ctx), "runs")
    assert not os.path.isdir(runs) or os.listdir(runs) == []


@given(parsers.parse('a prompt file that says "{text}"'))
def prompt_file(submit_ctx: dict[str, Any], text: str) -> None:
    submit_ctx["prompt"] = submit_ctx["tmp"] / "prompt.sh"
    submit_ctx["prompt"].write_text(text)


@when("a program submits that prompt file detached through li")
def submit_prompt_file(submit_ctx: dict[str, Any]) -> None:
    submit_ctx["handle"] = machine("agent", "--detach", "--prompt-file", str(submit_ctx["prompt"]), "sh",
                                   home=_home(submit_ctx)).data


@when(parsers.parse('the prompt file is changed to "{text}"'))
def change_prompt_file(submit_ctx: dict[str, Any], text: str) -> None:
    submit_ctx["prompt"].write_text(text)


@then(parsers.parse('the submitted run answers "{answer}"'))
def run_answers(submit_ctx: dict[str, Any], answer: str) -> None:
    run_id = submit_ctx["handle"]["run_id"]
    assert _ended(submit_ctx, run_id)["status"] == "completed"
    assert _artifact(submit_ctx, run_id, "response.md") == f"{answer}\n"


# --- both worlds ----------------------------------------------------------------------------------


@when("li submits a run")
def submit_in_world(world: Any, submit_ctx: dict[str, Any]) -> None:
    submit_ctx["world_handle"] = world.container.submit.submitter().submit(_agent_request())


@when("a run is submitted while its spawn is watched")
def submit_watched(world: Any, submit_ctx: dict[str, Any]) -> None:
    inner, observer = world.spawner, world.container.reads.observer()

    class Watching:
        def spawn(self, request: SpawnRequest) -> int:
            run_id = request.argv[-1]
            submit_ctx["at_spawn"] = {
                "record": world.store.read(run_id), "argv": list(request.argv),
                "instruction": world.store.read_text(run_id, "instruction.txt"),
                "observed": observer.observe(run_id).derivation,
            }
            return inner.spawn(request)

    world.container.core.spawner.override(providers.Object(Watching()))
    submit_ctx["world_handle"] = world.container.submit.submitter().submit(_agent_request())


@then("the handle carries only run_id, pid, status, terminal, outcome, log and replayed")
def handle_fields(submit_ctx: dict[str, Any]) -> None:
    # `replayed` says whether this submit started the run, nothing about the work
    assert set(submit_ctx["world_handle"].to_wire()) == {"run_id", "pid", "status", "terminal", "outcome", "log",
                                                         "replayed"}
    assert submit_ctx["world_handle"].replayed is False


@then("at the moment of the spawn the run id already named a record")
def id_before_spawn(submit_ctx: dict[str, Any]) -> None:
    assert submit_ctx["at_spawn"]["record"].run_id == submit_ctx["world_handle"].run_id


@then("the child was started with that run id as its last argument")
def id_in_argv(submit_ctx: dict[str, Any]) -> None:
    assert submit_ctx["at_spawn"]["argv"][-3:] == ["-m", "lionrun.entrypoints.runner", submit_ctx["world_handle"].run_id]


@then('at the moment of the spawn the record said spawn_state "preparing" with no pid')
def preparing_at_spawn(submit_ctx: dict[str, Any]) -> None:
    record = submit_ctx["at_spawn"]["record"]
    assert record.spawn_state == PREPARING and record.pid is None and record.incarnation is None


@then("at the moment of the spawn instruction.txt already held the prompt")
def instruction_at_spawn(submit_ctx: dict[str, Any]) -> None:
    assert submit_ctx["at_spawn"]["instruction"] == "echo watched"


@then('a status read taken during the spawn said status "running", not terminal, outcome null')
def pending_during_spawn(submit_ctx: dict[str, Any]) -> None:
    derived = submit_ctx["at_spawn"]["observed"]
    assert (derived.status, derived.terminal, derived.outcome) == ("running", False, None)


@then('the record says spawn_state "started" with the pid and its incarnation')
def started_record(world: Any, submit_ctx: dict[str, Any]) -> None:
    handle = submit_ctx["world_handle"]
    record = world.store.read(handle.run_id)
    assert record.spawn_state == "started" and record.pid == handle.pid
    inc = record.incarnation
    assert (inc.host_id, inc.boot_id, inc.pid, inc.create_time, inc.pgid) == (
        world.prober.facts.host_id, world.prober.facts.boot_id, handle.pid, 1000.0, handle.pid)


@then("the record was written twice: preparing, then started")
def written_twice(world: Any, submit_ctx: dict[str, Any]) -> None:
    assert world.store.read(submit_ctx["world_handle"].run_id).generation == 2


@given(parsers.parse('the spawn will fail with "{message}"'))
def spawn_will_fail(world: Any, message: str) -> None:
    world.spawner.fail_with = message


@given("the working directory will have vanished by the time of the spawn")
def cwd_will_vanish(world: Any, submit_ctx: dict[str, Any]) -> None:
    doomed = submit_ctx["tmp"] / "doomed-cwd"
    doomed.mkdir()
    submit_ctx["cwd"] = str(doomed)

    class Vanishing:
        """Removes the cwd after validation, then fails as Popen does on a missing cwd."""

        def spawn(self, request: SpawnRequest) -> int:
            shutil.rmtree(request.cwd)
            if not os.path.isdir(request.cwd):
                raise SpawnFailed(f"FileNotFoundError: [Errno 2] No such file or directory: {request.cwd!r}")
            raise AssertionError("the directory should be gone")

    world.container.core.spawner.override(providers.Object(Vanishing()))


@when("a program submits a valid request")
def submit_in_process(world: Any, submit_ctx: dict[str, Any]) -> None:
    from lionrun.entrypoints.container import set_container
    from lionrun.entrypoints.dispatch import answer

    set_container(world.container)
    cwd = submit_ctx.get("cwd", str(submit_ctx["tmp"]))
    submit_ctx["envelope"] = answer(["agent", "--detach", "--cwd", cwd, "sh", "echo never"])


@then(parsers.parse('the submit envelope is ok false with kind "{kind}" naming the run'))
def envelope_refused(world: Any, submit_ctx: dict[str, Any], kind: str) -> None:
    envelope = submit_ctx["envelope"]
    assert envelope["ok"] is False and envelope["data"] is None and envelope["error"]["kind"] == kind
    submit_ctx["failed_run"] = envelope["error"]["detail"]["run_id"]
    assert list(world.store.run_ids()) == [submit_ctx["failed_run"]]


@then(parsers.parse('that run\'s record is terminal with outcome "{outcome}" and reason "{reason}"'))
def failed_record(world: Any, submit_ctx: dict[str, Any], outcome: str, reason: str) -> None:
    derived = world.container.reads.observer().observe(submit_ctx["failed_run"]).derivation
    assert (derived.terminal, derived.outcome, derived.reason_code) == (True, outcome, reason)
    assert world.store.read(submit_ctx["failed_run"]).finished_at is not None


@then(parsers.parse('that run\'s record says spawn_state "{state}"'))
def failed_spawn_state(world: Any, submit_ctx: dict[str, Any], state: str) -> None:
    assert world.store.read(submit_ctx["failed_run"]).spawn_state == state


@given("a run whose producer died after the pre-spawn write")
def producer_died(world: Any, submit_ctx: dict[str, Any]) -> None:
    submit_ctx["stale"] = a_run(world.store, world.clock.now(), RunState.PREPARING).run_id


@when(parsers.parse("{seconds:d} seconds pass and the run is read"))
def stale_read(world: Any, submit_ctx: dict[str, Any], seconds: int) -> None:
    world.clock.advance(seconds)
    submit_ctx["stale_read"] = world.container.reads.observer().observe(submit_ctx["stale"]).derivation


@then("the run is not terminal, its outcome is null and it is flagged possibly orphaned")
def stale_flagged(submit_ctx: dict[str, Any]) -> None:
    derived = submit_ctx["stale_read"]
    assert (derived.terminal, derived.outcome, derived.possibly_orphaned, derived.aged_preparing) == (
        False, None, True, True)


@then('its record still says spawn_state "preparing"')
def still_preparing(world: Any, submit_ctx: dict[str, Any]) -> None:
    record = world.store.read(submit_ctx["stale"])
    assert record.spawn_state == PREPARING and record.generation == 1 and record.finished_at is None


@when("the submitted run is read three times")
def read_thrice(world: Any, submit_ctx: dict[str, Any]) -> None:
    run_id = submit_ctx["world_handle"].run_id
    submit_ctx["generation"] = world.store.read(run_id).generation
    for _ in range(3):
        world.container.reads.observer().observe(run_id)


@then("the submitted run's record generation is unchanged")
def generation_unchanged(world: Any, submit_ctx: dict[str, Any]) -> None:
    assert world.store.read(submit_ctx["world_handle"].run_id).generation == submit_ctx["generation"]
