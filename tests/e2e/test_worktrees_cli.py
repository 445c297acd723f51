"""Each coding-agent run in its own git worktree, on real git repositories and real runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from typing import Any

import pytest

from tests.builders import kill_session
from tests.support import run_li

FAKES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fakes", "bin")

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git: apt-get install -y git")


def git(repo: str, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p",
           "GIT_COMMITTER_EMAIL": "p@x"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Any) -> str:
    path = str(tmp_path / "repo")
    os.makedirs(path)
    git(path, "init", "-q", "-b", "main")
    with open(os.path.join(path, "shared.txt"), "w") as handle:
        handle.write("one\ntwo\n")
    git(path, "add", "shared.txt")
    git(path, "commit", "-qm", "init")
    return path


def fakes(**extra: str) -> dict[str, str]:
    return {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}", **extra}


def li(home: str, cwd: str, *argv: str, **env: str) -> dict[str, Any]:
    """`li ARGV --machine` from `cwd`: the envelope."""
    result = run_li(*argv, "--machine", home=home, cwd=cwd, env=fakes(**env))
    assert result.returncode == 0, result.stderr
    envelope: dict[str, Any] = json.loads(result.stdout)
    return envelope


def submit(home: str, cwd: str, *argv: str, **env: str) -> str:
    envelope = li(home, cwd, "agent", "--detach", *argv, **env)
    assert envelope["ok"], envelope
    return str(envelope["data"]["run_id"])


def ended(home: str, run_id: str, within: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        data: dict[str, Any] = li(home, "/", "job", "status", run_id)["data"]
        if data["terminal"]:
            return data
        time.sleep(0.1)
    raise AssertionError(f"{run_id} did not end")


def console(home: str, run_id: str) -> str:
    """What the work (and its setup command) wrote: the run's console."""
    with open(os.path.join(home, "runs", run_id, "console.log"), encoding="utf-8", errors="replace") as handle:
        return handle.read()


def said(home: str, run_id: str) -> str:
    """What li said of the run (worktree made, files copied, setup run, committed): its li log."""
    with open(os.path.join(home, "runs", run_id, "li.log"), encoding="utf-8", errors="replace") as handle:
        return handle.read()


def test_two_concurrent_runs_editing_one_file_land_on_two_branches_and_leave_the_person_alone(
        li_home: str, repo: str) -> None:
    with open(os.path.join(repo, "shared.txt"), "a") as handle:
        handle.write("the person's own edit\n")  # uncommitted, and must stay so
    first = submit(li_home, repo, "claude", "first agent", "--worktree", FAKE_EDIT_FILE="shared.txt")
    second = submit(li_home, repo, "claude", "second agent", "--worktree", FAKE_EDIT_FILE="shared.txt")
    runs = {run_id: ended(li_home, run_id) for run_id in (first, second)}
    for run_id, text in ((first, "first agent"), (second, "second agent")):
        data = runs[run_id]
        assert data["status"] == "completed", console(li_home, run_id)
        worktree, changes = data["worktree"], data["changes"]
        assert worktree["branch"] == f"li/{run_id}" and worktree["repository"] == repo
        assert worktree["path"].startswith(os.path.join(repo, ".git", "li-worktrees"))
        assert (changes["files"], changes["insertions"], changes["deletions"]) == (1, 1, 0)
        assert git(repo, "show", f"{changes['commit']}:shared.txt") == f"one\ntwo\n{text}\n"
        assert git(repo, "log", "-1", "--format=%an %s", changes["commit"]).startswith(f"li li run {run_id}")
        assert git(repo, "rev-parse", f"li/{run_id}").strip() == changes["commit"]
        assert worktree["base_commit"] == git(repo, "rev-parse", "main").strip()
    with open(os.path.join(repo, "shared.txt")) as handle:
        assert handle.read() == "one\ntwo\nthe person's own edit\n"
    assert git(repo, "status", "--porcelain") == " M shared.txt\n"
    assert git(repo, "branch", "--show-current").strip() == "main"


def test_the_patch_is_kept_as_an_artifact_and_the_list_shows_the_changes(li_home: str, repo: str) -> None:
    run_id = submit(li_home, repo, "sh", "printf 'x\\ny\\n' > new.txt; sed -i 1d shared.txt", "--worktree")
    data = ended(li_home, run_id)
    assert data["changes"]["patch_artifact"] == "changes.patch"
    with open(os.path.join(li_home, "runs", run_id, "artifacts", "changes.patch")) as handle:
        patch = handle.read()
    assert "+++ b/new.txt" in patch and "-one" in patch
    rows = li(li_home, repo, "job", "list")["data"]["runs"]
    assert rows[0]["changes"]["files"] == 2
    table = run_li("job", "list", "--wide", home=li_home).stdout
    assert "CHANGES" in table and "+2 \u22121, 2 files" in table


def test_worktreeinclude_files_are_copied_in_and_the_setup_runs_there_first(li_home: str, repo: str) -> None:
    for name, text in ((".gitignore", ".env\nbuild/\n"), (".worktreeinclude", ".env\n"), (".env", "TOKEN=1\n")):
        with open(os.path.join(repo, name), "w") as handle:
            handle.write(text)
    os.makedirs(os.path.join(repo, "build"))
    with open(os.path.join(repo, "build", "big.o"), "w") as handle:
        handle.write("not copied\n")
    git(repo, "add", ".gitignore", ".worktreeinclude")
    git(repo, "commit", "-qm", "include")
    run_id = submit(li_home, repo, "sh", "cat .env; cat made-by-setup; test ! -e build/big.o", "--worktree",
                    "--setup", "echo setting up; echo ready > made-by-setup")
    data = ended(li_home, run_id)
    text = console(li_home, run_id)
    assert data["status"] == "completed", text
    assert text.index("setting up") < text.index("TOKEN=1") < text.rindex("ready")
    assert "li runner: copied from .worktreeinclude: .env" in said(li_home, run_id) and "li runner" not in text
    # the setup's own file is committed as the work's (it is not ignored); .env is not (it is)
    assert data["changes"]["files"] == 1


