"""The worktree values and rules, pure."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.contract import ContractError
from lionrun.domain.request import Leg, RunRequest, parse_model
from lionrun.domain.run import Run, is_run_id
from lionrun.domain.worktree import (
    NO_CHANGES,
    Changes,
    Worktree,
    WorktreePlan,
    branch_for,
    changes_column,
    check_base_ref,
    check_session_id,
    check_setup,
    commit_message,
    legs_changes_column,
    parse_numstat,
    removable,
    reply_refusal,
    resume_arguments,
    run_of_worktree,
    worktree_path,
)

RUN = "20261204T021044-855647"
SHA = "a" * 40


def test_a_run_gets_its_own_branch_and_folder_under_the_common_git_dir() -> None:
    assert branch_for(RUN) == f"li/{RUN}"
    assert branch_for(RUN, "leg-1") == f"li/{RUN}.leg-1"  # never li/RUN/leg: git cannot hold both
    assert worktree_path("/r/.git/", RUN) == f"/r/.git/li-worktrees/{RUN}"
    assert run_of_worktree(f"{RUN}.leg-2") == RUN and run_of_worktree("junk") is None


@pytest.mark.parametrize("ref", ["HEAD", "main", "v1.2", "origin/main", "HEAD~2", SHA])
def test_a_base_ref_git_can_resolve_is_accepted(ref: str) -> None:
    assert check_base_ref(ref) == ref


@pytest.mark.parametrize("ref", ["", "-x", "--upload-pack=evil", "a b", "a..b", "x\n", 7, None, "a" * 300])
def test_a_base_that_could_be_an_option_or_a_range_is_refused(ref: object) -> None:
    with pytest.raises(ContractError) as caught:
        check_base_ref(ref)
    assert caught.value.kind.value == "invalid_input"


def test_setup_and_session_ids_are_bounded() -> None:
    assert check_setup(None) is None and check_setup("npm ci") == "npm ci"
    for bad in ("", "   ", "a\0b", "x" * 20000):
        with pytest.raises(ContractError):
            check_setup(bad)
    assert check_session_id("9b6f1c1e-4a51") == "9b6f1c1e-4a51"
    for bad in ("-x", "a b", "", "a;b"):
        with pytest.raises(ContractError):
            check_session_id(bad)


def test_each_cli_resumes_its_session_with_its_own_flag() -> None:
    assert resume_arguments("claude", "S") == ["--resume", "S"]
    assert resume_arguments("gemini", "S") == ["--resume", "S"]
    assert resume_arguments("codex", "S") == ["resume", "S"]
    assert resume_arguments("sh", "S") == [] and resume_arguments("claude", None) == []


def test_the_resume_comes_after_every_other_provider_argument() -> None:
    request = RunRequest(kind="agent", instruction="x", legs=(Leg("main", parse_model("codex")),), cwd="/",
                         resume_session="T1")
    assert request.arguments_for("codex")[-2:] == ["resume", "T1"]


def test_numstat_counts_files_and_lines_and_a_binary_file_has_no_lines() -> None:
    assert parse_numstat("3\t1\ta.txt\n-\t-\tlogo.png\n0\t4\tb/c.py\n") == (3, 3, 5)
    assert parse_numstat("") == (0, 0, 0)


@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6),
                          st.text(st.characters(blacklist_characters="\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                                  min_size=1)), max_size=30))
def test_numstat_sums_whatever_the_paths(rows: list[tuple[int, int, str]]) -> None:
    text = "".join(f"{a}\t{d}\t{p}\n" for a, d, p in rows)
    assert parse_numstat(text) == (len(rows), sum(r[0] for r in rows), sum(r[1] for r in rows))


def test_the_changes_column_reads_like_a_diffstat() -> None:
    assert changes_column(Changes(SHA, 2, 12, 3, "changes.patch")) == "+12 \u22123, 2 files"
    assert changes_column(Changes(SHA, 1, 1, 0, "changes.patch")) == "+1 \u22120, 1 file"
    assert changes_column(NO_CHANGES) == "none"
    assert changes_column(None) == ""


def test_the_changes_column_of_a_run_of_several_legs_sums_them_and_says_of_how_many() -> None:
    two, one = Changes(SHA, 2, 12, 3, "changes-leg-1.patch"), Changes(SHA, 1, 1, 0, "changes-leg-2.patch")
    assert legs_changes_column([two, one, None]) == "+13 \u22123, 3 files in 2 of 3 legs"
    assert legs_changes_column([two, one]) == "+13 \u22123, 3 files in 2 legs"
    assert legs_changes_column([NO_CHANGES, None]) == "none in 1 of 2 legs"
    assert legs_changes_column([None, None]) == ""  # no leg's changes committed yet


@given(st.lists(st.one_of(st.none(), st.builds(Changes, st.just(SHA), st.integers(0, 50), st.integers(0, 999),
                                                st.integers(0, 999), st.just("p"))), min_size=1, max_size=8))
def test_the_legs_column_never_claims_more_legs_than_there_are(changes: list[Changes | None]) -> None:
    text = legs_changes_column(changes)
    committed = [c for c in changes if c is not None]
    assert (text == "") == (not committed)
    if committed:
        assert text.endswith(f"{len(changes)} legs")
        files = sum(c.files for c in committed)
        assert (f"{files} file" in text) == (files > 0) and (text.startswith("none")) == (files == 0)


def test_a_worktree_with_anything_li_did_not_commit_is_not_removable() -> None:
    assert removable("") and removable("\n")
    assert not removable(" M a.txt\n") and not removable("?? new.txt\n")


def test_a_reply_needs_an_ended_one_leg_agent_run_of_a_cli_with_a_session() -> None:
    assert reply_refusal("agent", "claude", "S", True) is None
    assert "sh run" in (reply_refusal("agent", "sh", None, True) or "")
    assert "session id" in (reply_refusal("agent", "codex", None, True) or "")
    assert "not ended" in (reply_refusal("agent", "claude", "S", False) or "")
    assert "one-leg" in (reply_refusal("fanout", "claude", "S", True) or "")


def test_the_commit_message_names_the_run_and_its_label_on_one_subject_line() -> None:
    subject = commit_message(RUN, "fix\nthe bug", "failed").splitlines()[0]
    assert subject == f"li run {RUN} fix the bug"


def test_a_record_keeps_its_worktree_changes_and_continues() -> None:
    run = Run(run_id=RUN, kind="agent", status="completed", submitted_at="2026-12-04T02:10:44.000000+00:00",
              spawn_state="started", worktree=Worktree("/r", SHA, branch_for(RUN), "/r/.git/li-worktrees/x"),
              changes=Changes(SHA, 1, 2, 3, "changes.patch"), continues="20261204T021000-000001")
    again = Run.from_dict(run.to_dict())
    assert again == run and is_run_id(again.continues or "")


@pytest.mark.parametrize("field, value", [("worktree", {"repository": 1}), ("changes", {"files": -1}),
                                          ("changes", {"files": True, "insertions": 0, "deletions": 0}),
                                          ("continues", "../x")])
def test_a_record_with_malformed_worktree_fields_is_unusable(field: str, value: object) -> None:
    from lionrun.domain.run import RecordUnusable

    data = Run(run_id=RUN, kind="agent", status="running", submitted_at="2026-12-04T02:10:44.000000+00:00",
               spawn_state="started").to_dict()
    data[field] = value
    with pytest.raises(RecordUnusable):
        Run.from_dict(data)


def test_a_plan_round_trips_through_request_json_and_names_its_target() -> None:
    plan = WorktreePlan("/r", "/r/.git", SHA, "make")
    request = RunRequest(kind="agent", instruction="x", legs=(Leg("main", parse_model("sh")),), cwd="/r",
                         worktree=plan)
    assert RunRequest.from_dict(request.to_dict(), "x").worktree == plan
    assert plan.target(RUN) == Worktree("/r", SHA, f"li/{RUN}", f"/r/.git/li-worktrees/{RUN}")
    reused = WorktreePlan("/r", "/r/.git", SHA, reuse=Worktree("/r", SHA, "li/X", "/p"))
    assert reused.target(RUN).path == "/p"


PATCH = """diff --git a/a.txt b/a.txt
index 1..2 100644
--- a/a.txt
+++ b/a.txt
@@ -1,2 +1,2 @@
-one
+uno
 two
