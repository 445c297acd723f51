"""Folders 0700 and files 0600 whatever the umask the user runs `li` (and so the runner) under."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.adversary.harness import call_li, show, wait_gone

STORE_FILES = ["record.json", "console.log", "instruction.txt", "request.json", "manifest.json",
               "record.lock", "artifacts/response.md"]


def _mode(path: Path) -> str:
    return oct(stat.S_IMODE(os.lstat(path).st_mode))


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o000], ids=["umask-022", "umask-002", "umask-000"])
def test_the_store_is_private_whatever_the_umask(tmp_path: Path, mask: int) -> None:
    home = tmp_path / "parent" / "li-home"  # does not exist yet: li creates it
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    def li(*argv: str) -> dict[str, Any]:
        envelope, _, _ = call_li(argv, str(home), str(scratch), umask=mask)
        return envelope

    submitted = li("agent", "--detach", "--cwd", str(scratch), "sh", "echo hello")
    assert submitted["ok"] is True, show(submitted)
    run_id, pid = submitted["data"]["run_id"], submitted["data"]["pid"]
    waited = li("job", "wait", run_id, "--max-wait", "30", "--poll-interval", "0.2")
    assert waited["data"]["all_terminal"] is True, show(waited)
    wait_gone(pid)
    for argv in (("job", "status", run_id), ("job", "output", run_id), ("job", "list"),
                 ("job", "kill", run_id)):
        assert li(*argv)["ok"] is True
    run = home / "runs" / run_id
    folders = {str(p): _mode(p) for p in (home, home / "runs", run, run / "artifacts")}
    assert folders == dict.fromkeys(folders, "0o700"), show(folders)
    files = {name: _mode(run / name) for name in STORE_FILES}
    assert files == dict.fromkeys(STORE_FILES, "0o600"), show(files)
    loose = {}
    for folder, dirs, names in os.walk(home):
        for name in dirs + names:
            path = Path(folder, name)
            if stat.S_IMODE(os.lstat(path).st_mode) & 0o077:
                loose[str(path.relative_to(home))] = _mode(path)
    assert loose == {}, f"store entries readable or writable by others under umask {oct(mask)}: {loose}"
