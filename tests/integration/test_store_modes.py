"""The store's modes on a real filesystem: found and tightened, links never followed, FIFOs never opened.

Built under umask 022, as an old store would have been: folders 0755, files 0644. A run's work
(one run with `--confine off` reaches its run folder) has planted a link to a file outside the
store, a link to a folder outside it, a hard link to an outside file and a FIFO in the run's
folder; none of them may be changed, followed or block the walk. What the work wrote into its
own `artifacts/` is the work's: never judged, never changed.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lionrun.adapters.diagnostics import SystemDiagnostics
from lionrun.adapters.store_modes import store_modes
from lionrun.application.doctor import StoreModes, diagnose

RUN = "20260725T175010-abcdef"


@dataclass
class Store:
    home: Path
    run: Path
    outside_file: Path
    outside_folder: Path
    hard_linked: Path


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def store(tmp_path: Path, umask_022: None) -> Store:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret, hard = outside / "secret.txt", outside / "hard.txt"
    secret.write_text("not the store's")
    hard.write_text("not the store's either")
    (outside / "inner.txt").write_text("inside an outside folder")
    home = tmp_path / "li"
    run = home / "runs" / RUN
    (run / "artifacts" / "deep").mkdir(parents=True)
    (run / "planted").mkdir()
    for name in ("record.json", "console.log", "instruction.txt"):
        (run / name).write_text("{}")
    (run / "planted" / "answer.md").write_text("an answer")
    (run / "artifacts" / "deep" / "result.md").write_text("the work's own, 0644 as it chose")
    (home / "config.toml").write_text('notify = ["true"]\n')
    os.symlink(secret, run / "planted" / "link-to-file")
    os.symlink(outside, run / "planted" / "link-to-folder")
    os.link(hard, run / "planted" / "hard-link")
    os.mkfifo(run / "planted" / "fifo")
    return Store(home, run, secret, outside, hard)


def outside_modes(s: Store) -> dict[Path, int]:
    paths = [s.outside_file, s.outside_folder, s.outside_folder / "inner.txt", s.hard_linked]
    return {p: mode(p) for p in paths}


def walk(home: Path, tighten: bool, limit: int | None = None) -> StoreModes:
    """The walk in a thread, so that a walk blocked on the FIFO fails the test instead of hanging it."""
    found: list[StoreModes] = []
    kwargs = {} if limit is None else {"limit": limit}
    worker = threading.Thread(target=lambda: found.append(store_modes(str(home), tighten, **kwargs)), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the walk blocked (did it open the FIFO?)"
    return found[0]


def test_an_old_store_is_found_open_and_left_unchanged_by_the_check(store: Store) -> None:
    before = {p: mode(p) for p in store.home.rglob("*")}
    found = walk(store.home, tighten=False)
    # home, runs/, the run, artifacts/, planted/, config.toml, three run files, answer.md, the hard link
    assert found.loose == 11, found
    assert found.example == f"{store.home} (0755)"
    assert (found.tightened, found.failed, found.truncated) == (0, 0, False)
    assert {p: mode(p) for p in store.home.rglob("*")} == before


def test_fix_makes_folders_0700_and_files_0600_and_never_touches_what_links_point_to(store: Store) -> None:
    outside = outside_modes(store)
    found = walk(store.home, tighten=True)
    assert found.tightened == 10 and found.truncated is False, found
    for folder in (store.home, store.home / "runs", store.run, store.run / "artifacts", store.run / "planted"):
        assert mode(folder) == 0o700, folder
    for file in (store.home / "config.toml", store.run / "record.json", store.run / "planted" / "answer.md"):
        assert mode(file) == 0o600, file
    assert outside_modes(store) == outside  # link targets and the hard-linked file keep their modes
    assert stat.S_ISFIFO(os.lstat(store.run / "planted" / "fifo").st_mode)
    # The hard link may be a file outside the store: left open, and said so.
    assert (found.loose, found.failed) == (1, 1) and "hard links" in (found.failure or "")
    assert "hard-link" in (found.example or "")


def test_a_second_check_after_the_fix_finds_only_what_it_could_not_change(store: Store) -> None:
    walk(store.home, tighten=True)
    os.unlink(store.run / "planted" / "hard-link")
    again = walk(store.home, tighten=False)
    assert (again.loose, again.failed, again.tightened) == (0, 0, 0), again


def test_only_group_and_other_bits_are_removed(store: Store) -> None:
    script = store.run / "planted" / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    walk(store.home, tighten=True)
    assert mode(script) == 0o700  # the owner keeps its execute bit


def test_a_run_folder_replaced_by_a_link_to_an_outside_folder_is_never_entered(store: Store, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "file").write_text("x")
    os.symlink(elsewhere, store.home / "runs" / "20260725T175011-bbbbbb")
    walk(store.home, tighten=True)
    assert (mode(elsewhere), mode(elsewhere / "file")) == (0o755, 0o644)


def work_files(s: Store) -> dict[Path, int]:
    return {p: mode(p) for p in (s.run / "artifacts").rglob("*")}


def test_what_the_work_wrote_into_its_artifacts_is_neither_judged_nor_changed(store: Store) -> None:
    (store.run / "artifacts").chmod(0o700)
    work = work_files(store)
    assert work[store.run / "artifacts" / "deep" / "result.md"] == 0o644
    found = walk(store.home, tighten=False)
    assert "artifacts" not in (found.example or "") and found.loose == 10, found
    walk(store.home, tighten=True)
    assert work_files(store) == work
    again = walk(store.home, tighten=False)
    assert again.loose == 1 and "hard-link" in (again.example or ""), again  # only what it could not change


def test_the_artifacts_folder_itself_is_the_stores_and_judged(store: Store) -> None:
    walk(store.home, tighten=True)
    (store.run / "artifacts").chmod(0o755)
    os.unlink(store.run / "planted" / "hard-link")
    found = walk(store.home, tighten=False)
    assert (found.loose, found.example) == (1, f"{store.run / 'artifacts'} (0755)"), found


def test_other_things_in_li_home_are_not_the_stores_to_change(store: Store) -> None:
    mine = store.home / "my-notes.txt"
    mine.write_text("kept beside the store")
    walk(store.home, tighten=True)
    assert mode(mine) == 0o644


def test_the_walk_stops_at_its_bound_and_says_so(store: Store) -> None:
    found = walk(store.home, tighten=True, limit=4)
    assert found.truncated is True and found.examined == 4


def test_no_store_yet_is_nothing_open(tmp_path: Path) -> None:
    assert walk(tmp_path / "never-created", tighten=True) == StoreModes()


def test_the_real_doctor_warns_then_fixes_then_passes(store: Store) -> None:
    os.unlink(store.run / "planted" / "hard-link")
    diag = SystemDiagnostics(str(store.home), {})

    def private(report: dict) -> dict:
        return next(c for c in report["checks"] if c["name"] == "store.private")

    before = private(diagnose(diag))
    assert before["ok"] is False and "10 entries open to group or others" in before["detail"]
    fixed = private(diagnose(diag, fix=True))
    assert fixed["ok"] is True and "tightened 10 entries" in fixed["detail"]
    assert private(diagnose(diag))["ok"] is True


def test_a_home_doctor_creates_is_private_whatever_the_umask(tmp_path: Path, umask_022: None) -> None:
    home = tmp_path / "fresh" / "li"
    assert SystemDiagnostics(str(home), {}).store_write_error() is None
    assert mode(home) == 0o700
