"""Store faults with real processes and a real filesystem: bad records, bad bytes, read-only, full, clock jumps.

For each: every verb answers (one envelope), the answer is true (never a false terminal, never a
false success, never "none" for "could not read"), and no other run is disturbed.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from lionrun.domain.run import iso
from tests.faults.helpers import (
    NEVER,
    ask,
    assert_output_is_available_or_says_why,
    assert_truthful,
    assert_undisturbed,
    bystander,
    kill_group,
    raw_record,
    submit,
    wait_until_ended,
)
from tests.support import machine
from tools.synthetic import finished_runs, write_run

GARBAGE = {
    "truncated": None,  # the first half of a real record
    "empty": b"",
    "not_json": b"this is not json",
    "a_list": b"[1, 2, 3]",
    "wrong_types": b'{"run_id": 7, "status": ["x"], "submitted_at": 0, "kind": "agent", "generation": "g"}',
    "unknown_schema": b'{"schema_version": 99, "run_id": "x", "status": "completed"}',
    "invalid_utf8": b'{"status": "\xff\xfe"}',
    "nul_bytes": b"\x00" * 64,
}


@pytest.fixture
def witness(li_home: str) -> tuple[str, bytes]:
    run_id = finished_runs(li_home, 1)[0]
    return run_id, raw_record(li_home, run_id)


def corrupt(home: str, run_id: str, kind: str) -> bytes:
    path = os.path.join(home, "runs", run_id, "record.json")
    with open(path, "rb") as handle:
        whole = handle.read()
    body = GARBAGE[kind]
    body = whole[: len(whole) // 2] if body is None else body
    with open(path, "wb") as handle:
        handle.write(body)
    return body


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_a_garbage_record_is_reported_unusable_by_every_verb_and_never_rewritten(
    kind: str, li_home: str, witness: tuple[str, bytes]
) -> None:
    bad = write_run(li_home, "20260102T000000-0000aa").rsplit("/", 1)[-1]
    body = corrupt(li_home, bad, kind)
    status = machine("job", "status", bad, home=li_home).envelope
    assert status["ok"] is False and status["error"]["kind"] == "unavailable", status
    assert status["error"]["detail"]["reason_code"], status
    wait = machine("job", "wait", bad, witness[0], "--max-wait", "0", home=li_home).data
    assert wait["runs"][0]["error"] is not None and wait["runs"][0]["terminal"] is None
    assert wait["runs"][1]["terminal"] is True  # the other id is still observed
    assert wait["all_terminal"] is False and bad not in wait["pending"]
    rows = {r["run_id"]: r for r in machine("job", "list", home=li_home).data["runs"]}
    assert rows[bad]["error"] is not None and rows[bad]["terminal"] is None
    assert rows[witness[0]]["outcome"] == "succeeded"
    kill = machine("job", "kill", bad, home=li_home).envelope
    assert kill["ok"] is False and kill["error"]["kind"] == "unavailable", kill
    output = machine("job", "output", bad, home=li_home).envelope
    if output["ok"]:
        assert_output_is_available_or_says_why(output)
    else:
        assert output["error"]["kind"] == "unavailable", output
    prune = machine("job", "prune", "--dry-run", home=li_home).data
    assert bad not in prune["removed"] and prune["removed"] == [witness[0]]
    assert raw_record(li_home, bad) == body  # no reader ever rewrote it
    assert raw_record(li_home, witness[0]) == witness[1]


def test_a_console_log_with_invalid_utf8_is_returned_as_text_not_a_failure(li_home: str) -> None:
    run_id = finished_runs(li_home, 1)[0]
    with open(os.path.join(li_home, "runs", run_id, "console.log"), "wb") as handle:
        handle.write(b"ok \xff\xfe\xc3 half \xe2\x82 done\n" * 50 + b"\xf0\x9f\x98")
    for tail in ("20000", "7", "1", "0"):
        result = machine("job", "output", run_id, "--tail-chars", tail, home=li_home)
        console = result.data["console"]
        assert console["available"] is True and isinstance(console["value"], str), console
        assert len(console["value"]) <= int(tail)
        assert isinstance(console["truncated"], bool)
        result.stdout.encode("utf-8")  # the wire itself is valid UTF-8
    status = machine("job", "status", run_id, home=li_home).data
    assert (status["terminal"], status["outcome"]) == (True, "succeeded")


def test_an_unreadable_console_is_unavailable_never_empty(li_home: str) -> None:
    run_id = finished_runs(li_home, 1)[0]
    console_path = os.path.join(li_home, "runs", run_id, "console.log")
    os.unlink(console_path)
    os.mkdir(console_path)  # a directory where the log should be: unreadable even for root
    console = machine("job", "output", run_id, home=li_home).data["console"]
    assert console["available"] is False and console["value"] is None and console["reason_code"], console


# --- read-only store ---------------------------------------------------------------------------


def chattr(flag: str, path: str) -> None:
    subprocess.run(["chattr", flag, path], check=True, capture_output=True)


@pytest.fixture
def immutable() -> Iterator[list[str]]:
    """Folders made immutable with `chattr +i` (root ignores permission bits); always cleared."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed: cannot make a folder read-only for root")
    made: list[str] = []
    yield made
    for path in made:
        subprocess.run(["chattr", "-i", path], capture_output=True)


