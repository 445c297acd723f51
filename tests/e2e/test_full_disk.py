"""An end survives a full disk. On a small tmpfs this test mounts (root; CI runs
as root), work that exits 0 while the disk is full ends `completed`/`succeeded` once space is
freed, with no corrupt record; a reader meanwhile answers as before (the run still running)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import li_bin


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("the full-disk test mounts a tmpfs: CI runs it as root")
        pytest.skip("mounting a small tmpfs needs root: run as root (CI does)")
    where = tmp_path / "disk"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def li(home: Path, *argv: str, env: dict[str, str] | None = None) -> dict:
    done = subprocess.run([li_bin(), *argv, "--machine"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LI_HOME": str(home), "LI_STORE_OUTAGE": "120", **(env or {})},
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def fill(disk: Path) -> Path:
    """Write until the disk refuses (ENOSPC), then return the filler to free later."""
    filler = disk / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    # the inode table too: names cost space on tmpfs as well
    extra = disk / "fill-names"
    extra.mkdir(exist_ok=True)
    try:
        for index in range(100_000):
            (extra / f"n{index}").touch()
    except OSError:
        pass
    return filler


def test_work_that_exits_0_on_a_full_disk_ends_succeeded_once_space_returns(small_disk: Path,
                                                                           tmp_path: Path) -> None:
    home = small_disk / "home"
    go = tmp_path / "go"
    submitted = li(home, "agent", "--detach", "--cwd", str(tmp_path), "sh",
                   f"while [ ! -e {go} ]; do sleep 0.05; done; echo the answer; exit 0")
    run_id = submitted["data"]["run_id"]
    record = home / "runs" / run_id / "record.json"
    deadline = time.monotonic() + 30
    while "incarnation" not in record.read_text() or json.loads(record.read_text()).get("confinement") is None:
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.05)
    filler = fill(small_disk)
    go.touch()
    time.sleep(2.0)  # the work has ended; its runner now meets the full disk
    during = li(home, "job", "status", run_id)
    assert during["ok"] is True and during["data"]["terminal"] is False, during
    os.unlink(filler)
    subprocess.run(["rm", "-rf", str(small_disk / "fill-names")], check=True)
    waited = li(home, "job", "wait", run_id, "--max-wait", "60", "--poll-interval", "0.2")
    assert waited["data"]["all_terminal"] is True, waited
    status = li(home, "job", "status", run_id)["data"]
    assert (status["status"], status["outcome"], status["exit_code"]) == ("completed", "succeeded", 0), status
    assert status["runner_end"] is None
    json.loads(record.read_text())  # whole, never torn
