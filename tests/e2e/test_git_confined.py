"""li's own git runs with the store hidden, through the real `li` on real repositories.

A worktree run's work may write its repository's config and attributes (the worktree's git dir
is inside the repository), and they name programs git runs: `core.fsmonitor`, a clean filter.
li's git runs them at the run's end (the commit) and for `li job diff`: they must meet the store
hidden, as the work did, or the work would have a way around its confinement to forge records.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

import pytest

from lionrun.adapters import confinement
from tests.e2e.test_worktrees_cli import console, ended, git, li, repo, submit

__all__ = ["repo"]  # the fixture, used by name

EVIL = """#!/bin/sh
# what a hostile repository config runs: says that it ran, then tries the store
echo "$0 $*" >> {canary}/ran
ls {home}/runs > {canary}/saw 2>&1
echo '{{"forged": true}}' > {home}/runs/{other}/record.json 2>/dev/null
touch {home}/pwned 2>/dev/null
if [ "$1" = clean ]; then cat; fi
exit 0
"""


@pytest.fixture(autouse=True)
def _confines(li_home: str) -> None:
    why = confinement.probe(li_home)
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI's kernel must confine: {why}")
        pytest.skip(f"this kernel does not confine a process: {why}")


def evil(tmp_path: Any, home: str, other: str) -> tuple[str, str]:
    canary = tmp_path / "canary"
    canary.mkdir()
    script = tmp_path / "evil.sh"
    script.write_text(EVIL.format(canary=canary, home=home, other=other))
    script.chmod(stat.S_IRWXU)
    return str(script), str(canary)


def ran(canary: str) -> list[str]:
    path = os.path.join(canary, "ran")
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return handle.read().splitlines()


def untouched(home: str, other: str, canary: str) -> None:
    assert not os.path.lexists(os.path.join(home, "pwned"))
    with open(os.path.join(home, "runs", other, "record.json")) as handle:
        assert "forged" not in handle.read()
    if os.path.exists(os.path.join(canary, "saw")):  # what ran at all (nothing does)
        with open(os.path.join(canary, "saw")) as handle:
            assert other not in handle.read()  # the runs folder it listed is the hidden store's, empty
    assert ended(home, other)["outcome"] == "succeeded"


def test_a_repository_config_the_work_wrote_meets_the_store_hidden_at_the_commit_and_the_diff(
        li_home: str, repo: str, tmp_path: Any) -> None:
    other = submit(li_home, repo, "sh", "echo other")
    assert ended(li_home, other)["outcome"] == "succeeded"
    script, canary = evil(tmp_path, li_home, other)
    run_id = submit(li_home, repo, "sh", f"""
        git config core.fsmonitor {script}
        git config filter.evil.clean '{script} clean'
        printf '* filter=evil\\n' > .gitattributes
        echo changed >> shared.txt
    """, "--worktree")
    data = ended(li_home, run_id)
    assert (data["status"], data["outcome"]) == ("completed", "succeeded"), console(li_home, run_id)
    assert data["confinement"] == "store_hidden"
    assert data["changes"]["files"] == 2
    # Issue 36 goes further than hiding the store from them: li's git runs neither the filter nor
    # the monitor the work planted (tests/e2e/test_git_trusts_nothing.py)
    assert ran(canary) == []
    untouched(li_home, other, canary)
    # `li job diff` by the person: git runs what the config names again, with the store hidden still
    diff = li(li_home, repo, "job", "diff", run_id)
    assert diff["ok"] and "changed" in json.dumps(diff["data"]), diff
    untouched(li_home, other, canary)


def test_the_setup_command_meets_the_store_hidden_unless_the_run_is_confine_off(
        li_home: str, repo: str) -> None:
    reach = 'touch "$LI_HOME/from-setup" 2>/dev/null && echo SETUP-REACHED || echo SETUP-HIDDEN'
    hidden = submit(li_home, repo, "sh", "true", "--worktree", "--setup", reach, LI_HOME=li_home)
    assert ended(li_home, hidden)["outcome"] == "succeeded"
    assert "SETUP-HIDDEN" in console(li_home, hidden) and not os.path.lexists(os.path.join(li_home, "from-setup"))
    off = submit(li_home, repo, "sh", "true", "--worktree", "--confine", "off", "--setup", reach, LI_HOME=li_home)
    assert ended(li_home, off)["outcome"] == "succeeded"
    assert "SETUP-REACHED" in console(li_home, off) and os.path.exists(os.path.join(li_home, "from-setup"))


def test_worktreeinclude_never_copies_through_a_link_the_checkout_holds(li_home: str, repo: str) -> None:
    # a folder the repository commits as a link to the store, and a real folder of that name in
    # the person's checkout holding an ignored file `.worktreeinclude` names: copied "into the
    # worktree", it would land in $LI_HOME (a config.toml li reads)
    os.symlink(li_home, os.path.join(repo, "cfg"))
    for name, text in ((".gitignore", "cfg/config.toml\n.env\n"), (".worktreeinclude", "cfg/config.toml\n.env\n")):
        with open(os.path.join(repo, name), "w") as handle:
            handle.write(text)
    git(repo, "add", "cfg", ".gitignore", ".worktreeinclude")
    git(repo, "commit", "-qm", "a link to the store")
    os.unlink(os.path.join(repo, "cfg"))
    os.mkdir(os.path.join(repo, "cfg"))
    for name, text in (("cfg/config.toml", 'confine = "off"\n'), (".env", "TOKEN=1\n")):
        with open(os.path.join(repo, name), "w") as handle:
            handle.write(text)
    run_id = submit(li_home, repo, "sh", "cat .env", "--worktree")
    data = ended(li_home, run_id)
    assert data["outcome"] == "succeeded" and "TOKEN=1" in console(li_home, run_id)  # the plain file came
    assert not os.path.lexists(os.path.join(li_home, "config.toml"))
    assert os.path.islink(os.path.join(data["worktree"]["path"], "cfg"))  # the checkout's link, untouched