def make_immutable(made: list[str], path: str) -> None:
    try:
        chattr("+i", path)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"chattr +i is not supported here: {exc.stderr.decode(errors='replace').strip()}")
    made.append(path)


def test_a_submit_into_a_read_only_store_is_refused_and_leaves_nothing(
    li_home: str, immutable: list[str], witness: tuple[str, bytes]
) -> None:
    runs = os.path.join(li_home, "runs")
    before = sorted(os.listdir(runs))
    make_immutable(immutable, runs)
    refused = machine("agent", "--detach", "sh", "true", home=li_home).envelope
    assert refused["ok"] is False and refused["error"]["kind"] == "unavailable", refused
    assert sorted(os.listdir(runs)) == before
    listing = machine("job", "list", home=li_home).data
    assert [r["run_id"] for r in listing["runs"]] == before
    assert_undisturbed_synthetic(li_home, *witness)


def gated(go: pathlib.Path) -> str:
    """Work that waits for `go`, but never for more than a minute: a failed test leaves no spinner."""
    return (f'i=0; while [ ! -e {go} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; '
            'echo x > "$LI_ARTIFACTS_DIR/a.txt"')


def test_a_run_whose_folder_turns_read_only_is_never_called_finished_until_an_end_is_written(
    li_home: str, tmp_path: pathlib.Path, immutable: list[str]
) -> None:
    witness = bystander(li_home)
    witness_bytes = raw_record(li_home, witness)
    go = tmp_path / "go"
    run_id = submit(li_home, gated(go))
    folder = os.path.join(li_home, "runs", run_id)
    pgid = None
    try:
        wait_for(lambda: machine("job", "status", run_id, home=li_home).data["alive"] is True)
        with open(os.path.join(folder, "record.json"), encoding="utf-8") as handle:
            pgid = json.load(handle)["incarnation"]["pgid"]
        make_immutable(immutable, folder)
        go.touch()  # the work finishes; its manifest and end cannot be written
        wait_for(lambda: machine("job", "status", run_id, home=li_home).data["alive"] is False)
        answers = ask(li_home, run_id)
        assert_truthful(answers, work_completed=False, record_end=False)
        data = answers.status["data"]
        assert (data["status"], data["terminal"], data["possibly_orphaned"]) == ("exited", False, True), data
        assert run_id in answers.wait["data"]["stopped_without_end"]
    finally:
        for path in list(immutable):
            subprocess.run(["chattr", "-i", path], capture_output=True)
        kill_group(pgid)
    reaped = ask(li_home, run_id)  # writable again: the next observation publishes the reap
    assert_truthful(reaped, work_completed=False, record_end=True)
    assert (reaped.status["data"]["terminal"], reaped.status["data"]["outcome"]) == (True, "indeterminate")
    assert_undisturbed(li_home, witness, witness_bytes)


def assert_undisturbed_synthetic(home: str, run_id: str, before: bytes) -> None:
    assert raw_record(home, run_id) == before
    data = machine("job", "status", run_id, home=home).data
    assert (data["terminal"], data["outcome"]) == (True, "succeeded")


def wait_for(condition: object, timeout: float = NEVER) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached")


# --- a full disk -------------------------------------------------------------------------------


@pytest.fixture
def tiny_tmpfs(tmp_path: pathlib.Path) -> Iterator[str]:
    """A 1 MiB tmpfs to fill up; skipped (with the reason) where mounting is not allowed."""
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root/CAP_SYS_ADMIN): {done.stderr.strip()}")
    try:
        yield str(mount_point)
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def fill(folder: str) -> str:
    path = os.path.join(folder, "filler")
    with open(path, "wb", buffering=0) as handle:
        for size in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * size)
    return path


