"""The work a run does, on both worlds: legs, artifacts and manifest first, then the end, then the hook."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable

import pytest
from dependency_injector import providers

from lionrun.application.ports import ProviderResult
from lionrun.application.work import Workspace
from lionrun.domain.ending import decide
from lionrun.domain.request import Leg, ModelSpec, RunRequest

Script = Callable[[str, "str | None"], ProviderResult]


class FakeProvider:
    """Answers from a script; remembers every prompt, model and environment it was given."""

    def __init__(self, name: str, script: Script | None = None) -> None:
        self.name = name
        self.script = script or (lambda prompt, model: ProviderResult(0, answer=f"{name}: {prompt}"))
        self.calls: list[tuple[str, str | None, dict[str, str], float | None]] = []
        self.extras: list[list[str]] = []

    def available(self) -> bool:
        return True

    def run(self, instruction, model, cwd, env, console, timeout, extra=(), idle_timeout=None) -> ProviderResult:
        self.calls.append((instruction, model, dict(env), timeout))
        self.extras.append(list(extra))
        console.write(f"running {instruction[:20]}\n")
        return self.script(instruction, model)


def setup(world, **scripts: Script) -> dict[str, FakeProvider]:
    registry = {name: FakeProvider(name, scripts.get(name)) for name in ("sh", "claude", "codex", "gemini")}
    world.container.submit.provider_registry.override(providers.Object(registry))
    return registry


def submitted(world, legs: tuple[Leg, ...], kind: str = "agent", instruction: str = "do it", **fields) -> str:
    request = RunRequest(kind=kind, instruction=instruction, legs=legs, cwd="/tmp", **fields)
    run_id = world.container.submit.submitter().submit(request).run_id
    world.store.work_artifacts_dir(run_id)  # the runner's job
    return run_id


def agent(model: str = "claude/opus") -> tuple[Leg, ...]:
    provider, _, name = model.partition("/")
    return (Leg("main", ModelSpec(provider, name or None)),)


def perform(world, run_id: str, hook=None, cancel_first: bool = False):
    """Perform the run; (the ended record, its console, its li log). The console holds the work's
    bytes alone: li's own lines go to the li log, never there."""
    work = world.container.submit.work(after_end=hook) if hook else world.container.submit.work()
    if cancel_first:
        work.cancel()
    console, li_log = io.StringIO(), io.StringIO()
    ended = work.perform(run_id, Workspace(console, {"LI_RUN_ID": run_id}, li_log))
    assert "li runner" not in console.getvalue()
    return ended, console.getvalue(), li_log.getvalue()


def manifest(world, run_id: str) -> dict:
    found = world.store.manifest(run_id)
    assert found.available, found
    return found.value


def test_an_answer_becomes_response_md_and_the_run_completes_succeeded(world) -> None:
    registry = setup(world)
    run_id = submitted(world, agent())
    ended, console, said = perform(world, run_id)
    assert (ended.status, ended.outcome, ended.reason_code, ended.exit_code) == ("completed", "succeeded", None, 0)
    assert ended.finished_at and ended.terminal_source == "runner"
    assert world.store.read_text(run_id, "artifacts/response.md") == "claude: do it"
    assert registry["claude"].calls[0][:2] == ("do it", "opus")
    assert registry["claude"].calls[0][2]["LI_LEG_ID"] == "main"
    assert registry["claude"].calls[0][2]["PWD"] == "/tmp"  # the folder it starts in, whatever PWD li had
    assert console == "running do it\n"  # the work's bytes, exactly
    assert said == "li runner: completed\n"


def test_an_agent_that_answers_nothing_is_completed_empty_and_not_a_success(world) -> None:
    setup(world, claude=lambda p, m: ProviderResult(0, answer=None))
    ended, _, _ = perform(world, submitted(world, agent("claude")))
    assert (ended.status, ended.outcome, ended.reason_code) == ("completed_empty", "failed", "no_artifacts")