def test_a_failing_setup_is_a_failed_start_with_its_reason_and_the_work_never_runs(li_home: str, repo: str) -> None:
    run_id = submit(li_home, repo, "sh", "touch ran", "--worktree", "--setup", "echo cannot install; exit 3")
    data = ended(li_home, run_id)
    assert (data["status"], data["outcome"], data["reason_code"]) == ("failed", "failed", "worktree_setup_failed")
    assert console(li_home, run_id) == "cannot install\n"  # the setup's own output; li's lines are apart
    assert "the setup command exited 3" in said(li_home, run_id)
    assert not os.path.exists(os.path.join(data["worktree"]["path"], "ran"))


def test_worktree_outside_a_repository_is_refused_before_anything_is_written(li_home: str, tmp_path: Any) -> None:
    elsewhere = str(tmp_path / "plain")
    os.makedirs(elsewhere)
    envelope = li(li_home, elsewhere, "agent", "--detach", "sh", "true", "--worktree")
    assert envelope["ok"] is False and envelope["error"]["kind"] == "invalid_input"
    assert "not inside" in envelope["error"]["message"]
    assert not os.path.exists(os.path.join(li_home, "runs")) or os.listdir(os.path.join(li_home, "runs")) == []
    human = run_li("agent", "sh", "true", "--worktree", home=li_home, cwd=elsewhere)
    assert human.returncode != 0 and len(human.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("argv, word", [(("--base", "no-such-ref"), "no commit"), (("--base", "--all"), "--base"),
                                        (("--setup", "true"), "--setup")])
def test_a_bad_base_or_setup_is_one_refusal(li_home: str, repo: str, argv: tuple[str, ...], word: str) -> None:
    extra = ("--worktree",) if word != "--setup" else ()
    envelope = li(li_home, repo, "agent", "--detach", "sh", "true", *extra, *argv)
    assert envelope["ok"] is False and envelope["error"]["kind"] == "invalid_input"
    assert word in envelope["error"]["message"]


def test_base_names_the_commit_the_worktree_starts_from(li_home: str, repo: str) -> None:
    first = git(repo, "rev-parse", "HEAD").strip()
    with open(os.path.join(repo, "later.txt"), "w") as handle:
        handle.write("later\n")
    git(repo, "add", "later.txt")
    git(repo, "commit", "-qm", "later")
    run_id = submit(li_home, repo, "sh", "test ! -e later.txt && echo ok > base.txt", "--worktree", "--base", "HEAD~1")
    data = ended(li_home, run_id)
    assert data["status"] == "completed" and data["worktree"]["base_commit"] == first


def test_worktree_true_in_config_is_the_default_and_no_worktree_turns_it_off(li_home: str, repo: str) -> None:
    os.makedirs(li_home, exist_ok=True)
    with open(os.path.join(li_home, "config.toml"), "w") as handle:
        handle.write('worktree = true\nworktree_setup = "echo configured setup"\n')
    run_id = submit(li_home, repo, "sh", "echo hi > hi.txt")
    data = ended(li_home, run_id)
    assert data["worktree"] is not None and "configured setup" in console(li_home, run_id)
    plain = submit(li_home, repo, "sh", "true", "--no-worktree")
    assert ended(li_home, plain)["worktree"] is None


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def killed_mid_work(home: str, repo: str) -> str:
    """A run whose agent edited shared.txt and then hung, SIGKILLed (runner and work) before it could commit."""
    run_id = submit(home, repo, "claude", "edit then hang", "--worktree", FAKE_EDIT_FILE="shared.txt",
                    FAKE_CLAUDE_MODE="slow", FAKE_SLOW_SECONDS="60")
    deadline = time.monotonic() + 30
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = li(home, "/", "job", "status", run_id)["data"]
        path = (status.get("worktree") or {}).get("path")
        if path and "edit then hang" in read(os.path.join(path, "shared.txt")):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"{run_id}: the agent's edit never showed in its worktree")
    # the whole run: the agent leads a process group of its own, so killing the runner's group
    # alone would leave it sleeping and the run rightly running until it wakes
    with open(os.path.join(home, "runs", run_id, "record.json"), encoding="utf-8") as handle:
        kill_session(run_id, json.load(handle)["incarnation"])
    return run_id


def test_a_sigkilled_run_has_its_changes_committed_by_the_reap(li_home: str, repo: str) -> None:
    run_id = killed_mid_work(li_home, repo)
    data = ended(li_home, run_id)  # the first status after the kill reaps it
    assert data["status"] == "exited"
    changes = data["changes"]
    assert changes is not None and (changes["files"], changes["insertions"]) == (1, 1), console(li_home, run_id)
    assert git(repo, "rev-parse", f"li/{run_id}").strip() == changes["commit"]
    assert git(repo, "show", f"{changes['commit']}:shared.txt").endswith("edit then hang\n")
    diff = li(li_home, repo, "job", "diff", run_id)["data"]
    assert diff["recovered"] is False and "+edit then hang" in diff["patch"]["value"]


def test_a_sigkilled_run_of_several_legs_has_each_legs_changes_committed_by_the_reap(
        li_home: str, repo: str) -> None:
    run_id = orchestrated(li_home, repo, "fanout", "claude", "edit then hang", "--legs", "2", "--worktree",
                          FAKE_EDIT_FILE="shared.txt", FAKE_CLAUDE_MODE="slow", FAKE_SLOW_SECONDS="60")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        entries = record(li_home, run_id).get("leg_worktrees") or []
        if len(entries) == 2 and all("edit then hang" in read(os.path.join(e["worktree"]["path"], "shared.txt"))
                                     for e in entries):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"{run_id}: the legs' edits never showed in their worktrees")
    kill_session(run_id, record(li_home, run_id)["incarnation"])
    data = ended(li_home, run_id)  # the first status after the kill reaps it, and commits each leg
    assert data["status"] == "exited", data
    kept = {e["leg"]: e["changes"] for e in record(li_home, run_id)["leg_worktrees"]}
    assert sorted(kept) == ["leg-1", "leg-2"] and all(c is not None for c in kept.values()), kept
    for leg, changes in kept.items():
        assert (changes["files"], changes["insertions"]) == (1, 1), (leg, console(li_home, run_id))
        assert git(repo, "rev-parse", f"li/{run_id}.{leg}").strip() == changes["commit"]
        assert git(repo, "show", f"{changes['commit']}:shared.txt").endswith("edit then hang\n")
    assert all(entry["recovered"] is False for entry in leg_diffs(li_home, run_id).values())


