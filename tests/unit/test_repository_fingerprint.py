"""Item 4's fallback: the fingerprint of a repository's shared config, hooks and info
(taken where they cannot be made read-only to the work), its pure compare, and doctor's check of
the runs whose work changed them."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from lionrun.adapters.git import shared_fingerprint
from lionrun.adapters.memory_store import MemoryRunStore
from lionrun.application.doctor import check_repository_changes, runs_that_changed_repositories
from lionrun.domain.run import Run, iso
from lionrun.domain.worktree import FINGERPRINT_CUT, REPOSITORY_CHANGES_MAX, repository_changes

PATHS = st.sampled_from(["config", "hooks", "hooks/pre-commit", "hooks/post-checkout", "info", "info/exclude",
                         "info/attributes", "hooks/x/y"])
PRINTS = st.dictionaries(PATHS, st.text(min_size=1, max_size=20), max_size=8)


@given(PRINTS)
def test_a_fingerprint_compared_with_itself_names_nothing(prints: dict[str, str]) -> None:
    assert repository_changes(prints, dict(prints)) == []


@given(PRINTS, PRINTS)
def test_the_compare_names_exactly_the_paths_added_removed_or_changed(before: dict[str, str],
                                                                        after: dict[str, str]) -> None:
    named = repository_changes(before, after)
    assert named == sorted(named) and len(named) == len(set(named))
    for path in before.keys() | after.keys():
        assert (path in named) == (before.get(path) != after.get(path))
    assert repository_changes(after, before) == named  # symmetric: a removal is a change too


def test_the_compare_is_bounded() -> None:
    before = {f"hooks/h{i:04}": "file 755 x" for i in range(REPOSITORY_CHANGES_MAX * 3)}
    assert len(repository_changes(before, {})) == REPOSITORY_CHANGES_MAX


def shared(tmp_path: Path) -> Path:
    common = tmp_path / ".git"
    (common / "hooks").mkdir(parents=True)
    (common / "info").mkdir()
    (common / "config").write_text("[core]\n\tbare = false\n")
    (common / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\n")
    (common / "info" / "exclude").write_text("# nothing\n")
    return common


def test_every_change_a_work_could_plant_changes_the_fingerprint(tmp_path: Path) -> None:
    common = shared(tmp_path)
    first = shared_fingerprint(str(common))
    assert set(first) == {"config", "hooks", "hooks/pre-commit.sample", "info", "info/exclude"}
    assert shared_fingerprint(str(common)) == first  # stable while nothing changes
    (common / "config").write_text("[core]\n\tfsmonitor = /tmp/evil\n")
    (common / "hooks" / "pre-commit.sample").chmod(0o755)  # a mode alone
    (common / "hooks" / "post-checkout").symlink_to("/tmp/evil")  # a link, never followed
    (common / "info" / "exclude").unlink()
    os.mkfifo(common / "info" / "attributes")  # never opened: no hang
    second = shared_fingerprint(str(common))
    assert repository_changes(first, second) == ["config", "hooks/post-checkout", "hooks/pre-commit.sample",
                                                 "info/attributes", "info/exclude"]
    assert second["hooks/post-checkout"] == "link /tmp/evil"
    assert second["info/attributes"].startswith("other ")


def test_a_link_in_place_of_a_shared_folder_is_not_followed(tmp_path: Path) -> None:
    common = shared(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret").write_text("x")
    (common / "hooks" / "pre-commit.sample").unlink()
    (common / "hooks").rmdir()
    (common / "hooks").symlink_to(elsewhere)
    prints = shared_fingerprint(str(common))
    assert prints["hooks"] == f"link {elsewhere}"
    assert not any(path.startswith("hooks/") for path in prints)


def test_the_fingerprint_is_bounded_in_paths(tmp_path: Path, monkeypatch) -> None:
    import lionrun.domain.worktree as worktree

    common = shared(tmp_path)
    for i in range(20):
        (common / "hooks" / f"h{i}").write_text("x")
    monkeypatch.setattr(worktree, "FINGERPRINT_MAX_ENTRIES", 8)
    prints = shared_fingerprint(str(common))
    assert FINGERPRINT_CUT in prints and len(prints) == 9


def test_an_absent_repository_fingerprints_as_nothing(tmp_path: Path) -> None:
    assert shared_fingerprint(str(tmp_path / "gone")) == {}


NOW = datetime(2026, 12, 5, 21, 0, tzinfo=UTC)


def ended(store: MemoryRunStore, when: datetime, changes: list[str] | None) -> str:
    run_id = store.reserve(when)
    store.create(Run(run_id=run_id, kind="agent", status="completed", spawn_state=None, submitted_at=iso(when),
                     finished_at=iso(when), outcome="succeeded",
                     repository_changes=changes))
    return run_id


def test_doctor_warns_of_recent_runs_that_changed_a_repository_and_only_those() -> None:
    store = MemoryRunStore()
    changed = ended(store, NOW - timedelta(hours=1), ["config"])
    ended(store, NOW - timedelta(hours=2), [])  # compared: nothing changed
    ended(store, NOW - timedelta(hours=3), None)  # not compared (read-only to the work)
    ended(store, NOW - timedelta(days=30), ["hooks/pre-commit"])  # long ago
    assert runs_that_changed_repositories(store, NOW) == [changed]
    check = check_repository_changes([changed])
    assert (check.ok, check.severity) == (False, "warning") and changed in check.detail and check.fix
    assert check_repository_changes([]).ok is True
