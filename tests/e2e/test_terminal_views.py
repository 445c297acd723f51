"""What a person sees on a 60- and a 120-column terminal: `li job list`, the live `li job wait`
(lines wider than the screen, more runs than it has lines, Ctrl-C) and `li job output --follow`.

Each command runs under a real pseudo-terminal; its bytes are played into a terminal emulator
(pyte) that keeps what scrolled off the top, and the assertions read that screen.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta

import pytest

from lionrun.adapters.fs_store import FsRunStore
from lionrun.domain.run import Run, iso
from tests.builders import RealBatch
from tests.e2e.screen import Terminal
from tests.support import run_li

WIDTHS = [60, 120]
LONG_LABEL = "a-label-far-too-long-for-any-narrow-terminal-" * 3
LONG_COMMAND = "summarise every file under docs/ and then " * 4
MARKS = "|/-\\✓✗·…"


def planted(home: str, count: int, **fields: object) -> list[str]:
    """`count` ended runs, newest last, with a label and a command a table must cut."""
    store, now = FsRunStore(home), datetime.now(UTC)
    ids = []
    for n in range(count):
        at = now - timedelta(seconds=count - n)
        run_id = store.reserve(at)
        run = Run(run_id=run_id, kind="agent", status="failed" if n % 2 else "completed", submitted_at=iso(at),
                  spawn_state="started", started_at=iso(at), finished_at=iso(at + timedelta(seconds=75)),
                  outcome="failed" if n % 2 else "succeeded", exit_code=3 if n % 2 else 0, model="claude/opus",
                  label=f"{n}-{LONG_LABEL}", extra={"command": f"{n} {LONG_COMMAND}"})
        store.create(run.evolve(**fields) if fields else run)
        ids.append(run_id)
    return ids


# --- li job list -------------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", WIDTHS)
def test_list_fits_the_terminal_one_line_a_run(li_home: str, columns: int) -> None:
    ids = planted(li_home, 4)
    term = Terminal(["job", "list"], li_home, rows=30, columns=columns)
    assert term.finish() == 0
    lines = term.lines()
    assert len(lines) == 1 + len(ids), lines  # no row wrapped onto a second line
    assert all(len(line) <= columns for line in lines)
    heading = lines[0].split()
    for word in ("MODEL", "STATUS", "OUTCOME", "EXIT", "AGE", "DURATION"):
        assert word in heading, heading
    for run_id, line in zip(reversed(ids), lines[1:], strict=True):
        shown = run_id if columns >= 120 else run_id[-6:]
        assert line.startswith(shown), line
        # the model whole, or cut with an ellipsis (how much stays depends on the columns beside it)
        assert "claude/opus" in line or any(f"{'claude/opus'[:n]}…" in line for n in range(4, 11)), line
        assert ("failed" in line and " 3 " in line) or ("succeeded" in line and " 0 " in line)
        assert "1m15s" in line  # the duration: finished minus started
    if columns >= 120:  # whole ids, and the label and command cut with an ellipsis
        assert lines[0].split()[:2] == ["RUN", "ID"]
        assert all("…" in line for line in lines[1:]) and "LABEL" in heading and "COMMAND" in heading


@pytest.mark.parametrize("columns", WIDTHS)
def test_list_wide_shows_every_cell_whole(li_home: str, columns: int) -> None:
    ids = planted(li_home, 2)
    term = Terminal(["job", "list", "--wide"], li_home, rows=30, columns=columns)
    assert term.finish() == 0
    flat = "".join(term.lines())  # the rows wrap: joined back, every cell is whole
    assert all(run_id in flat for run_id in ids)
    assert f"1-{LONG_LABEL}" in flat and f"1 {LONG_COMMAND}".strip() in flat and "…" not in flat


# --- li job wait -------------------------------------------------------------------------------------


def frame_lines(term: Terminal) -> list[str]:
    """The live frame: the visible lines that are progress rows (a mark, then a run id or `… more`)."""
    return [line for line in term.display() if line and line[0] in MARKS]


def lengthen(batch: RealBatch, run_id: str, n: int) -> None:
    batch.store.update(run_id, lambda r: r.evolve(label=f"{n}-{LONG_LABEL}"))


@pytest.mark.parametrize("columns", WIDTHS)
def test_wait_frames_fit_the_screen_and_leave_no_stale_line(real_batch: RealBatch, columns: int) -> None:
    rows = 8  # fewer lines than runs
    going = [real_batch.add(f"soon-{n}", "running", ends_after=2.5 + n * 0.3) for n in range(3)]
    ended = [real_batch.add(f"done-{n}", "completed") for n in range(9)]
    for n, run_id in enumerate(going + ended):
        lengthen(real_batch, run_id, n)
    ids = going + ended
    term = Terminal(["job", "wait", *ids, "--poll-interval", "0.2", "--max-wait", "30"], real_batch.home,
                    rows=rows, columns=columns)
    term.until(lambda t: any(line.startswith(tuple("|/-\\")) for line in t.display()))
    frame = frame_lines(term)
    assert 0 < len(frame) <= rows - 1, term.display()  # the frame never outgrows the screen
    assert frame[-1].startswith("…") and "more" in frame[-1]
    assert all(line[0] in MARKS for line in term.display() if line), term.display()  # nothing wrapped
    spinning = [line for line in frame if line[0] in "|/-\\"]
    assert {line.split()[1] for line in spinning} <= set(going)  # only live runs are animated
    assert all(line[0] in "✓✗·" for line in frame if line.split()[1] in ended)
    code = term.finish()
    text = term.text()
    for run_id in ids:  # the answer once per run: no frame left behind, nothing repeated
        assert text.count(run_id) == 1, (run_id, text)
    assert len(re.findall(r"\d+ ended: \d+ ", text)) == 1 and "li:" not in text  # the count by outcome, once
    assert code in (0, 1)


@pytest.mark.parametrize("columns", WIDTHS)
def test_ctrl_c_stops_the_wait_with_130_and_shows_it_once(real_batch: RealBatch, columns: int) -> None:
    busy = real_batch.add("busy", "running")
    lengthen(real_batch, busy, 0)
    term = Terminal(["job", "wait", busy, "--max-wait", "60", "--poll-interval", "0.1"], real_batch.home,
                    rows=10, columns=columns)
    term.until(lambda t: bool(frame_lines(t)))
    assert all(len(line) < columns for line in term.display())
    term.child.sendintr()
    assert term.finish() == 130
    text = term.text()
    assert text.count(busy) == 1 and text.count("stopped by a signal") == 1, text
    assert real_batch.children[0].poll() is None  # the run was left alone


@pytest.mark.parametrize("columns", WIDTHS)
def test_a_clamped_or_unparseable_bound_gets_one_note(real_batch: RealBatch, columns: int) -> None:
    done = real_batch.add("done", "completed")
    term = Terminal(["job", "wait", done, "--max-wait", "abc", "--poll-interval", "700"], real_batch.home,
                    rows=10, columns=columns)
    assert term.finish() == 0
    notes = [line for line in term.lines() if line.startswith("note:")]
    assert len(notes) == 2, term.lines()
    assert notes[0] == "note: --max-wait 'abc' is not a number; using 0 (a snapshot)"
    assert notes[1] == "note: --poll-interval 700 is above 0.05..60; using 60"
    assert term.text().count(done) == 1


# --- li job output --follow ----------------------------------------------------------------------------


@pytest.mark.parametrize("columns", WIDTHS)
def test_follow_shows_the_console_as_it_grows_then_the_exit(li_home: str, tmp_path, columns: int) -> None:
    long_line = "x" * (columns + 30)
    work = f"for i in 1 2 3; do echo tick $i; sleep 0.4; done; echo {long_line}; exit 3"
    run_id = run_li("agent", "--detach", "sh", work, home=li_home, cwd=str(tmp_path)).stdout.strip()
    term = Terminal(["job", "output", run_id[-6:], "--follow"], li_home, rows=12, columns=columns)
    term.until(lambda t: "tick 1" in t.text())
    assert term.finish() == 1  # the run failed
    lines = term.lines()
    ticks = [line for line in lines if line.startswith("tick")]
    assert ticks == ["tick 1", "tick 2", "tick 3"]  # in order, each once
    assert long_line in "".join(lines)  # a line wider than the screen wraps, nothing of it lost
    assert not any(re.search(r"\x1b|\^\[", line) for line in lines)


def test_output_lists_the_artifacts_with_size_and_path(li_home: str, tmp_path) -> None:
    ran = run_li("agent", "sh", 'printf 12345 > "$LI_ARTIFACTS_DIR/five.txt"; echo done', home=li_home,
                 cwd=str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    shown = run_li("job", "output", "@last", home=li_home)
    assert shown.returncode == 0 and shown.stdout.startswith("done")
    listing = shown.stderr.splitlines()
    assert listing[0].startswith("artifacts (")
    five = next(line for line in listing if line.endswith("five.txt"))
    assert "5 B" in five and os.path.isabs(five.split()[-1])