def finished(home: str, repo: str, script: str) -> dict[str, Any]:
    return ended(home, submit(home, repo, "sh", script, "--worktree"))


def test_diff_gives_files_counts_and_the_patch_under_d7_and_stat_for_a_person(li_home: str, repo: str) -> None:
    data = finished(li_home, repo, "echo three >> shared.txt; printf 'a\\nb\\n' > n.txt")
    diff = li(li_home, repo, "job", "diff", data["run_id"])
    assert diff["ok"], diff
    body = diff["data"]
    assert body["files"] == {"available": True, "reason_code": None, "detail": None, "value": [
        {"path": "n.txt", "insertions": 2, "deletions": 0}, {"path": "shared.txt", "insertions": 1, "deletions": 0}]}
    assert body["patch"]["available"] and body["patch"]["value"].startswith("diff --git")
    assert body["changes"]["commit"] == data["changes"]["commit"]
    person = run_li("job", "diff", data["run_id"], "--stat", home=li_home)
    assert person.returncode == 0 and "2 files changed, 3 insertions(+), 0 deletions(-)" in person.stdout
    patch = run_li("job", "diff", data["run_id"], home=li_home)
    assert patch.stdout == body["patch"]["value"]


def test_a_diff_that_cannot_be_read_is_unavailable_with_its_reason_never_an_empty_patch(
        li_home: str, repo: str) -> None:
    data = finished(li_home, repo, "echo more >> shared.txt")
    os.remove(os.path.join(li_home, "runs", data["run_id"], "artifacts", "changes.patch"))
    body = li(li_home, repo, "job", "diff", data["run_id"])["data"]
    assert body["patch"] == {"available": False, "value": None, "reason_code": "patch_unreadable",
                             "detail": body["patch"]["detail"]}
    assert body["files"]["available"] is False and body["files"]["value"] is None
    person = run_li("job", "diff", data["run_id"], home=li_home)
    assert person.returncode == 1 and person.stdout == "" and "unavailable (patch_unreadable)" in person.stderr


def test_a_run_that_left_nothing_has_an_empty_available_patch(li_home: str, repo: str) -> None:
    data = finished(li_home, repo, "true")
    assert data["changes"] == {"commit": None, "files": 0, "insertions": 0, "deletions": 0, "patch_artifact": None}
    body = li(li_home, repo, "job", "diff", data["run_id"])["data"]
    assert body["patch"]["available"] is True and body["patch"]["value"] == "" and body["files"]["value"] == []


def test_diff_of_a_run_without_a_worktree_or_unknown_is_one_refusal(li_home: str, repo: str) -> None:
    plain = ended(li_home, submit(li_home, repo, "sh", "true"))
    assert li(li_home, repo, "job", "diff", plain["run_id"])["error"]["kind"] == "invalid_input"
    assert li(li_home, repo, "job", "diff", "20990101T000000-abcdef")["error"]["kind"] == "not_found"
    assert li(li_home, repo, "job", "apply", "nonsense")["error"]["kind"] == "invalid_input"


def test_apply_takes_the_changes_without_committing_and_the_branch_stays(li_home: str, repo: str) -> None:
    data = finished(li_home, repo, "echo three >> shared.txt; echo new > fresh.txt")
    applied = li(li_home, repo, "job", "apply", data["run_id"])
    assert applied["ok"], applied
    assert applied["data"]["applied"] is True and len(applied["data"]["files"]) == 2
    assert read(os.path.join(repo, "shared.txt")) == "one\ntwo\nthree\n"
    assert git(repo, "status", "--porcelain") == " M shared.txt\n?? fresh.txt\n"
    assert git(repo, "log", "--format=%s").splitlines() == ["init"]  # nothing committed on the person's branch
    assert git(repo, "rev-parse", f"li/{data['run_id']}").strip() == data["changes"]["commit"]


def test_apply_refuses_a_conflict_with_one_line_and_never_touches_the_persons_work(li_home: str, repo: str) -> None:
    data = finished(li_home, repo, "sed -i s/one/uno/ shared.txt")
    with open(os.path.join(repo, "shared.txt"), "w") as handle:
        handle.write("ONE\ntwo\n")
    git(repo, "commit", "-qam", "the person's change")  # committed: the patch no longer applies
    refused = li(li_home, repo, "job", "apply", data["run_id"])
    assert refused["ok"] is False and refused["error"]["kind"] == "conflict"
    assert "do not apply here" in refused["error"]["message"]
    person = run_li("job", "apply", data["run_id"], home=li_home, cwd=repo)
    assert person.returncode != 0 and len(person.stderr.strip().splitlines()) == 1
    assert read(os.path.join(repo, "shared.txt")) == "ONE\ntwo\n" and git(repo, "status", "--porcelain") == ""
    # uncommitted work of the person's in a file the change touches: refused, left as it was
    other = finished(li_home, repo, "echo three >> shared.txt")
    with open(os.path.join(repo, "shared.txt"), "a") as handle:
        handle.write("mine, uncommitted\n")
    refused = li(li_home, repo, "job", "apply", other["run_id"])
    assert refused["error"]["kind"] == "conflict" and "uncommitted changes" in refused["error"]["message"]
    assert read(os.path.join(repo, "shared.txt")) == "ONE\ntwo\nmine, uncommitted\n"


def test_apply_outside_a_repository_is_refused(li_home: str, repo: str, tmp_path: Any) -> None:
    data = finished(li_home, repo, "echo x > x.txt")
    elsewhere = str(tmp_path / "plain")
    os.makedirs(elsewhere)
    assert li(li_home, elsewhere, "job", "apply", data["run_id"])["error"]["kind"] == "invalid_input"


