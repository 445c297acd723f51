"""Steps for a run's worktree changes under D7: `li job diff`'s patch and files."""

from __future__ import annotations

from typing import Any

from pytest_bdd import given, parsers, then, when

from lionrun.domain.worktree import NO_CHANGES, Changes, Worktree
from tests.builders import end
from tests.steps.reads_steps import ReadsContext

SHA = "c" * 40
PATCH = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n one\n+two\n"
DIFFS: dict[str, dict[str, Any]] = {}


@given(parsers.re(r'a run "(?P<name>[^"]+)" that ended with a worktree whose work (?P<state>left a patch|'
                  r'left a patch that is missing|left nothing)'))
def _ended_in_worktree(reads_ctx: ReadsContext, name: str, state: str) -> None:
    run = reads_ctx.live(name)
    store = reads_ctx.world.store
    end(store, run.run_id, "completed", "succeeded", now=reads_ctx.world.clock.now())
    changes = NO_CHANGES if state == "left nothing" else Changes(SHA, 1, 1, 0, "changes.patch")
    worktree = Worktree("/repo", "b" * 40, f"li/{run.run_id}", f"/repo/.git/li-worktrees/{run.run_id}")
    store.update(run.run_id, lambda current: current.evolve(worktree=worktree, changes=changes))
    if state == "left a patch":
        store.write_text(run.run_id, "artifacts/changes.patch", PATCH)


@when(parsers.parse('the diff answer for "{name}" is read'))
def _read_diff(reads_ctx: ReadsContext, name: str) -> None:
    DIFFS[name] = reads_ctx.world.container.upkeep.reviews().diff(reads_ctx.ids[name])


@then(parsers.parse('the diff answer\'s patch and files are unavailable with reason "{reason}" and a detail'))
def _diff_unavailable(reads_ctx: ReadsContext, reason: str) -> None:
    answer = next(iter(DIFFS.values()))
    for field in ("patch", "files"):
        got = answer[field]
        assert (got["available"], got["value"], got["reason_code"]) == (False, None, reason), answer
        assert isinstance(got["detail"], str) and got["detail"]
    DIFFS.clear()


@then(parsers.parse('the diff answer\'s patch is available with value "" and its files with value []'))
def _diff_empty(reads_ctx: ReadsContext) -> None:
    answer = next(iter(DIFFS.values()))
    assert (answer["patch"]["available"], answer["patch"]["value"]) == (True, "")
    assert (answer["files"]["available"], answer["files"]["value"]) == (True, [])
    DIFFS.clear()


@then("the diff answer's patch is the patch and its files count its lines")
def _diff_kept(reads_ctx: ReadsContext) -> None:
    answer = next(iter(DIFFS.values()))
    assert answer["patch"] == {"available": True, "value": PATCH, "reason_code": None, "detail": None}
    assert answer["files"]["value"] == [{"path": "a.txt", "insertions": 1, "deletions": 0}]
    assert answer["changes"]["commit"] == SHA and answer["recovered"] is False
    DIFFS.clear()
