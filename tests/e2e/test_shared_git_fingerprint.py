"""Through the real `li`: where the person's repository's shared
`.git/config`, `.git/hooks/` and `.git/info/` cannot be made read-only to the work (a worktree run
with `--confine off`), li fingerprints them before the work and compares after it: a change is
named on the run's status (`repository_changes`) and its human view, and `li doctor` warns of the
run; a run that changed nothing names nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_cwd_into_the_store import USERS, Li, setup_user, top
from tests.e2e.test_shared_git_read_only import SUPERVISORS, repository, work_env
from tests.e2e.test_worktrees_cli import FAKES

__all__ = ["top"]  # the fixture, used by name

PLANT = """
    common=$(git rev-parse --path-format=absolute --git-common-dir)
    git config core.fsmonitor "$common/../planted.sh" && echo CONFIG-WRITTEN
    echo 'echo hooked' > "$common/hooks/pre-commit" && chmod +x "$common/hooks/pre-commit" && echo HOOK-WRITTEN
    echo work >> shared.txt
"""

QUIET = """
    common=$(git rev-parse --path-format=absolute --git-common-dir)
    cat "$common/config" > /dev/null && git status --short > /dev/null && echo work >> shared.txt && echo LOOKED
"""


def submit(li: Li, repo: Path, script: str, supervisor: str) -> str:
    env = work_env(supervisor)
    run_id: str = li("agent", "--detach", "--worktree", "--confine", "off", "sh", script,
                     cwd=repo, env=env)["data"]["run_id"]
    return run_id


def doctor_check(li: Li) -> dict[str, object]:
    checks = li("doctor")["data"]["checks"]
    found: dict[str, object] = next(c for c in checks if c["name"] == "work.repo_changes")
    return found


def human_status(li: Li, run_id: str) -> str:
    full = {**os.environ, "LI_HOME": str(li.home), "NO_COLOR": "1"}
    extra = {} if li.uid is None else {"user": li.uid, "group": li.uid, "extra_groups": []}
    return subprocess.run([li.executable, "job", "status", run_id], capture_output=True, text=True, env=full,
                          cwd="/", timeout=60, check=True, **extra).stdout  # type: ignore[call-overload,no-any-return]


@pytest.mark.parametrize("supervisor", SUPERVISORS)
@pytest.mark.parametrize("uid", USERS)
def test_a_planted_fsmonitor_and_hook_are_named_on_status_and_by_doctor(
        top: Path, uid: int | None, supervisor: str) -> None:
    li = setup_user(top, uid)
    repo = repository(top, uid)
    run_id = submit(li, repo, PLANT, supervisor)
    data = li.ended(run_id)
    said = li.console(run_id)
    assert data["confinement"] == "none" and data["outcome"] == "succeeded", (data, said)
    assert "CONFIG-WRITTEN" in said and "HOOK-WRITTEN" in said, said
    assert b"fsmonitor" in (repo / ".git" / "config").read_bytes()  # the work could: nothing kept it out
    assert data["repository_changes"] == ["config", "hooks/pre-commit"], data
    assert "config, hooks/pre-commit" in human_status(li, run_id)
    check = doctor_check(li)
    assert check["ok"] is False and check["severity"] == "warning", check
    assert run_id in str(check["detail"]), check


@pytest.mark.parametrize("uid", USERS)
def test_a_run_that_changed_nothing_names_nothing(top: Path, uid: int | None) -> None:
    li = setup_user(top, uid)
    repo = repository(top, uid)
    run_id = submit(li, repo, QUIET, "lean")
    data = li.ended(run_id)
    said = li.console(run_id)
    assert data["confinement"] == "none" and "LOOKED" in said, (data, said)
    assert data["repository_changes"] == [], data  # compared, and nothing changed
    assert data["changes"]["files"] == 1, data  # the worktree's own changes are no repository change
    assert "CHANGED" not in human_status(li, run_id)
    check = doctor_check(li)
    assert check["ok"] is True, check


@pytest.mark.parametrize("uid", USERS)
def test_a_confined_run_compares_nothing(top: Path, uid: int | None) -> None:
    li = setup_user(top, uid)
    repo = repository(top, uid)
    env = {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}"}
    run_id = li("agent", "--detach", "--worktree", "sh", QUIET, cwd=repo, env=env)["data"]["run_id"]
    data = li.ended(run_id)
    assert data["confinement"] == "store_hidden" and data["repository_changes"] is None, data