def test_shell_work_that_exits_0_is_completed_whatever_it_printed(world) -> None:
    """For `sh` the exit status is the answer (`li agent sh 'sleep 2'` succeeds)."""
    setup(world, sh=lambda p, m: ProviderResult(0, answer=None))
    ended, _, _ = perform(world, submitted(world, agent("sh")))
    assert (ended.status, ended.outcome, ended.reason_code, ended.exit_code) == ("completed", "succeeded", None, 0)


def test_a_fanout_of_shell_and_an_empty_agent_leg_is_completed(world) -> None:
    setup(world, sh=lambda p, m: ProviderResult(0, answer=None), claude=lambda p, m: ProviderResult(0, answer=None))
    legs = (Leg("leg-1", ModelSpec("sh")), Leg("leg-2", ModelSpec("claude")))
    ended, _, _ = perform(world, submitted(world, legs, kind="fanout"))
    assert (ended.status, ended.outcome) == ("completed", "succeeded")


def test_a_failing_provider_fails_the_run_with_its_exit_code(world) -> None:
    setup(world, sh=lambda p, m: ProviderResult(3, answer="partial"))
    ended, _, _ = perform(world, submitted(world, agent("sh")))
    assert (ended.status, ended.outcome, ended.reason_code, ended.exit_code) == ("failed", "failed", "exit_nonzero", 3)


def test_a_provider_reporting_an_error_fails_the_run(world) -> None:
    setup(world, claude=lambda p, m: ProviderResult(0, answer="oops", is_error=True))
    ended, _, _ = perform(world, submitted(world, agent()))
    assert (ended.status, ended.reason_code) == ("failed", "provider_error")


def test_a_timed_out_leg_times_the_run_out(world) -> None:
    registry = setup(world, sh=lambda p, m: ProviderResult(-15, timed_out=True))
    ended, _, _ = perform(world, submitted(world, agent("sh"), timeout=2.5))
    assert (ended.status, ended.outcome, ended.reason_code, ended.exit_code) == ("timed_out", "failed", "timeout", 124)
    assert registry["sh"].calls[0][3] == 2.5  # the leg is given what is left of the run's timeout


def test_a_cancelled_run_is_recorded_cancelled(world) -> None:
    setup(world)
    ended, _, _ = perform(world, submitted(world, agent()), cancel_first=True)
    assert (ended.status, ended.outcome, ended.reason_code, ended.exit_code) == ("cancelled", "cancelled", "cancelled", 143)


def test_a_cancel_after_a_kill_request_names_the_kill(world) -> None:
    setup(world)
    run_id = submitted(world, agent())
    world.store.update(run_id, lambda r: r.evolve(kill_requested_at="2026-07-25T17:50:11.000000+00:00"))
    ended, _, _ = perform(world, run_id, cancel_first=True)
    assert (ended.status, ended.reason_code) == ("cancelled", "kill_requested")


def test_the_manifest_is_written_before_the_end_and_the_hook_runs_after_it(world) -> None:
    setup(world)
    run_id = submitted(world, agent())
    seen = {}
    original = world.store.update

    def watching_update(rid, change, lock_timeout=10.0):
        seen.setdefault("manifest_at_end", world.store.manifest(rid).available)
        return original(rid, change, lock_timeout)

    world.store.update = watching_update
    ended, _, _ = perform(world, run_id, hook=lambda run: seen.setdefault("hook", world.store.read(run.run_id)))
    assert seen["manifest_at_end"] is True
    assert seen["hook"].finished_at == ended.finished_at and seen["hook"].status == "completed"


def test_a_failing_hook_never_unrecords_the_end(world) -> None:
    setup(world)
    run_id = submitted(world, agent())

    def explode(run):
        raise RuntimeError("notifier down")

    ended, console, said = perform(world, run_id, hook=explode)
    assert world.store.read(run_id).status == "completed" and "notifier down" in said


