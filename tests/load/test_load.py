"""Load: many runs submitted by concurrent processes while others wait and list; nothing lost, torn or failed."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from tests.support import machine

WORK = 'echo "$LI_RUN_ID" > "$LI_ARTIFACTS_DIR/id.txt"'


@dataclass
class Shared:
    """What the submitters and observers report to the test, under one lock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lists: int = 0
    waits: int = 0
    done: threading.Event = field(default_factory=threading.Event)

    def fail(self, message: str) -> None:
        with self.lock:
            self.errors.append(message)


def guarded(shared: Shared, body: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            body()
        except BaseException as exc:  # noqa: BLE001 - reported to the test thread, which fails
            shared.fail(f"{type(exc).__name__}: {exc}")
    return run


def submitter(home: str, shared: Shared, count: int) -> Callable[[], None]:
    def body() -> None:
        for _ in range(count):
            envelope = machine("agent", "--detach", "sh", WORK, home=home, timeout=120).envelope
            if not envelope["ok"]:
                shared.fail(f"submit refused: {envelope['error']}")
                continue
            handle = envelope["data"]
            if handle["terminal"] or handle["outcome"] is not None:
                shared.fail(f"a handle claimed an outcome: {handle}")
            with shared.lock:
                shared.ids.append(handle["run_id"])
    return guarded(shared, body)


def observer(home: str, shared: Shared, index: int) -> Callable[[], None]:
    def body() -> None:
        turn = index
        while not shared.done.is_set():
            if turn % 2 == 0:
                check_list(home, shared)
            else:
                check_wait(home, shared)
            turn += 1
    return guarded(shared, body)


def check_list(home: str, shared: Shared) -> None:
    envelope = machine("job", "list", "--limit", "1000", home=home, timeout=120).envelope
    if not envelope["ok"]:
        shared.fail(f"list failed: {envelope['error']}")
        return
    for row in envelope["data"]["runs"]:
        # A folder reserved a moment ago may not have its record yet; a torn record would be malformed.
        if row["error"] is not None and row["error"].get("reason_code") != "missing":
            shared.fail(f"list row error: {row}")
    with shared.lock:
        shared.lists += 1


def check_wait(home: str, shared: Shared) -> None:
    with shared.lock:
        ids = list(shared.ids[-50:])
    if not ids:
        time.sleep(0.05)
        return
    data = machine("job", "wait", *ids, "--max-wait", "1", "--poll-interval", "0.2", home=home,
                   timeout=120).data
    for entry in data["runs"]:
        if entry["error"] is not None:
            shared.fail(f"wait entry error for a submitted run: {entry}")
        elif entry["terminal"] and entry["outcome"] != "succeeded":
            shared.fail(f"a run ended badly under load: {entry}")
    with shared.lock:
        shared.waits += 1


def all_ended(home: str, ids: list[str], deadline: float) -> dict[str, dict[str, object]]:
    """Bounded waits until every id is terminal (or the deadline passes); the last entries by id."""
    entries: dict[str, dict[str, object]] = {}
    remaining = list(ids)
    while remaining and time.monotonic() < deadline:
        data = machine("job", "wait", *remaining, "--max-wait", "10", "--poll-interval", "0.2",
                       home=home, timeout=120).data
        entries.update({e["run_id"]: e for e in data["runs"]})
        remaining = [e["run_id"] for e in data["runs"] if not e["terminal"]]
    return entries


def load(home: str, runs: int, submitters: int, observers: int) -> None:
    shared = Shared()
    per = [runs // submitters + (1 if i < runs % submitters else 0) for i in range(submitters)]
    writers = [threading.Thread(target=submitter(home, shared, n)) for n in per]
    readers = [threading.Thread(target=observer(home, shared, i)) for i in range(observers)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    shared.done.set()
    for thread in readers:
        thread.join()
    assert shared.errors == [], shared.errors[:10]
    assert len(shared.ids) == runs and len(set(shared.ids)) == runs, "run ids are not unique"
    assert shared.lists > 0 and shared.waits > 0, (shared.lists, shared.waits)
    entries = all_ended(home, shared.ids, time.monotonic() + 60 + runs)
    stuck = [i for i in shared.ids if not entries.get(i, {}).get("terminal")]
    assert stuck == [], f"{len(stuck)} runs never reached an end: {stuck[:5]}"
    assert {e["outcome"] for e in entries.values()} == {"succeeded"}
    assert_records_whole(home, shared.ids)


def assert_records_whole(home: str, ids: list[str]) -> None:
    """Every record parses and is ended; each run's artifact names that run (no cross-talk)."""
    folders = sorted(os.listdir(os.path.join(home, "runs")))
    assert folders == sorted(ids), "a run folder exists that no handle named, or one is missing"
    for run_id in ids:
        folder = os.path.join(home, "runs", run_id)
        with open(os.path.join(folder, "record.json"), encoding="utf-8") as handle:
            record = json.load(handle)
        assert record["run_id"] == run_id and record["finished_at"] and record["status"] == "completed"
        with open(os.path.join(folder, "artifacts", "id.txt"), encoding="utf-8") as handle:
            assert handle.read().strip() == run_id
    listing = machine("job", "list", "--limit", "1000", home=home).data
    assert [r["run_id"] for r in listing["runs"]] == sorted(ids, reverse=True)


def test_forty_runs_from_eight_submitters_while_eight_observers_wait_and_list(li_home: str) -> None:
    load(li_home, runs=40, submitters=8, observers=8)


@pytest.mark.slow
@pytest.mark.timeout(900)  # the whole budget of one CI worker is not needed, but a busy one may take minutes
def test_two_hundred_runs_from_eight_submitters_while_eight_observers_wait_and_list(li_home: str) -> None:
    load(li_home, runs=200, submitters=8, observers=8)
