"""At a terminal of 60 and 120 columns: status folds to the width without
splitting a word, shows local times, started and the duration, no usage lines a shell never
reports; a flow's parts are steps; the detach hint fits 80 columns; wait ends with counts."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.e2e.screen import Terminal
from tests.support import machine, wait_terminal

WIDTHS = [60, 120]
LABEL = "a label of many words that will not fit on one narrow line of a terminal"


def ended(home: str, *argv: str) -> str:
    run_id = machine("agent", "--detach", *argv, home=home).data["run_id"]
    assert wait_terminal(home, run_id, timeout=60)["terminal"]
    return run_id


@pytest.mark.parametrize("columns", WIDTHS)
def test_status_fits_the_width_and_reads_as_a_person_would(li_home: str, columns: int) -> None:
    run_id = ended(li_home, "--label", LABEL, "sh", "echo hi")
    term = Terminal(["job", "status", run_id], li_home, rows=40, columns=columns)
    assert term.finish() == 0
    lines = term.lines()
    assert all(len(line) <= columns for line in lines), lines
    text = " ".join(line.strip() for line in lines)
    assert LABEL in text  # folded between words, never inside one
    assert re.search(r"submitted +\d\d:\d\d:\d\d +\(\d+s ago\)", text), text
    assert re.search(r"finished +\d\d:\d\d:\d\d +\(took \d+s\)", text), text
    assert "started" in text and "+00:00" not in text
    assert "tokens" not in text and "cost_usd" not in text  # sh never reports them
    assert "exited" in text and "alive: yes" not in text


def test_a_flows_parts_are_steps(li_home: str, tmp_path: Path) -> None:
    spec = tmp_path / "flow.yaml"
    spec.write_text("steps:\n  - id: a\n    prompt: echo a\n  - id: b\n    depends_on: [a]\n    prompt: echo b\n")
    run_id = machine("orchestrate", "flow", "--detach", str(spec), home=li_home).data["run_id"]
    wait_terminal(li_home, run_id, timeout=60)
    term = Terminal(["job", "status", run_id], li_home, rows=40, columns=120)
    assert term.finish() == 0
    assert "  steps" in term.lines() and "  legs" not in term.lines(), term.lines()


def test_the_detach_hint_fits_80_columns(li_home: str) -> None:
    term = Terminal(["agent", "--detach", "sh", "true"], li_home, rows=20, columns=80)
    assert term.finish() == 0
    [run_id, hint, *_] = term.lines()
    assert hint == f"li job status {run_id[-6:]} · li job output {run_id[-6:]} --follow · li job kill {run_id[-6:]}"


@pytest.mark.parametrize("columns", WIDTHS)
def test_wait_ends_with_the_count_by_outcome_and_fails_when_one_failed(li_home: str, columns: int) -> None:
    good, bad = ended(li_home, "sh", "true"), ended(li_home, "sh", "exit 3")
    term = Terminal(["job", "wait", good, bad, "--max-wait", "5"], li_home, rows=20, columns=columns)
    assert term.finish() == 1
    lines = term.lines()
    assert "2 ended: 1 succeeded, 1 failed" in lines, lines
    rows = [line for line in lines if good in line or bad in line]
    assert len(rows) == 2 and rows[0].index("completed") == rows[1].index("failed"), rows  # one column
    assert "exit code 3" in "".join(lines)  # at 60 columns the line wraps


@pytest.mark.parametrize("columns", WIDTHS)
def test_list_watch_redraws_until_ctrl_c_and_the_runs_go_on(li_home: str, columns: int) -> None:
    run_id = machine("agent", "--detach", "sh", "sleep 30", home=li_home).data["run_id"]
    try:
        term = Terminal(["job", "list", "--watch"], li_home, rows=20, columns=columns)
        term.until(lambda t: any(run_id[-6:] in line and "running" in line for line in t.display()))
        first = term.raw.count(b"\x1b[2J")
        term.until(lambda t: t.raw.count(b"\x1b[2J") > first, timeout=15)  # drawn again
        term.child.sendintr()
        assert term.finish() == 130
        assert all(len(line) <= columns for line in term.display())
        assert machine("job", "status", run_id, home=li_home).data["status"] == "running"
    finally:
        machine("job", "kill", run_id, home=li_home)


def test_list_watch_under_machine_is_one_envelope_refusing_it(li_home: str) -> None:
    assert machine("job", "list", "--watch", home=li_home).error["kind"] == "invalid_input"


# --- the AGE column, doctor folded to the width, doctor judging only the store's files, liveness ---


@pytest.mark.parametrize("columns", WIDTHS)
def test_list_has_an_age_column_in_the_one_time_style(li_home: str, columns: int) -> None:
    from datetime import UTC, datetime, timedelta

    from lionrun.adapters.fs_store import FsRunStore
    from lionrun.domain.run import Run, iso

    store, at = FsRunStore(li_home), datetime.now(UTC) - timedelta(hours=3, minutes=5)
    run_id = store.reserve(at)
    store.create(Run(run_id=run_id, kind="agent", status="completed", submitted_at=iso(at), spawn_state="started",
                     started_at=iso(at), finished_at=iso(at + timedelta(seconds=42)), outcome="succeeded",
                     exit_code=0, model="sh", label="nightly", extra={"command": "make check"}))
    term = Terminal(["job", "list"], li_home, rows=20, columns=columns)
    assert term.finish() == 0
    heading, row = term.lines()
    assert all(len(line) <= columns for line in (heading, row)), (heading, row)
    at_age = heading.index("AGE")
    assert row[at_age:].split()[0] == "3h", (heading, row)  # domain.timetext.age, as status says `(3h ago)`
    assert "42s" in row.split()  # the duration beside it


def private_check(home: str) -> dict:
    return next(c for c in machine("doctor", home=home).data["checks"] if c["name"] == "store.private")


def test_doctor_judges_the_stores_own_files_not_what_the_work_wrote_to_its_artifacts(li_home: str) -> None:
    os.chmod(li_home, 0o700)  # made by the test under its umask; li makes its own home private
    run_id = ended(li_home, "sh", 'echo answer > "$LI_ARTIFACTS_DIR/answer.md"; chmod 0644 "$LI_ARTIFACTS_DIR/answer.md"')
    answer = Path(li_home, "runs", run_id, "artifacts", "answer.md")
    assert answer.stat().st_mode & 0o777 == 0o644  # the work's own choice
    check = private_check(li_home)
    assert check["ok"] is True, check
    console = Path(li_home, "runs", run_id, "console.log")
    console.chmod(0o644)  # a file li owns, opened by hand
    check = private_check(li_home)
    assert check["ok"] is False and "console.log" in check["detail"], check

def test_doctor_folds_to_60_columns_between_words(tmp_path: Path) -> None:
    import tempfile

    home = tempfile.mkdtemp(prefix="li-", dir="/tmp")  # short: every word of a detail fits a line
    try:
        checks = machine("doctor", home=home).data["checks"]
        term = Terminal(["doctor"], home, rows=60, columns=60)
        term.finish()
        lines = term.lines()
        assert all(len(line) <= 60 for line in lines), lines
        width = max(len(c["name"]) for c in checks)
        assert any(len(f"warn  {c['name']:{width}}  {c['detail']}") > 60 for c in checks), checks  # some fold
        shown = " ".join(lines).split()
        said = [word for c in checks for text in (c["detail"], c["fix"] or "") for word in text.split()]
        assert [word for word in said if word not in shown] == [], lines  # no word split across two lines
    finally:
        import shutil

        shutil.rmtree(home, ignore_errors=True)


def test_status_of_a_run_whose_runner_was_killed_while_its_work_lives(li_home: str) -> None:
    import json
    import time

    from lionrun.domain.run import Incarnation
    from tests.load.kill_in_host import kill_runner

    run_id = machine("agent", "--detach", "sh", 'touch "$LI_ARTIFACTS_DIR/started"; exec sleep 60',
                     home=li_home).data["run_id"]
    try:
        started = Path(li_home, "runs", run_id, "artifacts", "started")
        deadline = time.monotonic() + 30
        while not started.exists():  # the work itself is running, not only a helper of its start
            assert time.monotonic() < deadline, "the run's work never started"
            time.sleep(0.05)
        record = json.loads(Path(li_home, "runs", run_id, "record.json").read_text())
        incarnation = Incarnation(**record["incarnation"])
        kill_runner(run_id, incarnation)  # SIGKILL the runner alone; its `sleep 60` runs on
        data = machine("job", "status", run_id, home=li_home).data
        assert (data["status"], data["alive"]) == ("running", True), data  # li's judgement: the work lives
        term = Terminal(["job", "status", run_id], li_home, rows=30, columns=120)
        assert term.finish() == 0
        [process] = [line for line in term.lines() if line.startswith("  process ")]  # not "  processes"
        pid = incarnation.pid
        assert "alive: yes" not in process and f"runner pid {pid} running" not in process, process
        assert "running" in process, process  # the run is still running
        runner_gone(process, pid, data)
    finally:
        machine("job", "kill", run_id, home=li_home)


def runner_gone(process: str, pid: int, data: dict) -> None:
    """Says the runner is gone and the work runs on, from li's liveness finding (`session_alive`)."""
    assert data["finding"] == "session_alive", data
    assert re.search(rf"runner gone \(pid {pid}\), .* still running", process), process