def test_an_end_already_recorded_is_never_relabelled(world) -> None:
    setup(world)
    run_id = submitted(world, agent())
    world.store.update(run_id, lambda r: r.evolve(status="exited", outcome="indeterminate",
                                                  finished_at="2026-07-25T17:50:12.000000+00:00"))
    hooked = []
    ended, _, _ = perform(world, run_id, hook=hooked.append)
    assert ended is None and hooked == []
    assert world.store.read(run_id).status == "exited"


def test_an_end_the_runner_did_not_write_is_kept_but_never_silently(world) -> None:
    """Work that reached the store forged a success; the runner saw exit 3."""
    setup(world, claude=lambda prompt, model: ProviderResult(3, answer=None))
    run_id = submitted(world, agent())
    world.store.update(run_id, lambda r: r.evolve(status="completed", outcome="succeeded", exit_code=0,
                                                  terminal_source="runner",
                                                  finished_at="2026-07-25T17:50:12.000000+00:00"))
    hooked = []
    ended, console, said = perform(world, run_id, hook=hooked.append)
    assert ended is None and hooked == []
    run = world.store.read(run_id)
    assert (run.status, run.outcome, run.exit_code) == ("completed", "succeeded", 0)  # never relabelled
    assert run.runner_end is not None
    assert (run.runner_end["status"], run.runner_end["outcome"], run.runner_end["exit_code"],
            run.runner_end["reason_code"]) == ("failed", "failed", 3, "end_not_written_by_runner")
    assert run.runner_end["found"]["status"] == "completed"
    assert "did not write" in said and "did not write" not in console
    status = world.container.reads.reads().status(run_id)
    assert status["runner_end"]["exit_code"] == 3 and status["runner_end"]["found_status"] == "completed"
    perform(world, run_id)  # said once: a second attempt changes nothing
    assert world.store.read(run_id).runner_end == run.runner_end


def test_an_unreadable_request_still_ends_the_run_failed(world) -> None:
    setup(world)
    run_id = submitted(world, agent())
    world.store.write_text(run_id, "request.json", "{not json")
    ended, console, said = perform(world, run_id)
    assert (ended.status, ended.reason_code) == ("failed", "request_unreadable")
    assert manifest(world, run_id)["legs"] == []


def test_the_manifest_meters_wall_time_tokens_and_cost_where_reported(world) -> None:
    usage = {"input_tokens": 11, "output_tokens": 7, "cost_usd": 0.25}
    setup(world, claude=lambda p, m: ProviderResult(0, answer="a", usage=dict(usage)))
    run_id = submitted(world, agent())
    perform(world, run_id)
    found = manifest(world, run_id)
    assert found["legs"][0]["usage"] == usage and found["legs"][0]["artifact"] == "artifacts/response.md"
    metering = found["metering"]
    assert metering["wall_seconds"] >= 0
    assert metering["tokens"] == {"available": True, "value": {"input_tokens": 11, "output_tokens": 7},
                                  "reason_code": None, "detail": None}
    assert metering["cost_usd"]["value"] == 0.25


def test_usage_that_was_not_reported_is_unavailable_never_zero(world) -> None:
    setup(world)
    run_id = submitted(world, agent("sh"))
    perform(world, run_id)
    metering = manifest(world, run_id)["metering"]
    assert metering["tokens"]["available"] is False and metering["tokens"]["reason_code"] == "not_reported"
    assert metering["cost_usd"]["value"] is None


def test_fanout_legs_each_leave_an_artifact_and_a_manifest_entry_and_synthesis_sees_them(world) -> None:
    registry = setup(world)
    legs = (Leg("leg-1", ModelSpec("claude")), Leg("leg-2", ModelSpec("codex")))
    run_id = submitted(world, legs, kind="fanout", instruction="task", synthesize=ModelSpec("gemini"))
    ended, _, _ = perform(world, run_id)
    assert ended.status == "completed"
    assert world.store.read_text(run_id, "artifacts/leg-1.md") == "claude: task"
    assert world.store.read_text(run_id, "artifacts/leg-2.md") == "codex: task"
    synthesis_prompt = registry["gemini"].calls[0][0]
    assert "claude: task" in synthesis_prompt and "codex: task" in synthesis_prompt
    entries = manifest(world, run_id)["legs"]
    assert [(e["id"], e["artifact"]) for e in entries] == [
        ("leg-1", "artifacts/leg-1.md"), ("leg-2", "artifacts/leg-2.md"), ("synthesis", "artifacts/response.md")]


