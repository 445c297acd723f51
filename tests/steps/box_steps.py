"""Steps for issue 36's reason codes and fields (the work stays in its box): a cwd in the store
refused at submit (`cwd_in_store`), a kept patch that is not the branch never applied
(`patch_differs`), and where the work's processes ran (`processes`) and what of the repository's
shared git files it changed (`repository_changes`) on status."""

from __future__ import annotations

import json
import os
import subprocess
from typing import TYPE_CHECKING, Any

import pytest
from pytest_bdd import given, parsers, then, when

from tests.builders import end
from tests.support import machine

if TYPE_CHECKING:  # the step modules are plugins: imported here, one would not be assertion-rewritten
    from tests.steps.reads_steps import ReadsContext


def _home(ctx: dict[str, Any]) -> str:
    """The store of a D5 scenario (submit_steps' `_home`: the same folder)."""
    home = ctx.setdefault("home", str(ctx["tmp"] / "li-home-d05"))
    os.makedirs(home, exist_ok=True)
    return home


@pytest.fixture
def box_ctx(tmp_path: Any) -> dict[str, Any]:
    """What one of issue 36's scenarios learned along the way."""
    return {"tmp": tmp_path}


def _git(where: str, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p",
           "GIT_COMMITTER_EMAIL": "p@x", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=where, env=env, check=True, capture_output=True, text=True).stdout


# --- cwd_in_store (D5.4, D3.3) ---------------------------------------------------------------------


@when("a program submits with its cwd inside the store through a link")
def _submit_into_store(submit_ctx: dict[str, Any]) -> None:
    home = _home(submit_ctx)
    link = submit_ctx["tmp"] / "innocent-looking"
    os.symlink(home, link)
    submit_ctx["result"] = machine("agent", "--detach", "--cwd", str(link), "sh", "true", home=home)


@then(parsers.parse('the submit is refused: kind "{kind}", reason "{reason}"'))
def _refused_with_reason(submit_ctx: dict[str, Any], kind: str, reason: str) -> None:
    error = submit_ctx["result"].error
    assert (error["kind"], (error["detail"] or {}).get("reason_code")) == (kind, reason), error


# --- processes and repository_changes on status (D4.6) ---------------------------------------------


@given(parsers.parse('a run "{name}" that ended succeeded with its processes recorded as "{recorded}"'))
def _ended_with_processes(reads_ctx: ReadsContext, name: str, recorded: str) -> None:
    run = reads_ctx.live(name)
    store = reads_ctx.world.store
    end(store, run.run_id, "completed", "succeeded", now=reads_ctx.world.clock.now())
    detail = "the kernel made no PID namespace" if recorded != "pid_namespace" else None
    store.update(run.run_id, lambda current: current.evolve(processes=recorded, processes_detail=detail))


@then(parsers.parse('the status answer says processes {shown} and outcome "{outcome}"'))
def _status_processes(reads_ctx: ReadsContext, shown: str, outcome: str) -> None:
    answer = next(iter(reads_ctx.status.values()))
    assert (answer["processes"], answer["outcome"]) == (json.loads(shown), outcome), answer
    if answer["processes"] == "shared":
        assert answer["processes_detail"], answer  # why it shared the host's
    elif answer["processes"] == "pid_namespace":
        assert answer["processes_detail"] is None, answer


@given(parsers.parse('a run "{name}" that ended succeeded with repository changes {recorded}'))
def _ended_with_repository_changes(reads_ctx: ReadsContext, name: str, recorded: str) -> None:
    run = reads_ctx.live(name)
    store = reads_ctx.world.store
    end(store, run.run_id, "completed", "succeeded", now=reads_ctx.world.clock.now())
    store.update(run.run_id, lambda current: current.evolve(repository_changes=json.loads(recorded)))


@then(parsers.parse('the status answer says repository_changes {shown} and outcome "{outcome}"'))
def _status_repository_changes(reads_ctx: ReadsContext, shown: str, outcome: str) -> None:
    answer = next(iter(reads_ctx.status.values()))
    assert (answer["repository_changes"], answer["outcome"]) == (json.loads(shown), outcome), answer


@when(parsers.parse('li runs the shell work "{work}" and the run ends'))
def _li_runs(box_ctx: dict[str, Any], work: str) -> None:
    home = str(box_ctx["tmp"] / "li-home-box")
    os.makedirs(home)
    run_id = machine("agent", "--detach", "sh", work, home=home).data["run_id"]
    waited = machine("job", "wait", run_id, "--max-wait", "30", "--poll-interval", "0.1", home=home).data
    assert waited["all_terminal"] is True, waited
    box_ctx["status"] = machine("job", "status", run_id, home=home).data


@then('the run\'s status says processes "pid_namespace" or "shared", with a detail only for "shared"')
def _processes_said(box_ctx: dict[str, Any]) -> None:
    status = box_ctx["status"]
    assert status["outcome"] == "succeeded", status
    assert status["processes"] in ("pid_namespace", "shared"), status
    assert bool(status["processes_detail"]) == (status["processes"] == "shared"), status


# --- patch_differs (D7.2, D3.3) ----------------------------------------------------------------------


@given("a worktree run that ended, whose kept patch was changed after its end")
def _patch_changed(box_ctx: dict[str, Any]) -> None:
    tmp = box_ctx["tmp"]
    home, repo = str(tmp / "li-home-apply"), str(tmp / "repo")
    os.makedirs(home)
    os.makedirs(repo)
    _git(repo, "init", "-q", "-b", "main")
    with open(os.path.join(repo, "shared.txt"), "w", encoding="utf-8") as handle:
        handle.write("one\n")
    _git(repo, "add", "shared.txt")
    _git(repo, "commit", "-qm", "init")
    run_id = machine("agent", "--detach", "--worktree", "sh", "echo reviewed >> shared.txt",
                     home=home, cwd=repo).data["run_id"]
    machine("job", "wait", run_id, "--max-wait", "30", "--poll-interval", "0.1", home=home)
    status = machine("job", "status", run_id, home=home).data
    assert status["outcome"] == "succeeded" and status["changes"]["files"] == 1, status
    kept = os.path.join(home, "runs", run_id, "artifacts", status["changes"]["patch_artifact"])
    with open(kept, encoding="utf-8") as handle:
        patch = handle.read()
    with open(kept, "w", encoding="utf-8") as handle:  # says less than the branch holds
        handle.write(patch.replace("+reviewed", "+reviewed-but-not-this"))
    box_ctx.update(home=home, repo=repo, run_id=run_id)


@when("its changes are applied to a clean checkout of the repository")
def _apply(box_ctx: dict[str, Any]) -> None:
    target = str(box_ctx["tmp"] / "target")
    _git(box_ctx["repo"], "worktree", "add", "-q", "--detach", target, "main")
    box_ctx["target"] = target
    box_ctx["result"] = machine("job", "apply", box_ctx["run_id"], home=box_ctx["home"], cwd=target)


@then(parsers.parse('the apply is refused with kind "{kind}" and reason "{reason}"'))
def _apply_refused(box_ctx: dict[str, Any], kind: str, reason: str) -> None:
    error = box_ctx["result"].error
    assert error is not None, box_ctx["result"].envelope
    assert (error["kind"], error["detail"]["reason_code"]) == (kind, reason), error


@then("the clean checkout is unchanged")
def _unchanged(box_ctx: dict[str, Any]) -> None:
    assert _git(box_ctx["target"], "status", "--porcelain") == ""
    with open(os.path.join(box_ctx["target"], "shared.txt"), encoding="utf-8") as handle:
        assert handle.read() == "one\n"