def test_reply_resumes_the_session_in_the_same_worktree_and_branch_and_shows_the_chain(
        li_home: str, repo: str, tmp_path: Any) -> None:
    argv_log = str(tmp_path / "argv.jsonl")
    first = submit(li_home, repo, "claude", "first turn", "--worktree", FAKE_EDIT_FILE="shared.txt",
                   FAKE_CLAUDE_SESSION="sess-one-1", FAKE_ARGV_LOG=argv_log)
    one = ended(li_home, first)
    assert one["status"] == "completed" and one["session_id"] == "sess-one-1", console(li_home, first)
    reply = li(li_home, "/", "job", "reply", first, "second turn", FAKE_EDIT_FILE="shared.txt",
               FAKE_ARGV_LOG=argv_log)
    assert reply["ok"], reply
    second = reply["data"]["run_id"]
    two = ended(li_home, second)
    assert two["status"] == "completed", console(li_home, second)
    assert two["continues"] == first and two["chain"] == [first, second]
    assert two["worktree"]["path"] == one["worktree"]["path"] and two["worktree"]["branch"] == f"li/{first}"
    assert two["worktree"]["base_commit"] == one["changes"]["commit"]  # the reply's changes are its own
    assert (two["changes"]["files"], two["changes"]["insertions"]) == (1, 1)
    with open(argv_log) as handle:
        calls = [json.loads(line)["argv"] for line in handle]
    assert "--resume" not in calls[0] and calls[1][calls[1].index("--resume") + 1] == "sess-one-1"
    assert git(repo, "show", f"li/{first}:shared.txt") == "one\ntwo\nfirst turn\nresumed sess-one-1: second turn\n"
    assert git(repo, "log", "--format=%s", f"li/{first}").splitlines()[:2] == [f"li run {second}", f"li run {first}"]
    person = run_li("job", "status", second, home=li_home)
    assert f"chain      {first} → {second}" in person.stdout and f"continues  {first}" in person.stdout


def test_reply_is_refused_with_the_reason_for_sh_and_a_run_without_a_session(li_home: str, repo: str) -> None:
    shell = ended(li_home, submit(li_home, repo, "sh", "true"))
    refused = li(li_home, repo, "job", "reply", shell["run_id"], "more")
    assert refused["error"]["kind"] == "invalid_input" and "sh run" in refused["error"]["message"]
    silent = ended(li_home, submit(li_home, repo, "claude", "hi", FAKE_CLAUDE_SESSION=""))  # a stream with no id
    assert silent["session_id"] is None
    refused = li(li_home, repo, "job", "reply", silent["run_id"], "more")
    assert refused["error"]["kind"] == "invalid_input" and "no session id" in refused["error"]["message"], refused
    assert li(li_home, repo, "job", "reply", "20990101T000000-abcdef", "x")["error"]["kind"] == "not_found"


def test_rm_and_prune_remove_the_worktree_the_branch_stays_unless_branches(li_home: str, repo: str) -> None:
    first = finished(li_home, repo, "echo a > a.txt")
    removed = li(li_home, repo, "job", "rm", first["run_id"])
    assert removed["ok"] and removed["data"]["removed"] == [first["run_id"]], removed
    assert not os.path.exists(first["worktree"]["path"])
    assert git(repo, "rev-parse", f"li/{first['run_id']}").strip() == first["changes"]["commit"]
    second = finished(li_home, repo, "echo b > b.txt")
    pruned = li(li_home, repo, "job", "prune", "--branches")
    assert second["run_id"] in pruned["data"]["removed"], pruned
    assert not os.path.exists(second["worktree"]["path"])
    assert git(repo, "branch", "--list", f"li/{second['run_id']}") == ""


def test_a_worktree_with_changes_li_did_not_commit_is_never_removed(li_home: str, repo: str) -> None:
    data = finished(li_home, repo, "echo a > a.txt")
    with open(os.path.join(data["worktree"]["path"], "later.txt"), "w") as handle:
        handle.write("written after li committed\n")
    pruned = li(li_home, repo, "job", "prune")["data"]
    kept = {row["run_id"]: row for row in pruned["kept"]}
    assert kept[data["run_id"]]["reason"] == "worktree_kept", pruned
    assert os.path.exists(os.path.join(data["worktree"]["path"], "later.txt"))
    assert li(li_home, "/", "job", "status", data["run_id"])["ok"]  # the run stays too: it names the worktree


def test_doctor_lists_a_worktree_whose_run_is_gone(li_home: str, repo: str) -> None:
    data = finished(li_home, repo, "echo a > a.txt")
    check = {c["name"]: c for c in li(li_home, repo, "doctor")["data"]["checks"]}["worktrees"]
    assert check["ok"] is True
    import shutil as sh

    sh.rmtree(os.path.join(li_home, "runs", data["run_id"]))  # the run gone, its worktree left behind
    check = {c["name"]: c for c in li(li_home, repo, "doctor")["data"]["checks"]}["worktrees"]
    assert check["ok"] is False and check["severity"] == "warning" and data["worktree"]["path"] in check["detail"]


def orchestrated(home: str, cwd: str, *argv: str, **env: str) -> str:
    envelope = li(home, cwd, "orchestrate", *argv, "--detach", **env)
    assert envelope["ok"], envelope
    return str(envelope["data"]["run_id"])