def test_a_flow_hands_upstream_answers_to_downstream_prompts(world) -> None:
    registry = setup(world)
    legs = (Leg("research", ModelSpec("claude"), "find facts"),
            Leg("write", ModelSpec("codex"), "write using {{steps.research}}", ("research",)))
    run_id = submitted(world, legs, kind="flow", instruction="steps: ...")
    ended, _, _ = perform(world, run_id)
    assert ended.status == "completed"
    assert registry["codex"].calls[0][0] == "write using claude: find facts"
    assert world.store.read_text(run_id, "artifacts/step-write.md") == "codex: write using claude: find facts"


def test_a_flow_step_whose_upstream_failed_is_skipped_and_the_run_fails(world) -> None:
    registry = setup(world, claude=lambda p, m: ProviderResult(1, answer=None))
    legs = (Leg("a", ModelSpec("claude"), "x"), Leg("b", ModelSpec("codex"), "y", ("a",)))
    run_id = submitted(world, legs, kind="flow", instruction="spec")
    ended, _, _ = perform(world, run_id)
    assert (ended.status, ended.reason_code) == ("failed", "exit_nonzero")
    assert registry["codex"].calls == []
    assert [(e["id"], e["status"], e["reason_code"]) for e in manifest(world, run_id)["legs"]] == [
        ("a", "failed", "exit_nonzero"), ("b", "skipped", "upstream_failed")]


def test_a_leg_that_raises_fails_only_as_itself(world) -> None:
    def boom(prompt, model):
        raise RuntimeError("adapter bug")

    setup(world, codex=boom)
    legs = (Leg("leg-1", ModelSpec("claude")), Leg("leg-2", ModelSpec("codex")))
    ended, _, _ = perform(world, submitted(world, legs, kind="fanout"))
    assert (ended.status, ended.reason_code) == ("failed", "leg_error")


@pytest.mark.parametrize("cancelled, error, statuses, produced, expected", [
    (True, "runner_error", ["failed"], True, "cancelled"),
    (False, "runner_error", ["completed"], True, "failed"),
    (False, None, ["completed", "timed_out", "failed"], True, "timed_out"),
    (False, None, ["completed", "failed"], True, "failed"),
    (False, None, ["completed"], False, "completed_empty"),
    (False, None, ["completed"], True, "completed"),
])
def test_the_end_is_decided_by_precedence(cancelled, error, statuses, produced, expected) -> None:
    from lionrun.application.orchestrate import LegOutcome

    outcomes = [LegOutcome(Leg(f"l{n}", ModelSpec("sh")), s, None, ProviderResult(0)) for n, s in enumerate(statuses)]
    assert decide(outcomes, cancelled, produced, error).status == expected



def test_a_kill_recorded_before_the_runner_started_cancels_the_work_unrun(world) -> None:
    registry = setup(world)
    run_id = submitted(world, agent())
    world.store.update(run_id, lambda r: r.evolve(kill_requested_at="2026-07-25T17:50:11.000000+00:00"))
    ended, _, _ = perform(world, run_id)  # no SIGTERM ever reached it: the kill came while preparing
    assert (ended.status, ended.outcome, ended.reason_code) == ("cancelled", "cancelled", "kill_requested")
    assert registry["claude"].calls == []


def _another_host_asks_to_kill(world, held: dict, seconds: float = 5.0):
    """A leg that, once running, has the kill recorded in the store (as `li job kill` on another
    host does, signalling nothing here), then runs until its work is cancelled or `seconds` pass."""

    def script(prompt: str, model: str | None) -> ProviderResult:
        world.store.update(held["run_id"], lambda r: r.evolve(kill_requested_at="2026-07-25T17:50:11.000000+00:00"))
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if held["work"].cancelled:
                held["stopped_by_cancel"] = True
                return ProviderResult(-15)
            time.sleep(0.005)
        return ProviderResult(0, answer="never stopped")

    return script


