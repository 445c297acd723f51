"""A worktree per leg of a run of several legs (orchestrate): values and rules, pure,
and the runner's worktree service on fakes."""

from __future__ import annotations

from typing import Any

import pytest

from lionrun.application.worktrees import RunWorktrees, worktree_legs
from lionrun.domain.request import Leg, RunRequest, parse_model
from lionrun.domain.run import RecordUnusable, Run
from lionrun.domain.worktree import (
    Changes,
    LegWorktree,
    Worktree,
    WorktreePlan,
    commit_message,
    patch_artifact_for,
    several_legs_refusal,
    with_leg_changes,
)

RUN = "20261204T021044-855647"
SHA = "a" * 40
SUBMITTED = "2026-12-04T02:10:44.000000+00:00"


def leg_worktree(leg: str, changes: Changes | None = None) -> LegWorktree:
    return LegWorktree(leg, Worktree("/r", SHA, f"li/{RUN}.{leg}", f"/r/.git/li-worktrees/{RUN}.{leg}"), changes)


def test_each_legs_patch_has_its_own_artifact_and_its_commit_names_the_leg() -> None:
    assert patch_artifact_for() == "changes.patch"
    assert patch_artifact_for("leg-2") == "changes-leg-2.patch"
    assert commit_message(RUN, "fix it", "failed", "leg-2").splitlines()[0] == f"li run {RUN} leg-2 fix it"
    assert "leg leg-2 of run" in commit_message(RUN, None, None, "leg-2")
    assert commit_message(RUN, "fix it") == commit_message(RUN, "fix it", None, None)  # one worktree: as before


def test_a_record_keeps_each_legs_worktree_and_changes_and_an_older_record_has_none() -> None:
    run = Run(run_id=RUN, kind="fanout", status="completed", submitted_at=SUBMITTED, spawn_state="started",
              leg_worktrees=[leg_worktree("leg-1", Changes(SHA, 1, 1, 0, "changes-leg-1.patch")),
                             leg_worktree("leg-2")])
    again = Run.from_dict(run.to_dict())
    assert again == run and again.worktree is None and again.changes is None
    older = run.to_dict()
    del older["leg_worktrees"]
    assert Run.from_dict(older).leg_worktrees is None


@pytest.mark.parametrize("value", [[{"leg": "", "worktree": {"repository": "/r", "base_commit": SHA, "branch": "b",
                                                              "path": "/p"}}], [{"leg": "leg-1"}], {"leg": "x"}])
def test_a_record_with_malformed_leg_worktrees_is_unusable(value: object) -> None:
    data = Run(run_id=RUN, kind="fanout", status="running", submitted_at=SUBMITTED, spawn_state="started").to_dict()
    data["leg_worktrees"] = value
    with pytest.raises(RecordUnusable):
        Run.from_dict(data)


def test_a_legs_changes_are_recorded_once_and_only_on_that_leg() -> None:
    first, later = Changes(SHA, 1, 1, 0, "changes-leg-2.patch"), Changes("b" * 40, 2, 2, 0, "changes-leg-2.patch")
    entries = [leg_worktree("leg-1"), leg_worktree("leg-2")]
    recorded = with_leg_changes(entries, "leg-2", first)
    assert recorded is not None and [e.changes for e in recorded] == [None, first]
    assert with_leg_changes(recorded, "leg-2", later) is None  # the first commit recorded stays
    assert with_leg_changes(entries, "leg-9", first) is None


def test_the_refusal_without_leg_is_one_line_naming_the_legs() -> None:
    line = several_legs_refusal("apply", RUN, ["leg-1", "leg-2"])
    assert "\n" not in line and f"li job apply {RUN} --leg LEG" in line and "leg-1, leg-2" in line


