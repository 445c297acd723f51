"""Through the real `li`: in a confined worktree run, the person's repository's
shared `.git/config`, `.git/hooks/` and `.git/info/` are read-only to the work (bind mounts in the
work's own mount namespace), as root and as an unprivileged user, on both supervisors; the work's
own git (status, add, commit in its worktree) still works, and li's commit too."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_cwd_into_the_store import USERS, setup_user, top
from tests.e2e.test_worktrees_cli import FAKES

__all__ = ["top"]  # the fixture, used by name

SUPERVISORS = ["lean", "full"]

PLANT = """
    common=$(git rev-parse --path-format=absolute --git-common-dir)
    git config core.fsmonitor "$common/../planted.sh" 2>/dev/null && echo CONFIG-WRITTEN || echo CONFIG-REFUSED
    echo 'echo hooked' > "$common/hooks/pre-commit" 2>/dev/null && echo HOOK-WRITTEN || echo HOOK-REFUSED
    echo '* filter=evil' >> "$common/info/attributes" 2>/dev/null && echo INFO-WRITTEN || echo INFO-REFUSED
    rm -f "$common/config" 2>/dev/null; mv "$common/info" "$common/info2" 2>/dev/null
    echo work >> shared.txt && git add shared.txt && git commit -qm 'by the work' && echo OWN-COMMIT
    echo more >> shared.txt
"""


def git(repo: Path, *args: str, uid: int | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p",
           "GIT_COMMITTER_EMAIL": "p@x", "HOME": str(repo.parent)}
    extra = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True,
                          **extra).stdout  # type: ignore[call-overload,no-any-return]


def repository(top: Path, uid: int | None) -> Path:
    """A repository of one commit (`shared.txt`) at top/repo, owned by `uid` (None: this user)."""
    repo = top / "repo"
    repo.mkdir()
    if uid is not None:
        os.chown(repo, uid, uid)
    git(repo, "init", "-q", "-b", "main", uid=uid)
    (repo / "shared.txt").write_text("one\n")
    if uid is not None:
        os.chown(repo / "shared.txt", uid, uid)
    git(repo, "add", "shared.txt", uid=uid)
    git(repo, "commit", "-qm", "init", uid=uid)
    return repo


def work_env(supervisor: str) -> dict[str, str]:
    """The environment of a li that runs work under `supervisor`, with the fake agent CLIs first."""
    return {"LI_SUPERVISOR": supervisor, "PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}",
            "GIT_AUTHOR_NAME": "w", "GIT_AUTHOR_EMAIL": "w@x", "GIT_COMMITTER_NAME": "w",
            "GIT_COMMITTER_EMAIL": "w@x"}


@pytest.mark.parametrize("supervisor", SUPERVISORS)
@pytest.mark.parametrize("uid", USERS)
def test_the_shared_config_hooks_and_info_are_read_only_to_a_confined_work(
        top: Path, uid: int | None, supervisor: str) -> None:
    li = setup_user(top, uid)
    repo = repository(top, uid)
    shared = {name: (repo / ".git" / name) for name in ("config", "hooks", "info")}
    before = {name: sorted(os.listdir(path)) if path.is_dir() else path.read_bytes()
              for name, path in shared.items()}
    env = work_env(supervisor)
    run_id = li("agent", "--detach", "--worktree", "sh", PLANT, cwd=repo, env=env)["data"]["run_id"]
    data = li.ended(run_id)
    said = li.console(run_id)
    assert data["confinement"] == "store_hidden" and data["outcome"] == "succeeded", (data, said)
    for refused in ("CONFIG-REFUSED", "HOOK-REFUSED", "INFO-REFUSED", "OWN-COMMIT"):
        assert refused in said, said
    after = {name: sorted(os.listdir(path)) if path.is_dir() else path.read_bytes()
             for name, path in shared.items()}
    assert after == before
    assert b"fsmonitor" not in shared["config"].read_bytes()
    assert data["changes"]["commit"] is not None and data["changes"]["files"] == 1, data  # li's commit still works
    assert "by the work" in git(repo, "log", "--format=%s", f"li/{run_id}", uid=uid)