@pytest.mark.parametrize("watch", [0.02, None])
def test_a_kill_request_recorded_while_the_work_runs_cancels_it(world, watch) -> None:
    held: dict = {}
    # With the watch, the leg is stopped by the cancel (it would run 1 s, or 30 s, otherwise): the
    # leg says which, so no wall time is asserted.
    setup(world, claude=_another_host_asks_to_kill(world, held, seconds=1.0 if watch is None else 30.0))
    run_id = held["run_id"] = submitted(world, agent())
    work = held["work"] = world.container.submit.work(kill_watch=watch)
    console, li_log = io.StringIO(), io.StringIO()
    ended = work.perform(run_id, Workspace(console, {"LI_RUN_ID": run_id}, li_log))
    if watch is None:  # nobody looks at the record: the work runs to its own end (the watch is what stops it)
        assert ended.status == "completed" and "stopped_by_cancel" not in held
        return
    assert held.get("stopped_by_cancel") is True
    assert (ended.status, ended.outcome, ended.reason_code) == ("cancelled", "cancelled", "kill_requested")
    assert "li runner: a kill request is recorded; stopping the work" in li_log.getvalue()
    assert "li runner" not in console.getvalue()


def test_the_runner_watches_for_kill_requests_by_default(world) -> None:
    from lionrun.application.work import KILL_WATCH_SECONDS

    assert world.container.submit.work().kill_watch == KILL_WATCH_SECONDS <= 0.5


def test_a_run_whose_only_artifact_is_a_symlink_produced_nothing(world) -> None:
    if world.kind != "fs":
        pytest.skip("links exist only on a real filesystem")
    setup(world, claude=lambda prompt, model: ProviderResult(0, answer=None))
    run_id = submitted(world, agent())
    os.symlink("/etc", os.path.join(world.store.work_artifacts_dir(run_id), "etc-link"))
    ended, _, _ = perform(world, run_id)
    assert (ended.status, ended.reason_code) == ("completed_empty", "no_artifacts")


def test_the_meter_keeps_every_token_class_each_leg_reported(world) -> None:
    claude = {"input_tokens": 4, "output_tokens": 41, "cache_creation_input_tokens": 1840,
              "cache_read_input_tokens": 11250, "cost_usd": 0.03}
    codex = {"input_tokens": 20, "cached_input_tokens": 5, "output_tokens": 9}
    setup(world, claude=lambda p, m: ProviderResult(0, answer="a", usage=dict(claude)),
          codex=lambda p, m: ProviderResult(0, answer="b", usage=dict(codex)))
    run_id = submitted(world, agent())
    perform(world, run_id)
    assert manifest(world, run_id)["metering"]["tokens"]["value"] == {
        "input_tokens": 4, "output_tokens": 41, "cache_creation_input_tokens": 1840, "cache_read_input_tokens": 11250}
    legs = (Leg("leg-1", ModelSpec("claude")), Leg("leg-2", ModelSpec("codex")))
    run_id = submitted(world, legs, kind="fanout", instruction="task")
    perform(world, run_id)
    # a class only some legs reported would be a partial sum: only the classes every leg reported are totalled
    assert manifest(world, run_id)["metering"]["tokens"]["value"] == {"input_tokens": 24, "output_tokens": 50}


class RefusingConfiner:
    """A kernel that will not hide the store."""

    def __init__(self, why: str | None = "unshare: Operation not permitted") -> None:
        self.why = why
        self.engaged: list[str | None] = []

    def refusal(self) -> str | None:
        return self.why

    def pids_refusal(self) -> str | None:
        return None

    def engage(self, artifacts: str | None, run_id: str, protect=()) -> dict[str, str]:
        self.engaged.append(artifacts)
        return {"home": "/h", "artifacts": artifacts or ""}


