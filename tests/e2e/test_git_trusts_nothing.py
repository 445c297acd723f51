"""Through the real `li` on real repositories: li's own git trusts nothing the
work left in its worktree or in the repository's config.

- a work that puts a link to the person's checkout in place of its worktree gets nothing
  committed anywhere (the person's `main` and uncommitted changes untouched), and its changes are
  reported unavailable with the reason;
- a work that plants `diff.external`, a textconv or a diff driver cannot make `li job diff` show a
  decoy: the diff is the branch's true content, and `li job apply` applies those very bytes;
- a kept patch that is not what the branch holds is never applied;
- a planted `core.fsmonitor`, filter or hook never runs under li's git.

The runs that plant config are `--confine off`: a confined work cannot write the repository's
config at all (item 4, tests/e2e/test_shared_git_read_only.py), and li's git must trust nothing
where that protection is missing too.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from lionrun.adapters import confinement
from tests.e2e.test_worktrees_cli import console, ended, git, li, repo, said, submit

__all__ = ["repo"]  # the fixture, used by name

SUPERVISORS = ["lean", "full"]


@pytest.fixture(autouse=True)
def _confines(li_home: str) -> None:
    why = confinement.probe(li_home)
    if why is not None:
        pytest.fail(why) if os.environ.get("CI") == "true" else pytest.skip(why)


def canary_script(tmp_path: Any, name: str) -> tuple[str, str]:
    """A program a hostile config names: notes each run in `canary`, passes its input through."""
    canary = str(tmp_path / f"{name}-ran")
    script = tmp_path / f"{name}.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {canary}\ncat 2>/dev/null\nexit 0\n')
    script.chmod(stat.S_IRWXU)
    return str(script), canary


@pytest.mark.parametrize("supervisor", SUPERVISORS)
def test_a_worktree_replaced_by_a_link_to_the_checkout_gets_nothing_committed(
        li_home: str, repo: str, supervisor: str) -> None:
    with open(os.path.join(repo, "shared.txt"), "a") as handle:
        handle.write("the person's own uncommitted line\n")
    main_before = git(repo, "rev-parse", "main")
    run_id = submit(li_home, repo, "sh", f"""
        wt=$PWD
        echo stolen > taken.txt
        cd / && rm -rf "$wt" && ln -s {repo} "$wt" && echo REPLACED
    """, "--worktree", LI_SUPERVISOR=supervisor)
    data = ended(li_home, run_id)
    assert "REPLACED" in console(li_home, run_id)
    assert data["changes"] is None, data
    assert git(repo, "rev-parse", "main") == main_before  # nothing committed on the person's branch
    assert git(repo, "log", "-1", "--format=%an", "main").strip() == "p"
    assert "the person's own uncommitted line" in git(repo, "diff")  # still the person's, uncommitted
    assert "li's own" in said(li_home, run_id), said(li_home, run_id)
    diff = li(li_home, repo, "job", "diff", run_id)
    assert diff["ok"] is True, diff
    patch = diff["data"]["patch"]
    assert patch["available"] is False and patch["reason_code"] == "not_committed", patch
    assert "no longer li's own" in patch["detail"], patch
    assert git(repo, "rev-parse", "main") == main_before
    assert git(repo, "rev-parse", f"li/{run_id}") == git(repo, "rev-parse", "HEAD")  # its branch: no commit


@pytest.mark.parametrize("plant", ["external", "textconv", "driver"])
def test_a_planted_diff_program_shows_no_decoy_and_apply_applies_what_diff_showed(
        li_home: str, repo: str, tmp_path: Any, plant: str) -> None:
    decoy, ran = canary_script(tmp_path, "decoy")
    how = {
        "external": f"git config diff.external {decoy}",
        "textconv": f"git config diff.decoy.textconv {decoy} && "
                    f"printf '*.py diff=decoy\\n' >> \"$(git rev-parse --git-common-dir)/info/attributes\"",
        "driver": f"git config diff.decoy.command {decoy} && "
                  f"printf '*.py diff=decoy\\n' >> \"$(git rev-parse --git-common-dir)/info/attributes\"",
    }[plant]
    run_id = submit(li_home, repo, "sh", f"""
        mkdir -p "$(git rev-parse --git-common-dir)/info"
        {how}
        printf 'def harmless():\\n    pass\\n' > tool.py
        printf 'def steal_keys():\\n    pass\\n' >> tool.py
    """, "--worktree", "--confine", "off")  # a run whose repository li could not keep read-only
    assert ended(li_home, run_id)["outcome"] == "succeeded", console(li_home, run_id)
    diff = li(li_home, repo, "job", "diff", run_id)
    shown = diff["data"]["patch"]["value"]
    assert "steal_keys" in shown and "+def harmless" in shown, shown
    assert not os.path.exists(ran), Path(ran).read_text()  # li's git never ran the planted program
    target = tmp_path / "target"
    git(repo, "worktree", "add", "-q", "--detach", str(target), "main")
    applied = li(li_home, str(target), "job", "apply", run_id)
    assert applied["ok"] is True, applied
    assert (target / "tool.py").read_text() == "def harmless():\n    pass\ndef steal_keys():\n    pass\n"
    assert not os.path.exists(ran)


def test_a_kept_patch_that_is_not_the_branch_is_never_applied(li_home: str, repo: str, tmp_path: Any) -> None:
    run_id = submit(li_home, repo, "sh", "echo reviewed >> shared.txt", "--worktree")
    data = ended(li_home, run_id)
    kept = os.path.join(li_home, "runs", run_id, "artifacts", data["changes"]["patch_artifact"])
    with open(kept) as handle:
        true_patch = handle.read()
    with open(kept, "w") as handle:  # a patch that says less than the branch holds
        handle.write(true_patch.replace("+reviewed", "+reviewed-but-not-this"))
    target = tmp_path / "target"
    git(repo, "worktree", "add", "-q", "--detach", str(target), "main")
    refused = li(li_home, str(target), "job", "apply", run_id)
    assert refused["ok"] is False and refused["error"]["detail"]["reason_code"] == "patch_differs", refused
    assert git(str(target), "status", "--porcelain") == ""  # nothing applied


@pytest.mark.parametrize("supervisor", SUPERVISORS)
def test_a_planted_monitor_filter_and_hook_never_run_under_lis_git(
        li_home: str, repo: str, tmp_path: Any, supervisor: str) -> None:
    evil, ran = canary_script(tmp_path, "evil")
    run_id = submit(li_home, repo, "sh", f"""
        git config core.fsmonitor {evil}
        git config filter.evil.clean '{evil} clean'
        git config filter.evil.process '{evil} process'
        git config core.pager {evil}
        git config pager.diff {evil}
        printf '* filter=evil\\n' > .gitattributes
        git config core.hooksPath "$PWD/hooks" 2>/dev/null
        mkdir -p hooks && cp {evil} hooks/pre-commit && cp {evil} hooks/post-commit
        echo changed >> shared.txt
    """, "--worktree", "--confine", "off", LI_SUPERVISOR=supervisor)  # the repository not kept read-only
    data = ended(li_home, run_id)
    assert data["outcome"] == "succeeded" and data["changes"]["files"] >= 2, (data, said(li_home, run_id))
    assert not os.path.exists(ran), Path(ran).read_text()  # not at li's commit
    for argv in (("job", "diff", run_id), ("job", "status", run_id)):
        assert li(li_home, repo, *argv)["ok"] is True
    assert "changed" in json.dumps(li(li_home, repo, "job", "diff", run_id)["data"])
    target = tmp_path / "target"
    git(repo, "-c", "core.fsmonitor=false", "-c", "filter.evil.process=", "-c", "filter.evil.clean=",
        "worktree", "add", "-q", "--detach", str(target), "main")
    assert li(li_home, str(target), "job", "apply", run_id)["ok"] is True  # li's apply, in the shared config
    assert not os.path.exists(ran), Path(ran).read_text()