def request(legs: int, synthesize: bool = False, reuse: Worktree | None = None) -> RunRequest:
    plan = WorktreePlan("/r", "/r/.git", SHA, reuse=reuse)
    return RunRequest(kind="fanout", instruction="x", cwd="/r", worktree=plan,
                      legs=tuple(Leg(f"leg-{n}", parse_model("sh")) for n in range(1, legs + 1)),
                      synthesize=parse_model("claude") if synthesize else None)


def test_every_leg_of_a_run_of_several_gets_a_worktree_a_run_of_one_keeps_its_one() -> None:
    assert worktree_legs(request(2)) == ["leg-1", "leg-2"]
    assert worktree_legs(request(1, synthesize=True)) == ["leg-1", "synthesis"]  # the synthesis edits too
    assert worktree_legs(request(1)) == []
    assert worktree_legs(RunRequest(kind="fanout", instruction="x", cwd="/r",
                                    legs=(Leg("leg-1", parse_model("sh")), Leg("leg-2", parse_model("sh"))))) == []


class FakeGit:
    def __init__(self, fail_on: str | None = None) -> None:
        self.added: list[tuple[str, str, str]] = []
        self.setups: list[str] = []
        self.fail_on = fail_on

    def add(self, repository: str, path: str, branch: str, base: str) -> None:
        from lionrun.application.ports import GitRefused

        if self.fail_on is not None and path.endswith(self.fail_on):
            raise GitRefused("no room")
        self.added.append((path, branch, base))

    def copy_included(self, repository: str, worktree: str) -> list[str]:
        return [".env"]

    def run_setup(self, worktree: str, command: str, env: Any, console: Any, stopped: Any = None,
                  confined: bool = True) -> int:
        self.setups.append(worktree)
        return 0


class FakeStore:
    def __init__(self, run: Run) -> None:
        self.run = run

    def update(self, run_id: str, change: Any, timeout: float | None = None) -> Run | None:
        changed = change(self.run)
        if changed is not None:
            self.run = changed
        return changed


def test_prepare_makes_records_and_sets_up_one_worktree_per_leg_from_one_base() -> None:
    from msgspec.structs import replace

    run = Run(run_id=RUN, kind="fanout", status="running", submitted_at=SUBMITTED, spawn_state="started")
    git, store, said = FakeGit(), FakeStore(run), []
    asked = request(2)
    asked = replace(asked, worktree=replace(asked.worktree, setup="make"))
    prepared = RunWorktrees(git, store, None).prepare(RUN, asked, {}, None, said.append)  # type: ignore[arg-type]
    assert [(p.rsplit("/", 1)[1], b, base) for p, b, base in git.added] == [
        (f"{RUN}.leg-1", f"li/{RUN}.leg-1", SHA), (f"{RUN}.leg-2", f"li/{RUN}.leg-2", SHA)]
    assert git.setups == [p for p, _, _ in git.added]
    assert prepared.worktree is None and prepared.request.cwd == "/r"
    assert prepared.cwd_of("leg-2") == f"/r/.git/li-worktrees/{RUN}.leg-2"
    assert [e.leg for e in store.run.leg_worktrees or []] == ["leg-1", "leg-2"] and store.run.worktree is None
    assert any("copied from .worktreeinclude of leg-2" in line for line in said)


def test_a_legs_worktree_that_cannot_be_made_is_a_failed_start_naming_the_leg() -> None:
    from lionrun.application.worktrees import WorktreeFailed

    run = Run(run_id=RUN, kind="fanout", status="running", submitted_at=SUBMITTED, spawn_state="started")
    store = FakeStore(run)
    with pytest.raises(WorktreeFailed) as failed:
        RunWorktrees(FakeGit(fail_on=".leg-2"), store, None).prepare(  # type: ignore[arg-type]
            RUN, request(2), {}, None, lambda text: None)
    assert failed.value.reason_code == "worktree_failed" and "of leg-2" in failed.value.detail
    assert [e.leg for e in store.run.leg_worktrees or []] == ["leg-1"]  # what was made is recorded, for prune