def _confined_by(world, confiner: RefusingConfiner) -> None:
    world.container.submit.confiner.override(providers.Object(confiner))


@pytest.mark.parametrize("mode", ["auto", "required", "off"])
def test_the_confinement_the_work_got_is_recorded_and_a_refusal_said(world, mode: str) -> None:
    setup(world)
    confiner = RefusingConfiner()
    _confined_by(world, confiner)
    run_id = submitted(world, agent(), confine=mode)
    ended, console, said = perform(world, run_id)
    run = world.store.read(run_id)
    assert run.confinement == "none" and confiner.engaged == []
    if mode == "required":
        assert (run.status, run.reason_code) == ("failed", "confinement_refused")
        assert "li runner: not running the work" in said and console == ""
        assert world.container.submit.provider_registry()["claude"].calls == []  # never started
    else:
        assert run.status == "completed" and "li runner: the work runs unconfined" in said
        assert console == "running do it\n"
    assert run.confinement_detail == ("--confine off" if mode == "off" else "unshare: Operation not permitted")


def test_a_kernel_that_confines_hides_the_store_and_says_so(world) -> None:
    setup(world)
    confiner = RefusingConfiner(why=None)
    _confined_by(world, confiner)
    run_id = submitted(world, agent())
    perform(world, run_id)
    run = world.store.read(run_id)
    assert (run.confinement, run.confinement_detail, run.status) == ("store_hidden", None, "completed")
    assert len(confiner.engaged) == 1
    assert world.container.reads.reads().status(run_id)["confinement"] == "store_hidden"


class SetupGit:
    """The git of a run's worktree, remembering what it was asked (how its setup is confined)."""

    def __init__(self) -> None:
        self.added: list[str] = []
        self.setups: list[bool] = []

    def add(self, repository: str, path: str, branch: str, base: str) -> None:
        self.added.append(path)

    def copy_included(self, repository: str, worktree: str) -> list[str]:
        return []

    def run_setup(self, worktree, command, env, console, stopped=None, confined=True) -> int:
        self.setups.append(confined)
        return 0

    def ensure_own(self, worktree: str, repository: str, branch: str) -> None:
        return None

    def commit_all(self, worktree: str, base: str, message: str):
        from lionrun.application.ports import Committed

        return Committed(commit=None, numstat="", patch="")


@pytest.mark.parametrize(("mode", "why", "setup_confined"), [
    ("auto", None, True), ("off", None, False), ("auto", "unshare: Operation not permitted", True)])
def test_a_worktree_setup_is_confined_as_the_work_is(world, mode: str, why: str | None,
                                                     setup_confined: bool) -> None:
    from lionrun.domain.worktree import WorktreePlan

    setup(world)
    confiner, git = RefusingConfiner(why), SetupGit()
    _confined_by(world, confiner)
    world.container.core.git.override(providers.Object(git))
    run_id = submitted(world, agent(), confine=mode, worktree=WorktreePlan("/r", "/r/.git", "a" * 40, setup="make"))
    perform(world, run_id)
    run = world.store.read(run_id)
    assert run.status == "completed" and len(git.added) == 1
    # the setup runs under the decision already taken for the work (git hides the store where it can)
    assert git.setups == [setup_confined] and run.confinement == ("store_hidden" if why is None and mode != "off"
                                                                  else "none")


def test_a_required_confinement_the_kernel_refuses_makes_no_worktree_and_runs_no_setup(world) -> None:
    from lionrun.domain.worktree import WorktreePlan

    setup(world)
    git = SetupGit()
    _confined_by(world, RefusingConfiner())
    world.container.core.git.override(providers.Object(git))
    run_id = submitted(world, agent(), confine="required",
                       worktree=WorktreePlan("/r", "/r/.git", "a" * 40, setup="make"))
    ended, console, said = perform(world, run_id)
    run = world.store.read(run_id)
    assert (run.status, run.reason_code) == ("failed", "confinement_refused"), said
    assert git.added == [] and git.setups == [] and run.worktree is None
