"""WorkService's two halves of a lean run, over the in-memory world and fakes:
`supervise` decides whether a run can be handed to the lean supervisor and prepares its one leg;
`finish_supervised` records the end from what the supervisor saw, as `perform` would."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from dependency_injector import providers

from lionrun.application.ports import LegLaunch, ProviderResult
from lionrun.application.work import SupervisedEnd, Workspace
from lionrun.domain.request import Leg, ModelSpec, RunRequest


class Launchable:
    """A provider another process can start: its argv names the prompt, its answer is its stdout."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.launched: list[tuple[str, str | None, dict[str, str], list[str]]] = []

    def available(self) -> bool:
        return True

    def run(self, *args, **kwargs) -> ProviderResult:
        raise AssertionError("a supervised leg is never run in-process")

    def launch(self, instruction: str, model: str | None, env: Mapping[str, str], extra: Sequence[str] = ()) -> LegLaunch:
        self.launched.append((instruction, model, dict(env), list(extra)))
        return LegLaunch(argv=(self.name, "--print"), stdin_text=instruction)

    def conclude(self, lines: Sequence[str], exit_code: int, timed_out: bool, idle: bool = False) -> ProviderResult:
        return ProviderResult(exit_code=exit_code, answer="".join(lines) or None, timed_out=timed_out,
                              is_error=exit_code != 0)


class InProcessOnly:
    name = "gemini"

    def available(self) -> bool:
        return True

    def run(self, instruction, model, cwd, env, console, timeout, extra=(), idle_timeout=None) -> ProviderResult:
        return ProviderResult(0, answer="in process")


def setup(world) -> dict:
    registry = {"sh": Launchable("sh"), "claude": Launchable("claude"), "codex": Launchable("codex"),
                "gemini": InProcessOnly()}
    world.container.submit.provider_registry.override(providers.Object(registry))
    return registry


def submitted(world, legs: tuple[Leg, ...], kind: str = "agent", **fields) -> str:
    request = RunRequest(kind=kind, instruction="do it", legs=legs, cwd="/work/here", **fields)
    run_id = world.container.submit.submitter().submit(request).run_id
    world.store.work_artifacts_dir(run_id)
    return run_id


def one(model: str = "claude/opus") -> tuple[Leg, ...]:
    provider, _, name = model.partition("/")
    return (Leg("main", ModelSpec(provider, name or None)),)


def workspace(run_id: str) -> Workspace:
    return Workspace(io.StringIO(), {"LI_RUN_ID": run_id}, io.StringIO())


def test_a_one_leg_run_is_prepared_for_the_supervisor_with_the_leg_s_env_and_timeout(world) -> None:
    registry = setup(world)
    run_id = submitted(world, one(), timeout=30.0)
    supervision = world.container.submit.work().supervise(run_id, workspace(run_id))
    assert supervision is not None
    assert (supervision.run_id, supervision.cwd, supervision.launch.argv) == (run_id, "/work/here", ("claude", "--print"))
    assert supervision.launch.stdin_text == "do it"
    assert supervision.env == {"LI_RUN_ID": run_id, "LI_LEG_ID": "main", "PWD": "/work/here"}
    assert 29.0 < supervision.timeout <= 30.0
    assert supervision.kill_watch and supervision.kill_watch > 0
    assert registry["claude"].launched[0][:2] == ("do it", "opus")
    assert world.store.read(run_id).end_recorded is False  # preparing records nothing


def test_runs_the_supervisor_cannot_watch_stay_with_the_runner(world) -> None:
    setup(world)
    work = world.container.submit.work()
    fanout = submitted(world, (Leg("a", ModelSpec("claude", None)), Leg("b", ModelSpec("codex", None))), kind="fanout")
    in_process = submitted(world, one("gemini"))
    asked = submitted(world, one())
    world.store.update(asked, lambda r: r.evolve(kill_requested_at="2026-07-25T17:50:11.000000+00:00"))
    unreadable = submitted(world, one())
    world.store.write_text(unreadable, "request.json", "[not an object")
    for run_id in (fanout, in_process, asked, unreadable):
        assert work.supervise(run_id, workspace(run_id)) is None, run_id


def test_a_run_whose_timeout_is_spent_while_preparing_stays_with_the_runner(world, monkeypatch) -> None:
    setup(world)
    run_id = submitted(world, one(), timeout=1.0)
    readings = iter([1000.0])
    monkeypatch.setattr(world.clock, "monotonic", lambda: next(readings, 1001.5))
    assert world.container.submit.work().supervise(run_id, workspace(run_id)) is None


def test_the_finisher_records_the_answer_the_manifest_and_the_end(world) -> None:
    setup(world)
    run_id = submitted(world, one())
    seen = SupervisedEnd(lines=["the ", "answer\n"], exit_code=0, timed_out=False, cancelled=False, began=0.0,
                         leg_began=0.0)
    ended = world.container.submit.work().finish_supervised(run_id, workspace(run_id), seen)
    assert (ended.status, ended.outcome, ended.terminal_source) == ("completed", "succeeded", "runner")
    assert world.store.read_text(run_id, "artifacts/response.md") == "the answer\n"
    leg = world.store.manifest(run_id).value["legs"][0]
    assert (leg["status"], leg["exit_code"], leg["artifact"]) == ("completed", 0, "artifacts/response.md")


def test_the_finisher_records_a_failure_a_timeout_a_cancel_and_a_leg_never_started(world) -> None:
    setup(world)
    cases = [
        (SupervisedEnd([], 127, False, False, 0.0, 0.0), ("failed", "failed", "provider_error")),
        (SupervisedEnd(["part"], -15, True, False, 0.0, 0.0), ("timed_out", "failed", "timeout")),
        (SupervisedEnd(["part"], -15, False, True, 0.0, 0.0), ("cancelled", "cancelled", "cancelled")),
        (SupervisedEnd([], None, False, True, 0.0, 0.0), ("cancelled", "cancelled", "cancelled")),
    ]
    for seen, expected in cases:
        run_id = submitted(world, one())
        ended = world.container.submit.work().finish_supervised(run_id, workspace(run_id), seen)
        assert (ended.status, ended.outcome, ended.reason_code) == expected, (seen, ended)


def test_a_cancel_after_a_kill_request_names_the_kill(world) -> None:
    setup(world)
    run_id = submitted(world, one())
    world.store.update(run_id, lambda r: r.evolve(kill_requested_at="2026-07-25T17:50:11.000000+00:00"))
    ended = world.container.submit.work().finish_supervised(
        run_id, workspace(run_id), SupervisedEnd([], -15, False, True, 0.0, 0.0))
    assert (ended.status, ended.reason_code) == ("cancelled", "kill_requested")


def test_a_request_rewritten_while_the_work_ran_ends_the_run_failed_and_says_why(world) -> None:
    setup(world)
    run_id = submitted(world, one())
    flow = submitted(world, (Leg("a", ModelSpec("claude", None)), Leg("b", ModelSpec("codex", None), None, ("a",))),
                     kind="flow")
    world.store.write_text(run_id, "request.json", world.store.read_text(flow, "request.json"))
    space = workspace(run_id)
    ended = world.container.submit.work().finish_supervised(run_id, space, SupervisedEnd(["x\n"], 0, False, False,
                                                                                        0.0, 0.0))
    assert (ended.status, ended.outcome, ended.reason_code) == ("failed", "failed", "request_unreadable")
    assert "li runner: the run's request changed while its work ran" in space.li_log.getvalue()
    assert space.console.getvalue() == ""  # li's line never goes into the work's console
