"""The reads over the real filesystem store: four different answers, and a tail read from the end (D7)."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime

import pytest

from lionrun.adapters.clocks import FakeClock
from lionrun.adapters.fakes import ScriptedProber
from lionrun.adapters.fs_store import FsRunStore
from lionrun.application.observe import Observer
from lionrun.application.reads import RunReads
from tests.builders import RunState, a_run, lay_down


@pytest.fixture
def fs(tmp_path) -> tuple[RunReads, FsRunStore, str]:
    store = FsRunStore(str(tmp_path / "li-home"))
    run = a_run(store, datetime(2026, 7, 25, 17, 50, 10, tzinfo=UTC), RunState.STARTED, status="completed",
                  finished_at="2026-07-25T17:51:00.000000+00:00", outcome="succeeded")
    return RunReads(store, Observer(store, ScriptedProber(), FakeClock()), store), store, run.run_id


def path(store: FsRunStore, run_id: str, *names: str) -> str:
    return os.path.join(store.run_dir(run_id), *names)


def bytes_read_by_this_process() -> int:
    with open("/proc/self/io", encoding="ascii") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("rchar:"))


def test_a_ten_megabyte_console_returns_the_asked_tail_read_from_the_end(fs) -> None:
    reads, store, run_id = fs
    with open(path(store, run_id, "console.log"), "wb") as handle:
        handle.write(b"x" * (10 * 1024 * 1024 - 6) + b"\nlast\n")
    before = bytes_read_by_this_process()
    console = reads.output(run_id, 1000)["console"]
    spent = bytes_read_by_this_process() - before
    assert (console["available"], console["truncated"], len(console["value"])) == (True, True, 1000)
    assert console["value"].endswith("x\nlast\n")
    assert spent < 1024 * 1024, f"read {spent} bytes for a 1000-character tail"


def test_the_whole_log_is_not_truncated(fs) -> None:
    reads, store, run_id = fs
    with open(path(store, run_id, "console.log"), "w", encoding="utf-8") as handle:
        handle.write("héllo wörld\n")
    assert reads.output(run_id)["console"] == {"available": True, "value": "héllo wörld\n", "reason_code": None,
                                               "detail": None, "truncated": False}


def test_a_tail_never_starts_inside_a_multibyte_character(fs) -> None:
    reads, store, run_id = fs
    with open(path(store, run_id, "console.log"), "w", encoding="utf-8") as handle:
        handle.write("ü" * 5000)
    console = reads.output(run_id, 10)["console"]
    assert (console["value"], console["truncated"]) == ("ü" * 10, True)


def test_console_missing_unreadable_and_empty_are_three_different_answers(fs) -> None:
    reads, store, run_id = fs
    missing = reads.output(run_id)["console"]
    os.mkdir(path(store, run_id, "console.log"))  # a directory where a file belongs: never read
    unreadable = reads.output(run_id)["console"]
    os.rmdir(path(store, run_id, "console.log"))
    open(path(store, run_id, "console.log"), "w").close()
    empty = reads.output(run_id)["console"]
    assert (missing["available"], missing["reason_code"], missing["value"]) == (False, "missing", None)
    assert (unreadable["available"], unreadable["reason_code"], unreadable["value"]) == (
        False, "not_regular_file", None)
    assert (empty["available"], empty["value"], empty["truncated"]) == (True, "", False)


def test_a_console_that_is_not_text_is_still_returned_with_replacements(fs) -> None:
    reads, store, run_id = fs
    with open(path(store, run_id, "console.log"), "wb") as handle:
        handle.write(b"ok \xff\xfe done\n")
    console = reads.output(run_id)["console"]
    assert console["available"] is True and console["value"].startswith("ok ") and "done" in console["value"]


def test_manifest_missing_unreadable_malformed_and_empty_are_four_answers(fs) -> None:
    reads, store, run_id = fs
    answers = [reads.output(run_id)["manifest"]]
    os.mkdir(path(store, run_id, "manifest.json"))
    answers.append(reads.output(run_id)["manifest"])
    os.rmdir(path(store, run_id, "manifest.json"))
    for text in ("{truncated", "[]", "{}"):
        with open(path(store, run_id, "manifest.json"), "w", encoding="utf-8") as handle:
            handle.write(text)
        answers.append(reads.output(run_id)["manifest"])
    assert [(a["available"], a["reason_code"], a["value"]) for a in answers] == [
        (False, "missing", None), (False, "not_regular_file", None), (False, "malformed", None),
        (False, "malformed", None), (True, None, {})]
    assert all(a["detail"] for a in answers[:4])


def test_artifacts_missing_unreadable_malformed_and_empty_are_four_answers(fs, monkeypatch) -> None:
    reads, store, run_id = fs
    answers = [reads.output(run_id)["artifacts"]]
    os.mkdir(path(store, run_id, "artifacts"))
    answers.append(reads.output(run_id)["artifacts"])
    denied, real_open = path(store, run_id, "artifacts", "denied.txt"), os.open
    open(denied, "w").close()

    def refuse(name, *args, **kwargs):  # a file whose bytes cannot be read has no digest to list
        if os.path.basename(name) == "denied.txt":
            raise PermissionError(13, "Permission denied", name)
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    answers.append(reads.output(run_id)["artifacts"])
    monkeypatch.undo()
    os.unlink(denied)
    os.rmdir(path(store, run_id, "artifacts"))
    open(path(store, run_id, "artifacts"), "w").close()
    answers.append(reads.output(run_id)["artifacts"])
    assert [(a["available"], a["reason_code"], a["value"]) for a in answers] == [
        (False, "missing", None), (True, None, []), (False, "unreadable", None), (False, "not_a_directory", None)]


def test_a_fifo_among_the_artifacts_is_listed_by_its_type_and_never_hangs_the_read(fs) -> None:
    reads, store, run_id = fs
    os.mkdir(path(store, run_id, "artifacts"))
    os.mkfifo(path(store, run_id, "artifacts", "pipe"))
    artifacts = reads.output(run_id)["artifacts"]
    assert artifacts["available"] and [(a["name"], a["type"], a["sha256"]) for a in artifacts["value"]] == [
        ("pipe", "fifo", None)]


def test_artifacts_are_listed_with_name_path_size_and_digest(fs) -> None:
    reads, store, run_id = fs
    os.makedirs(path(store, run_id, "artifacts", "legs"))
    with open(path(store, run_id, "artifacts", "response.md"), "wb") as handle:
        handle.write(b"# answer\n")
    with open(path(store, run_id, "artifacts", "legs", "a.txt"), "wb") as handle:
        handle.write(b"")
    listing = reads.output(run_id)["artifacts"]["value"]
    assert listing == [
        {"name": "legs/a.txt", "path": path(store, run_id, "artifacts", "legs", "a.txt"), "size": 0,
         "sha256": hashlib.sha256(b"").hexdigest(), "type": "file", "link": None,
         "available": True, "reason_code": None},
        {"name": "response.md", "path": path(store, run_id, "artifacts", "response.md"), "size": 9,
         "sha256": hashlib.sha256(b"# answer\n").hexdigest(), "type": "file", "link": None,
         "available": True, "reason_code": None},
    ]


def test_an_unreadable_record_is_unavailable_and_left_as_it_was(fs) -> None:
    reads, store, run_id = fs
    os.replace(path(store, run_id, "record.json"), path(store, run_id, "moved"))
    os.mkdir(path(store, run_id, "record.json"))
    from lionrun.domain.contract import ContractError

    with pytest.raises(ContractError) as refused:
        reads.status(run_id)
    assert (refused.value.kind.value, refused.value.detail["reason_code"]) == ("unavailable", "not_regular_file")
    row = reads.listing()["runs"][0]
    assert row["error"]["reason_code"] == "not_regular_file" and row["status"] is None
    assert os.path.isdir(path(store, run_id, "record.json"))


# --- cost: what a read costs, not what it answers (moved here from features/d06_lifecycle.feature) ---


def test_a_limited_listing_reads_only_what_the_limit_needs(world, tmp_path) -> None:
    """D6.9's bound as a cost: listing 20 of 10 000 runs reads at most 30 records, on both stores."""
    count: list[str] = []
    if world.kind == "memory":
        store = world.store
    else:
        from lionrun.adapters.fs_store import FsRunStore

        store = FsRunStore(world.store.home, reads=count.append)
    lay_down(world, store, 10_000)
    from lionrun.application.observe import Observer

    listing = RunReads(store, Observer(store, world.prober, world.clock), store).listing(limit=20)
    assert len(listing["runs"]) == 20 and listing["truncated"] is True
    made = store.reads if world.kind == "memory" else count
    assert len(made) <= 30, len(made)
