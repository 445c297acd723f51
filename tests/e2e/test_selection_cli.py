"""Selections: `li job list --label/--model/--since`, `li job wait|kill` with several ids, `--label`, `--status`."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

from lionrun.adapters.fs_store import FsRunStore
from lionrun.domain.run import Run, iso
from tests.builders import RealBatch
from tests.support import machine, run_li


def plant(store: FsRunStore, run_id: str, at: datetime, label: str, model: str) -> None:
    os.makedirs(store.run_dir(run_id), mode=0o700)
    store.create(Run(run_id=run_id, kind="agent", status="completed", submitted_at=iso(at), spawn_state="started",
                     finished_at=iso(at), outcome="succeeded", label=label, model=model))


@pytest.fixture
def home(li_home: str) -> str:
    store, now = FsRunStore(li_home), datetime.now(UTC).replace(microsecond=0)
    for run_id, age, label, model in (("a", 3 * 86400, "nightly", "claude/opus"), ("b", 2 * 3600, "nightly", "codex"),
                                      ("c", 60, "adhoc", "claude")):
        at = now - timedelta(seconds=age)
        plant(store, f"{at.strftime('%Y%m%dT%H%M%S')}-{run_id * 6}", at, label, model)
    return li_home


def labels(data: dict) -> list[tuple[str, str]]:
    return [(row["label"], row["model"]) for row in data["runs"]]


def test_list_filters_by_label_model_and_since(home: str) -> None:
    assert labels(machine("job", "list", "--label", "nightly", home=home).data) == [
        ("nightly", "codex"), ("nightly", "claude/opus")]
    assert labels(machine("job", "list", "--model", "claude", home=home).data) == [
        ("adhoc", "claude"), ("nightly", "claude/opus")]
    assert labels(machine("job", "list", "--model", "claude/opus", home=home).data) == [("nightly", "claude/opus")]
    assert labels(machine("job", "list", "--since", "1d", home=home).data) == [("adhoc", "claude"),
                                                                                ("nightly", "codex")]
    assert labels(machine("job", "list", "--since", "10m", "--label", "adhoc", home=home).data) == [("adhoc", "claude")]
    moment = (datetime.now(UTC) - timedelta(hours=3)).isoformat()
    assert len(machine("job", "list", "--since", moment, home=home).data["runs"]) == 2
    assert machine("job", "list", "--since", "yesterday", home=home).error["kind"] == "invalid_input"
    shown = run_li("job", "list", "--label", "adhoc", home=home)
    assert shown.returncode == 0 and len(shown.stdout.splitlines()) == 2


def test_wait_takes_several_ids_and_a_selection_in_one_envelope(home: str) -> None:
    ids = [row["run_id"] for row in machine("job", "list", home=home).data["runs"]]
    both = machine("job", "wait", ids[0], ids[1], "--max-wait", "0", home=home).data
    assert [row["run_id"] for row in both["runs"]] == ids[:2] and both["all_terminal"]
    nightly = machine("job", "wait", "--label", "nightly", "--max-wait", "0", home=home).data
    assert [row["run_id"] for row in nightly["runs"]] == ids[1:]
    mixed = machine("job", "wait", ids[0], "--label", "nightly", "--max-wait", "0", home=home).data
    assert [row["run_id"] for row in mixed["runs"]] == ids
    assert machine("job", "wait", "--label", "nobody", "--max-wait", "0", home=home).error["kind"] == "not_found"
    person = run_li("job", "wait", "--status", "completed", "--max-wait", "0", home=home)
    assert person.returncode == 0 and len(person.stdout.splitlines()) == 3


def test_kill_takes_several_ids_and_a_selection_for_a_person(real_batch: RealBatch) -> None:
    first, second = real_batch.add("one", "running"), real_batch.add("two", "running")
    done = real_batch.add("done", "completed")
    killed = run_li("job", "kill", first, done, home=real_batch.home)
    assert killed.returncode == 0, killed.stderr
    lines = killed.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{first}: ") and lines[1].startswith(f"{done}: nothing to do")
    by_status = run_li("job", "kill", "--status", "running", home=real_batch.home)
    assert by_status.returncode == 0, by_status.stderr
    assert sorted(line.split(":")[0] for line in by_status.stdout.splitlines()) == sorted([first, second])
    assert run_li("job", "kill", "--label", "nobody", home=real_batch.home).returncode == 3
    # --machine keeps one id, one answer
    assert machine("job", "kill", first, done, home=real_batch.home).error["kind"] == "invalid_input"
    assert machine("job", "kill", "--status", "running", home=real_batch.home).error["kind"] == "invalid_input"
    assert machine("job", "kill", done, home=real_batch.home).data["action"] == "already_terminal"