def test_a_full_disk_refuses_new_runs_and_keeps_every_answer_true(tiny_tmpfs: str, tmp_path: pathlib.Path) -> None:
    home = os.path.join(tiny_tmpfs, "li")
    os.makedirs(home)
    witness = bystander(home)
    witness_bytes = raw_record(home, witness)
    go = tmp_path / "go"
    running = submit(home, gated(go))
    wait_for(lambda: machine("job", "status", running, home=home).data["alive"] is True)
    pgid = json.loads(raw_record(home, running))["incarnation"]["pgid"]
    filler = fill(tiny_tmpfs)
    try:
        refused = machine("agent", "--detach", "sh", "true", home=home).envelope
        if refused["ok"]:  # a record fitted in the last bytes; it must then be honest about itself
            assert_truthful(ask(home, refused["data"]["run_id"]), work_completed=False, record_end=True)
        else:
            assert refused["error"]["kind"] == "unavailable", refused
        go.touch()
        # The work ends at once (its artifact write fails on the full disk); its runner keeps the
        # end in memory and waits for space, so it stays alive meanwhile and
        # every answer must stay non-terminal and true.
        runner = json.loads(raw_record(home, running))["pid"]
        wait_for(lambda: work_gone(running, runner))
        answers = ask(home, running)
        assert_truthful(answers, work_completed=False, record_end=False)
        assert machine("job", "list", home=home).envelope["ok"] is True
        os.unlink(filler)
        filler = ""
        ended = wait_until_ended(home, running)  # space came back: the runner writes the real end
        assert ended["reason_code"] not in ("process_gone_without_outcome", "process_gone_zombie"), ended
    finally:
        kill_group(pgid)
        if filler:
            os.unlink(filler)
    after = ask(home, running)
    assert_truthful(after, work_completed=False, record_end=True)
    assert after.status["data"]["terminal"] is True, after.status
    assert_undisturbed(home, witness, witness_bytes)


def work_gone(run_id: str, runner: int) -> bool:
    """No process but the runner carries the run's tag (the work, started by it, has ended)."""
    tag = f"LI_RUN_ID={run_id}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == runner:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if tag in handle.read().split(b"\0"):
                    return False
        except OSError:
            continue
    return True


# --- clock jumps -------------------------------------------------------------------------------


def live_incarnation(command: list[str]) -> tuple[subprocess.Popen[bytes], dict[str, object]]:
    import psutil

    from lionrun.adapters.processes import host_facts

    child = subprocess.Popen(command, start_new_session=True)
    host = host_facts()
    return child, {"host_id": host.host_id, "boot_id": host.boot_id, "pid": child.pid,
                   "create_time": psutil.Process(child.pid).create_time(), "pgid": child.pid}


@pytest.mark.parametrize("jump", [timedelta(days=-365 * 30), timedelta(days=3650)])
def test_a_clock_jump_never_ends_a_live_run_nor_resolves_a_preparing_one(
    jump: timedelta, li_home: str, witness: tuple[str, bytes]
) -> None:
    """A record stamped far in the past or the future (the clock jumped): only evidence ends a run."""
    stamp = iso(datetime.now(UTC) + jump)
    child, incarnation = live_incarnation(["sleep", "120"])
    try:
        alive = write_run(li_home, "20260103T000000-0000b1", status="running", submitted_at=stamp,
                          started_at=stamp, pid=child.pid, incarnation=incarnation).rsplit("/", 1)[-1]
        preparing = write_run(li_home, "20260103T000001-0000b2", status="running", submitted_at=stamp,
                              spawn_state="preparing").rsplit("/", 1)[-1]
        live = ask(li_home, alive)
        assert_truthful(live, work_completed=False, record_end=False)
        assert (live.status["data"]["alive"], live.status["data"]["status"]) == (True, "running")
        assert alive in live.wait["data"]["pending"]
        prep = ask(li_home, preparing)
        assert_truthful(prep, work_completed=False, record_end=False)
        expected = "unresolved_spawn" if jump.total_seconds() < -600 else "pending"  # aged or fresh
        assert preparing in prep.wait["data"][expected], prep.wait["data"]
        assert prep.status["data"]["possibly_orphaned"] is (expected == "unresolved_spawn")
    finally:
        child.kill()
        child.wait()
    gone = ask(li_home, alive)  # now the evidence is conclusive, whatever the clock says
    assert_truthful(gone, work_completed=False, record_end=True)
    assert gone.status["data"]["outcome"] == "indeterminate"
    assert raw_record(li_home, witness[0]) == witness[1]


def test_an_end_stamped_before_its_start_is_still_the_recorded_end(li_home: str) -> None:
    later = datetime.now(UTC)
    run_id = write_run(li_home, "20260104T000000-0000c1", submitted_at=iso(later),
                       finished_at=iso(later - timedelta(hours=5)), outcome="succeeded").rsplit("/", 1)[-1]
    answers = ask(li_home, run_id)
    assert_truthful(answers, work_completed=True, record_end=True)
    assert (answers.status["data"]["terminal"], answers.status["data"]["outcome"]) == (True, "succeeded")

