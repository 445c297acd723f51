"""The store's own lock (filelock on `$LI_HOME/store.lock`): one prune at a time, real processes;
a read never imports filelock; the lock file is private and never followed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time

import pytest
from filelock import FileLock

from lionrun.adapters.store_lock import hold
from lionrun.application.ports import StoreBusy
from tests.e2e.test_prune_real import on_disk, record
from tests.e2e.test_startup_imports import imported_top_levels
from tests.support import li_bin, machine, run_li


def start_prune(home: str, env: dict[str, str]) -> subprocess.Popen[str]:
    full = {k: v for k, v in os.environ.items() if k != "LI_NOTIFY_COMMAND"}
    full.update(LI_HOME=home, **env)
    return subprocess.Popen([li_bin(), "job", "prune", "--machine"], env=full, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def answer(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=90)
    envelope = json.loads(out)
    assert envelope["ok"], (envelope, err)
    data: dict[str, object] = envelope["data"]
    return data


def test_two_concurrent_prunes_serialise_on_the_store_lock(li_home: str, tmp_path) -> None:
    ended = {record(li_home, status="completed", finished_ago=10) for _ in range(3)}
    marks = tmp_path / "marks"
    marks.mkdir()
    first = start_prune(li_home, {"LI_FAULT_PAUSE": "store_locked", "LI_FAULT_DIR": str(marks),
                                  "LI_FAULT_SECONDS": "4"})
    try:
        for _ in range(600):  # until the first holds the lock (it marks, then sleeps holding it)
            if (marks / "store_locked.pid").exists() or first.poll() is not None:
                break
            time.sleep(0.05)
        assert (marks / "store_locked.pid").exists(), first.communicate(timeout=90)
        assert on_disk(li_home) == ended  # the first holds the lock and has removed nothing yet
        second = start_prune(li_home, {})
        second_data, first_data = answer(second), answer(first)
    finally:
        first.kill()
        first.wait()
    # The second started while the first held the lock: it waited, then found nothing left. Without
    # the lock it would have removed the runs itself while the first slept.
    assert set(first_data["removed"]) == ended  # type: ignore[arg-type]
    assert second_data == {"removed": [], "kept": [], "dry_run": False}
    assert on_disk(li_home) == set()


def test_the_lock_file_is_private_and_a_planted_link_is_refused_not_followed(li_home: str, tmp_path) -> None:
    assert machine("job", "prune", home=li_home).data["removed"] == []
    lock = os.path.join(li_home, "store.lock")
    assert stat.S_IMODE(os.lstat(lock).st_mode) == 0o600
    os.unlink(lock)
    target = tmp_path / "elsewhere"
    os.symlink(target, lock)
    refused = machine("job", "prune", home=li_home).error
    assert refused["kind"] == "unavailable"
    assert "store.lock" in refused["message"] and "link" in refused["message"]
    assert not target.exists() and os.path.islink(lock)


def test_a_held_store_lock_is_busy_after_the_wait_naming_the_file(li_home: str) -> None:
    with FileLock(os.path.join(li_home, "store.lock")), pytest.raises(StoreBusy, match="store.lock"):
        hold(li_home, timeout=0.05)
    hold(li_home, timeout=0.05)()  # free again: taken and released


def test_a_store_folder_that_does_not_exist_is_not_created_by_the_lock(tmp_path) -> None:
    missing = str(tmp_path / "no-store")
    hold(missing)()
    assert not os.path.exists(missing)


@pytest.mark.parametrize("argv", [("job", "list"), ("job", "status", "{run}"), ("job", "wait", "{run}", "--max-wait", "0")])
def test_a_read_never_imports_filelock(li_home: str, argv: tuple[str, ...]) -> None:
    run_id = record(li_home, status="completed", finished_ago=1)
    words = [word.format(run=run_id) for word in argv]
    result = run_li(*words, "--machine", home=li_home, env={"PYTHONPROFILEIMPORTTIME": "1"})
    names = imported_top_levels(result.stderr)
    assert "lionrun" in names, "importtime produced no report; the check would prove nothing"
    assert "filelock" not in names


def test_a_prune_does_import_filelock_so_the_check_can_see_it(li_home: str) -> None:
    result = run_li("job", "prune", "--machine", home=li_home, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert "filelock" in imported_top_levels(result.stderr)
