"""`.worktreeinclude`'s copy (adapters/git.py `_copy_regular`) on a real filesystem: regular files
only, never through a link on either side, never over anything, the mode kept."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lionrun.adapters.git import _copy_regular


def tree(tmp_path: Path) -> tuple[str, str]:
    repository, worktree = tmp_path / "repo", tmp_path / "worktree"
    (repository / "deep" / "er").mkdir(parents=True)
    worktree.mkdir()
    (repository / "deep" / "er" / "tool.sh").write_text("#!/bin/sh\n")
    (repository / "deep" / "er" / "tool.sh").chmod(0o750)
    return str(repository), str(worktree)


def test_a_regular_file_is_copied_with_its_mode_into_folders_made_for_it(tmp_path: Path) -> None:
    repository, worktree = tree(tmp_path)
    assert _copy_regular(repository, worktree, "deep/er/tool.sh")
    copied = Path(worktree, "deep", "er", "tool.sh")
    assert copied.read_text() == "#!/bin/sh\n" and stat.S_IMODE(copied.stat().st_mode) == 0o750


def test_nothing_is_copied_over_what_the_checkout_has(tmp_path: Path) -> None:
    repository, worktree = tree(tmp_path)
    Path(worktree, "deep", "er").mkdir(parents=True)
    Path(worktree, "deep", "er", "tool.sh").write_text("the checkout's\n")
    assert not _copy_regular(repository, worktree, "deep/er/tool.sh")
    assert Path(worktree, "deep", "er", "tool.sh").read_text() == "the checkout's\n"


def test_a_link_on_either_side_ends_the_copy_and_writes_nothing_where_it_points(tmp_path: Path) -> None:
    repository, worktree = tree(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, os.path.join(worktree, "deep"))  # the checkout's folder is a link
    assert not _copy_regular(repository, worktree, "deep/er/tool.sh")
    assert list(elsewhere.iterdir()) == []
    os.unlink(os.path.join(worktree, "deep"))
    secret = tmp_path / "secret.txt"
    secret.write_text("not the repository's\n")
    os.symlink(secret, os.path.join(repository, "link.txt"))  # the repository's file is a link
    assert not _copy_regular(repository, worktree, "link.txt")
    assert not os.path.lexists(os.path.join(worktree, "link.txt"))


def test_a_fifo_or_a_path_that_climbs_is_not_copied_and_never_blocks(tmp_path: Path) -> None:
    repository, worktree = tree(tmp_path)
    os.mkfifo(os.path.join(repository, "pipe"))
    assert not _copy_regular(repository, worktree, "pipe")
    assert not os.path.lexists(os.path.join(worktree, "pipe"))
    for climbing in ("../repo/deep/er/tool.sh", "deep/../deep/er/tool.sh", "/etc/passwd", ""):
        assert not _copy_regular(repository, worktree, climbing)