+three
diff --git a/logo.png b/logo.png
new file mode 100644
GIT binary patch
literal 3
Kc${NkU;qFB0RR91

diff --git a/--- odd b/--- odd
new file mode 100644
--- /dev/null
+++ b/--- odd
@@ -0,0 +1 @@
+--- not a header
"""


def test_the_files_of_a_patch_are_read_from_the_patch_alone() -> None:
    from lionrun.domain.worktree import patch_files

    assert patch_files(PATCH) == [{"path": "a.txt", "insertions": 2, "deletions": 1},
                                  {"path": "logo.png", "insertions": None, "deletions": None},
                                  {"path": "--- odd", "insertions": 1, "deletions": 0}]
    assert patch_files("") == []


@given(st.lists(st.tuples(st.from_regex(r"[a-z]{1,8}(/[a-z]{1,8})?", fullmatch=True),
                          st.lists(st.sampled_from(["+", "-", " "]), max_size=20)), max_size=8))
def test_patch_files_counts_every_added_and_removed_line(files: list[tuple[str, list[str]]]) -> None:
    from lionrun.domain.worktree import patch_files

    text = "".join(f"diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n" + "".join(f"{m}x\n" for m in marks)
                   for p, marks in files)
    assert patch_files(text) == [{"path": p, "insertions": marks.count("+"), "deletions": marks.count("-")}
                                 for p, marks in files]