def record(home: str, run_id: str) -> dict[str, Any]:
    with open(os.path.join(home, "runs", run_id, "record.json"), encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def leg_diffs(home: str, run_id: str) -> dict[str, dict[str, Any]]:
    """`li job diff RUN --machine` of a run of several legs: each leg's change, by leg."""
    body = li(home, "/", "job", "diff", run_id)["data"]
    assert body["worktree"] is None and body["changes"] is None and body["legs"] is not None, body
    assert body["patch"]["available"] is False and body["patch"]["reason_code"] == "several_legs"
    assert body["files"]["available"] is False and body["files"]["reason_code"] == "several_legs"
    return {leg["leg"]: leg for leg in body["legs"]}


EACH_LEG_EDITS = 'echo "edited by $LI_LEG_ID" >> shared.txt'


def test_a_fanout_of_two_legs_editing_one_file_lands_on_two_branches_and_leaves_the_person_alone(
        li_home: str, repo: str) -> None:
    with open(os.path.join(repo, "shared.txt"), "a") as handle:
        handle.write("the person's own edit\n")  # uncommitted, and must stay so
    run_id = orchestrated(li_home, repo, "fanout", "claude", "an agent's edit", "--legs", "2", "--worktree",
                          FAKE_EDIT_FILE="shared.txt")
    data = ended(li_home, run_id)
    assert data["status"] == "completed", console(li_home, run_id)
    assert data["worktree"] is None and data["changes"] is None  # a run of several legs has no one worktree
    legs = leg_diffs(li_home, run_id)
    assert sorted(legs) == ["leg-1", "leg-2"]
    base = git(repo, "rev-parse", "main").strip()
    paths = set()
    for leg, entry in legs.items():
        worktree, changes = entry["worktree"], entry["changes"]
        assert worktree["branch"] == f"li/{run_id}.{leg}" and worktree["repository"] == repo
        assert worktree["base_commit"] == base
        assert worktree["path"] == os.path.join(repo, ".git", "li-worktrees", f"{run_id}.{leg}")
        paths.add(worktree["path"])
        # each leg's branch holds its own one edit: neither leg saw the other's, nor the person's
        assert (changes["files"], changes["insertions"], changes["deletions"]) == (1, 1, 0)
        assert changes["patch_artifact"] == f"changes-{leg}.patch"
        assert git(repo, "show", f"{changes['commit']}:shared.txt") == "one\ntwo\nan agent's edit\n"
        assert git(repo, "rev-parse", f"li/{run_id}.{leg}").strip() == changes["commit"]
        assert git(repo, "log", "-1", "--format=%an %s", changes["commit"]).startswith(f"li li run {run_id} {leg}")
        assert os.path.isfile(os.path.join(li_home, "runs", run_id, "artifacts", f"changes-{leg}.patch"))
        assert entry["recovered"] is False
    assert len(paths) == 2 and legs["leg-1"]["changes"]["commit"] != legs["leg-2"]["changes"]["commit"]
    with open(os.path.join(repo, "shared.txt")) as handle:
        assert handle.read() == "one\ntwo\nthe person's own edit\n"
    assert git(repo, "status", "--porcelain") == " M shared.txt\n"
    assert git(repo, "branch", "--show-current").strip() == "main"
    # the record keeps each leg's worktree and changes; the one-leg fields stay null
    kept = record(li_home, run_id)
    assert kept["worktree"] is None and kept["changes"] is None
    assert [(e["leg"], e["changes"]["commit"]) for e in kept["leg_worktrees"]] == [
        (leg, legs[leg]["changes"]["commit"]) for leg in ("leg-1", "leg-2")]
    # and li job status says them, to a program and to a person
    assert [(e["leg"], e["worktree"]["branch"], e["changes"]["commit"]) for e in data["leg_worktrees"]] == [
        (leg, f"li/{run_id}.{leg}", legs[leg]["changes"]["commit"]) for leg in ("leg-1", "leg-2")]
    shown = run_li("job", "status", run_id, home=li_home).stdout
    assert all(f"leg {leg}" in shown and f"li/{run_id}.{leg}" in shown for leg in ("leg-1", "leg-2")), shown
    # and li job list: each leg's worktree and changes on the row, their sum in a person's CHANGES
    row = next(r for r in li(li_home, "/", "job", "list")["data"]["runs"] if r["run_id"] == run_id)
    assert row["changes"] is None and row["leg_worktrees"] == data["leg_worktrees"]
    table = run_li("job", "list", "--wide", home=li_home).stdout
    assert "CHANGES" in table and "+2 \u22120, 2 files in 2 legs" in table, table


def test_diff_shows_every_legs_change_or_the_one_leg_names(li_home: str, repo: str) -> None:
    run_id = orchestrated(li_home, repo, "fanout", "sh", EACH_LEG_EDITS, "--legs", "2", "--worktree")
    assert ended(li_home, run_id)["status"] == "completed", console(li_home, run_id)
    legs = leg_diffs(li_home, run_id)
    for leg, other in (("leg-1", "leg-2"), ("leg-2", "leg-1")):
        patch = legs[leg]["patch"]
        assert patch["available"] and f"+edited by {leg}\n" in patch["value"] and other not in patch["value"]
        assert legs[leg]["files"]["value"] == [{"path": "shared.txt", "insertions": 1, "deletions": 0}]
    one = li(li_home, "/", "job", "diff", run_id, "--leg", "leg-2")["data"]
    assert one["leg"] == "leg-2" and one["legs"] is None
    assert one["worktree"] == legs["leg-2"]["worktree"] and one["changes"] == legs["leg-2"]["changes"]
    assert one["patch"] == legs["leg-2"]["patch"] and one["files"] == legs["leg-2"]["files"]
    person = run_li("job", "diff", run_id, "--leg", "leg-1", home=li_home)
    assert person.returncode == 0 and person.stdout == legs["leg-1"]["patch"]["value"]
    every = run_li("job", "diff", run_id, home=li_home)
    assert every.returncode == 0
    first, second = every.stdout.index(f"# leg-1: li/{run_id}.leg-1\n"), every.stdout.index(f"# leg-2: li/{run_id}.leg-2\n")
    assert first < every.stdout.index("+edited by leg-1") < second < every.stdout.index("+edited by leg-2")
    stat = run_li("job", "diff", run_id, "--stat", home=li_home)
    assert stat.returncode == 0 and stat.stdout.count("1 file changed, 1 insertions(+), 0 deletions(-)") == 2
    unknown = li(li_home, "/", "job", "diff", run_id, "--leg", "leg-9")["error"]
    assert unknown["kind"] == "invalid_input" and "leg-1, leg-2" in unknown["message"]
    single = finished(li_home, repo, "echo a > a.txt")
    refused = li(li_home, "/", "job", "diff", single["run_id"], "--leg", "leg-1")["error"]
    assert refused["kind"] == "invalid_input" and "one worktree" in refused["message"]


def test_apply_takes_one_legs_change_and_refuses_without_leg_naming_the_legs(li_home: str, repo: str) -> None:
    run_id = orchestrated(li_home, repo, "fanout", "sh", EACH_LEG_EDITS, "--legs", "2", "--worktree")
    assert ended(li_home, run_id)["status"] == "completed", console(li_home, run_id)
    refused = run_li("job", "apply", run_id, home=li_home, cwd=repo)
    assert refused.returncode != 0 and refused.stdout == ""
    line = refused.stderr.strip()
    assert "\n" not in line and "--leg" in line and "leg-1, leg-2" in line, refused.stderr
    machine = li(li_home, repo, "job", "apply", run_id)["error"]
    assert machine["kind"] == "invalid_input" and machine["detail"]["legs"] == ["leg-1", "leg-2"]
    assert git(repo, "status", "--porcelain") == ""  # nothing was applied
    applied = li(li_home, repo, "job", "apply", run_id, "--leg", "leg-2")
    assert applied["ok"], applied
    assert applied["data"]["leg"] == "leg-2" and applied["data"]["files"] == [
        {"path": "shared.txt", "insertions": 1, "deletions": 0}]
    with open(os.path.join(repo, "shared.txt")) as handle:
        assert handle.read() == "one\ntwo\nedited by leg-2\n"
    assert git(repo, "status", "--porcelain") == " M shared.txt\n"  # applied, not committed
    assert git(repo, "rev-parse", "HEAD").strip() == git(repo, "rev-parse", "main").strip()
    # the other leg's change touches the same line: it conflicts, refused with one line, the tree as it was
    conflict = li(li_home, repo, "job", "apply", run_id, "--leg", "leg-1")["error"]
    assert conflict["kind"] == "conflict" and "leg-1" in conflict["message"]
    with open(os.path.join(repo, "shared.txt")) as handle:
        assert handle.read() == "one\ntwo\nedited by leg-2\n"


def test_prune_and_rm_remove_every_legs_worktree_never_one_with_changes_li_did_not_commit(
        li_home: str, repo: str) -> None:
    first = orchestrated(li_home, repo, "fanout", "sh", EACH_LEG_EDITS, "--legs", "2", "--worktree")
    ended(li_home, first)
    paths = {leg: entry["worktree"]["path"] for leg, entry in leg_diffs(li_home, first).items()}
    assert all(os.path.isdir(path) for path in paths.values())
    with open(os.path.join(paths["leg-2"], "later.txt"), "w") as handle:
        handle.write("written after li committed\n")
    kept = {row["run_id"]: row for row in li(li_home, repo, "job", "prune")["data"]["kept"]}
    assert kept[first]["reason"] == "worktree_kept" and paths["leg-2"] in kept[first]["detail"], kept
    assert all(os.path.isdir(path) for path in paths.values())  # neither leg's goes while one is kept
    os.remove(os.path.join(paths["leg-2"], "later.txt"))
    pruned = li(li_home, repo, "job", "prune")["data"]
    assert first in pruned["removed"], pruned
    assert not any(os.path.exists(path) for path in paths.values())
    assert [line.split()[0] for line in git(repo, "worktree", "list").splitlines()] == [repo]
    for leg in paths:  # the branches stay for git merge
        assert git(repo, "branch", "--list", f"li/{first}.{leg}").strip() == f"li/{first}.{leg}"
    second = orchestrated(li_home, repo, "fanout", "sh", EACH_LEG_EDITS, "--legs", "2", "--worktree")
    ended(li_home, second)
    paths = {leg: entry["worktree"]["path"] for leg, entry in leg_diffs(li_home, second).items()}
    removed = li(li_home, repo, "job", "rm", second)
    assert removed["ok"] and removed["data"]["removed"] == [second], removed
    assert not any(os.path.exists(path) for path in paths.values())
    pruned = li(li_home, repo, "job", "prune", "--branches")  # nothing left to remove: no error either
    assert pruned["ok"], pruned


def test_each_leg_gets_the_worktreeinclude_files_and_the_setup(li_home: str, repo: str) -> None:
    for name, text in ((".gitignore", ".env\n"), (".worktreeinclude", ".env\n"), (".env", "TOKEN=1\n")):
        with open(os.path.join(repo, name), "w") as handle:
            handle.write(text)
    git(repo, "add", ".gitignore", ".worktreeinclude")
    git(repo, "commit", "-qm", "include")
    run_id = orchestrated(li_home, repo, "fanout", "sh", 'echo "$LI_LEG_ID $(cat .env) $(cat made-by-setup)"',
                          "--legs", "2", "--worktree", "--setup", 'echo "ready in $PWD" > made-by-setup')
    data = ended(li_home, run_id)
    text = console(li_home, run_id)
    assert data["status"] == "completed", text
    legs = leg_diffs(li_home, run_id)
    for leg in ("leg-1", "leg-2"):
        path = legs[leg]["worktree"]["path"]
        assert f"copied from .worktreeinclude of {leg}: .env" in said(li_home, run_id)
        assert f"li runner: setup of {leg}:" in said(li_home, run_id) and "li runner" not in text
        assert f"{leg} TOKEN=1 ready in {path}" in text  # the leg ran in its own worktree, set up there
        assert legs[leg]["files"]["value"] == [{"path": "made-by-setup", "insertions": 1, "deletions": 0}]


def test_a_flow_runs_each_step_in_its_own_worktree_from_the_same_base(li_home: str, repo: str, tmp_path: Any) -> None:
    spec = tmp_path / "flow.yaml"
    spec.write_text("steps:\n  - id: write\n    prompt: echo written > step.txt; pwd\n"
                    "  - id: check\n    depends_on: [write]\n    prompt: test ! -e step.txt && echo clean >> shared.txt\n")
    run_id = orchestrated(li_home, repo, "flow", str(spec), "--worktree")
    data = ended(li_home, run_id)
    assert data["status"] == "completed", console(li_home, run_id)
    steps = leg_diffs(li_home, run_id)
    assert sorted(steps) == ["check", "write"]
    assert steps["write"]["worktree"]["branch"] == f"li/{run_id}.write"
    assert [f["path"] for f in steps["write"]["files"]["value"]] == ["step.txt"]
    assert [f["path"] for f in steps["check"]["files"]["value"]] == ["shared.txt"]
    assert steps["write"]["worktree"]["base_commit"] == steps["check"]["worktree"]["base_commit"]
    assert not os.path.exists(os.path.join(repo, "step.txt"))


def test_worktree_true_in_config_gives_each_leg_its_worktree_and_one_leg_keeps_the_one_worktree_shape(
        li_home: str, repo: str) -> None:
    os.makedirs(li_home, exist_ok=True)
    with open(os.path.join(li_home, "config.toml"), "w") as handle:
        handle.write("worktree = true\n")
    fanout = orchestrated(li_home, repo, "fanout", "sh", EACH_LEG_EDITS, "--legs", "2")
    ended(li_home, fanout)
    assert sorted(leg_diffs(li_home, fanout)) == ["leg-1", "leg-2"]
    off = orchestrated(li_home, repo, "fanout", "sh", "true", "--legs", "2", "--no-worktree")
    ended(li_home, off)
    assert record(li_home, off)["leg_worktrees"] is None and record(li_home, off)["worktree"] is None
    one = orchestrated(li_home, repo, "fanout", "sh", "echo x > x.txt", "--legs", "1", "--worktree")
    data = ended(li_home, one)
    assert data["changes"]["files"] == 1 and data["worktree"]["branch"] == f"li/{one}"
    assert record(li_home, one)["leg_worktrees"] is None
    assert li(li_home, "/", "job", "diff", one)["data"]["legs"] is None


def test_one_legs_commit_failing_never_stops_anothers_and_diff_recovers_it(li_home: str, repo: str) -> None:
    """leg-2 leaves git's index lock behind in its worktree: its commit at the end cannot be made,
    leg-1's is; once the lock is gone `li job diff` commits leg-2's change and says so."""
    script = (EACH_LEG_EDITS + '; if [ "$LI_LEG_ID" = leg-2 ]; then touch "$(git rev-parse --git-dir)/index.lock"; fi')
    run_id = orchestrated(li_home, repo, "fanout", "sh", script, "--legs", "2", "--worktree")
    assert ended(li_home, run_id)["status"] == "completed", console(li_home, run_id)
    assert "the changes of leg-2 could not be committed" in said(li_home, run_id)
    entries = {e["leg"]: e for e in record(li_home, run_id)["leg_worktrees"]}
    assert entries["leg-1"]["changes"]["files"] == 1 and entries["leg-2"]["changes"] is None
    path = entries["leg-2"]["worktree"]["path"]
    os.remove(os.path.join(git(path, "rev-parse", "--absolute-git-dir").strip(), "index.lock"))
    legs = leg_diffs(li_home, run_id)
    assert (legs["leg-1"]["recovered"], legs["leg-2"]["recovered"]) == (False, True)
    commit = legs["leg-2"]["changes"]["commit"]
    assert git(repo, "rev-parse", f"li/{run_id}.leg-2").strip() == commit
    assert git(repo, "show", f"{commit}:shared.txt") == "one\ntwo\nedited by leg-2\n"
    assert {e["leg"]: e for e in record(li_home, run_id)["leg_worktrees"]}["leg-2"]["changes"]["commit"] == commit


def tagged_processes(run_id: str) -> list[int]:
    """The live processes that carry the run's tag (LI_RUN_ID): its runner, its setup, its work."""
    import psutil

    left = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("LI_RUN_ID") == run_id and process.status() != psutil.STATUS_ZOMBIE:
                left.append(process.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return left


def console_says(home: str, run_id: str, text: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while text not in console(home, run_id) if os.path.exists(os.path.join(home, "runs", run_id)) else True:
        assert time.monotonic() < deadline, f"{run_id}: {text!r} never showed on the console"
        time.sleep(0.1)


SLOW_SETUP = "echo setting up; sleep 60; echo $((40 + 2)) seconds later"


def nothing_of_it_left(run_id: str, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while tagged_processes(run_id):
        assert time.monotonic() < deadline, f"left running: {tagged_processes(run_id)}"
        time.sleep(0.1)


def cut_short(home: str, data: dict[str, Any], began: float, within: float) -> None:
    """The run ended soon after `began`, its setup stopped, its work never run, its end committed."""
    took = time.monotonic() - began
    text = console(home, data["run_id"])
    assert took < within, f"the run took {took:.1f}s to end: {text}"
    assert "42 seconds later" not in text and not os.path.exists(os.path.join(data["worktree"]["path"], "ran")), text
    # the end's commit (of nothing here) ran to its end: nothing of the kill reached it
    assert data["changes"] is not None and "could not be committed" not in said(home, data["run_id"]), text
    nothing_of_it_left(data["run_id"])


@pytest.mark.parametrize("setup", [SLOW_SETUP, f"trap '' TERM; {SLOW_SETUP}"], ids=["plain", "ignoring-sigterm"])
@pytest.mark.parametrize("supervisor", ["lean", "full"])
def test_a_kill_during_the_setup_ends_the_run_cancelled_promptly_and_stops_the_setup(
        li_home: str, repo: str, setup: str, supervisor: str) -> None:
    run_id = submit(li_home, repo, "sh", "touch ran", "--worktree", "--setup", setup, LI_SUPERVISOR=supervisor)
    console_says(li_home, run_id, "setting up")
    began = time.monotonic()
    killed = li(li_home, "/", "job", "kill", run_id, LI_KILL_GRACE="1")
    assert killed["ok"] and killed["data"]["action"] == "signalled", killed
    data = ended(li_home, run_id, within=20)
    assert (data["status"], data["reason_code"]) == ("cancelled", "kill_requested"), console(li_home, run_id)
    cut_short(li_home, data, began, within=8)


@pytest.mark.parametrize("supervisor", ["lean", "full"])
def test_a_kill_recorded_from_another_host_during_the_setup_stops_it(li_home: str, repo: str, supervisor: str) -> None:
    """What `li job kill` on another host of a shared store does: record the request, signal nothing."""
    from datetime import UTC, datetime

    from lionrun.adapters.fs_store import FsRunStore
    from lionrun.domain.run import iso

    run_id = submit(li_home, repo, "sh", "touch ran", "--worktree", "--setup", SLOW_SETUP, LI_SUPERVISOR=supervisor)
    console_says(li_home, run_id, "setting up")
    began = time.monotonic()
    FsRunStore(li_home).update(run_id, lambda run: run.evolve(kill_requested_at=iso(datetime.now(UTC))))
    data = ended(li_home, run_id, within=20)
    assert (data["status"], data["reason_code"]) == ("cancelled", "kill_requested"), console(li_home, run_id)
    assert "a kill request is recorded" in said(li_home, run_id)
    cut_short(li_home, data, began, within=8)


@pytest.mark.parametrize("supervisor", ["lean", "full"])
def test_the_runs_timeout_covers_the_setup(li_home: str, repo: str, supervisor: str) -> None:
    began = time.monotonic()
    run_id = submit(li_home, repo, "sh", "touch ran", "--worktree", "--timeout", "3", "--setup", SLOW_SETUP,
                    LI_SUPERVISOR=supervisor)
    data = ended(li_home, run_id, within=30)
    assert (data["status"], data["reason_code"]) == ("timed_out", "timeout"), console(li_home, run_id)
    assert "the setup command was stopped: the run's --timeout (3s) ran out" in said(li_home, run_id)
    assert time.monotonic() - began >= 3
    cut_short(li_home, data, began, within=12)


def edited(home: str, run_id: str, text: str, within: float = 30.0) -> None:
    """Wait until the run's work has written `text` into shared.txt in its worktree."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        path = (li(home, "/", "job", "status", run_id)["data"].get("worktree") or {}).get("path")
        if path and text in read(os.path.join(path, "shared.txt")):
            return
        time.sleep(0.1)
    raise AssertionError(f"{run_id}: the work's edit never showed in its worktree")


def committed_and_shown(home: str, repo: str, data: dict[str, Any], line: str) -> None:
    """The work's edit is committed to the run's branch, recorded, and `li job diff` shows it."""
    run_id = data["run_id"]
    changes = data["changes"]
    assert changes is not None and changes["commit"] is not None, console(home, run_id)
    assert (changes["files"], changes["insertions"], changes["deletions"]) == (1, 1, 0), changes
    assert git(repo, "rev-parse", f"li/{run_id}").strip() == changes["commit"]
    assert git(repo, "show", f"{changes['commit']}:shared.txt") == f"one\ntwo\n{line}\n"
    diff = li(home, repo, "job", "diff", run_id)["data"]
    assert diff["recovered"] is False and f"\n+{line}\n" in diff["patch"]["value"], diff
    assert diff["files"]["value"] == [{"path": "shared.txt", "insertions": 1, "deletions": 0}]
    person = run_li("job", "diff", run_id, home=home)
    assert person.returncode == 0 and f"\n+{line}\n" in person.stdout


@pytest.mark.parametrize("supervisor", ["lean", "full"])
def test_a_run_that_times_out_has_its_changes_committed(li_home: str, repo: str, supervisor: str) -> None:
    run_id = submit(li_home, repo, "sh", "echo late >> shared.txt; sleep 60", "--worktree", "--timeout", "2",
                    LI_SUPERVISOR=supervisor)
    data = ended(li_home, run_id)
    assert data["status"] == "timed_out", console(li_home, run_id)
    committed_and_shown(li_home, repo, data, "late")


@pytest.mark.parametrize("supervisor", ["lean", "full"])
def test_a_run_killed_with_li_job_kill_has_its_changes_committed(li_home: str, repo: str, supervisor: str) -> None:
    run_id = submit(li_home, repo, "claude", "killed", "--worktree", FAKE_EDIT_FILE="shared.txt",
                    FAKE_CLAUDE_MODE="slow", FAKE_SLOW_SECONDS="60", LI_SUPERVISOR=supervisor)
    edited(li_home, run_id, "killed")
    killed = li(li_home, "/", "job", "kill", run_id)
    assert killed["ok"] and killed["data"]["action"] == "signalled", killed
    data = ended(li_home, run_id)
    assert (data["status"], data["reason_code"]) == ("cancelled", "kill_requested"), console(li_home, run_id)
    committed_and_shown(li_home, repo, data, "killed")


@pytest.mark.parametrize("argv", [("sh", "echo broken >> shared.txt; exit 3"), ("claude", "broken")],
                         ids=["sh", "claude"])
def test_a_run_whose_work_fails_has_its_changes_committed(li_home: str, repo: str, argv: tuple[str, ...]) -> None:
    run_id = submit(li_home, repo, *argv, "--worktree", FAKE_EDIT_FILE="shared.txt", FAKE_CLAUDE_MODE="crash")
    data = ended(li_home, run_id)
    assert data["status"] == "failed", console(li_home, run_id)
    committed_and_shown(li_home, repo, data, "broken")


def test_diff_commits_and_says_recovered_for_a_run_whose_changes_li_never_committed(li_home: str, repo: str) -> None:
    """The work leaves git's index lock behind, as a git it killed would: the runner's commit at the
    end cannot take it and the run ends with its changes uncommitted, said in its li log. Once the
    lock is gone, `li job diff` commits them, records them and says so (`recovered`)."""
    run_id = submit(li_home, repo, "sh", 'echo left >> shared.txt; touch "$(git rev-parse --git-dir)/index.lock"',
                    "--worktree")
    data = ended(li_home, run_id)
    assert data["status"] == "completed" and data["changes"] is None, console(li_home, run_id)
    assert "could not be committed" in said(li_home, run_id)
    assert git(repo, "rev-parse", f"li/{run_id}").strip() == data["worktree"]["base_commit"]
    lock = os.path.join(git(data["worktree"]["path"], "rev-parse", "--absolute-git-dir").strip(), "index.lock")
    os.remove(lock)
    diff = li(li_home, repo, "job", "diff", run_id)["data"]
    assert diff["recovered"] is True and "\n+left\n" in diff["patch"]["value"], diff
    commit = diff["changes"]["commit"]
    assert commit is not None and git(repo, "rev-parse", f"li/{run_id}").strip() == commit
    assert git(repo, "show", f"{commit}:shared.txt") == "one\ntwo\nleft\n"
    again = li(li_home, "/", "job", "status", run_id)["data"]
    assert again["changes"]["commit"] == commit  # recorded on the run: the next diff reads it
    second = li(li_home, repo, "job", "diff", run_id)["data"]
    assert second["recovered"] is False and second["patch"]["value"] == diff["patch"]["value"]
    person = run_li("job", "diff", data["run_id"], home=li_home)
    assert person.returncode == 0 and "ended without committing" not in person.stderr
