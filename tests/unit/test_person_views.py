"""The pieces behind a person's views: a line folded to the width between words
(one helper, for status and doctor alike), and the `process` line of `li job status` worded only
from the liveness the answer carries, never from a probe of the reader's own."""

from __future__ import annotations

from typing import Any

import pytest

from lionrun.domain import evidence as e
from lionrun.entrypoints.table import fold
from lionrun.entrypoints.verbs import job_status

WORDS = "store.private   under /tmp/li-home: 1 entry open to group or others (e.g. console.log (0644))"


@pytest.mark.parametrize("width", [30, 44, 60, 80])
def test_a_line_folds_between_words_under_its_indent(width: int) -> None:
    lines = fold(WORDS, width, 16)
    assert all(len(line) <= width for line in lines), lines
    assert " ".join(lines).split() == WORDS.split()  # no word cut in two
    indent = 16 if width - 16 >= 20 else 4  # a line keeps at least 20 cells for its words
    assert all(line.startswith(" " * indent) and line[indent] != " " for line in lines[1:]), lines


def test_a_line_that_fits_or_goes_to_a_pipe_is_left_whole() -> None:
    assert fold(WORDS, None, 16) == [WORDS]
    assert fold(WORDS, len(WORDS), 16) == [WORDS]


def test_an_indent_that_would_leave_no_room_for_words_is_narrowed() -> None:
    lines = fold(WORDS, 30, 27)
    assert all(len(line) <= 30 for line in lines) and " ".join(lines).split() == WORDS.split(), lines


def process(**fields: Any) -> str:
    data = {"pid": 4242, "alive": True, "possibly_orphaned": False, "job": None, **fields}
    return job_status._process(data)


def test_a_runner_gone_with_its_work_alive_says_so_and_how_much_runs() -> None:
    assert process(finding=e.SESSION_ALIVE, alive_processes=1) == "runner gone (pid 4242), 1 process of the run still running"
    assert process(finding=e.SESSION_ALIVE, alive_processes=3).endswith("3 processes of the run still running")
    assert process(finding=e.SESSION_ALIVE) == "runner gone (pid 4242), work of the run still running"


@pytest.mark.parametrize(("fields", "said"), [
    ({"finding": e.ALIVE}, "runner pid 4242 running"),
    ({}, "the run is running (its runner, pid 4242, or work it started)"),  # no finding: never which of them
    ({"alive": False}, "runner pid 4242 and the run's work have exited"),
    ({"alive": None, "finding": e.FOREIGN_HOST}, "runner pid 4242, on another host: only that host can tell whether it runs"),
    ({"alive": None}, "runner pid 4242; whether anything of the run is alive is unknown"),
    ({"alive": None, "finding": e.ACCESS_DENIED}, "runner pid 4242; whether anything of the run is alive is unknown "
                                                  "(access denied)"),
    ({"finding": e.JOB_ALIVE, "job": {"executor": "slurm", "job_id": "77"}}, "Slurm job 77 running"),
    ({"alive": None, "finding": e.JOB_QUEUED, "job": {"job_id": "77"}}, "Slurm job 77 waiting in the cluster's queue"),
    ({"pid": None, "alive": None}, "no runner recorded; whether anything of the run is alive is unknown"),
    ({"alive": False, "possibly_orphaned": True}, "runner pid 4242 and the run's work have exited  (possibly orphaned)"),
])
def test_the_process_line_is_worded_from_the_answer_alone(fields: dict[str, Any], said: str) -> None:
    assert process(**fields) == said


def test_the_process_line_never_probes_a_pid_here(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    def refused(*_: Any) -> None:
        raise AssertionError("the person's view probed a pid")

    monkeypatch.setattr(os, "kill", refused)
    assert process() == "the run is running (its runner, pid 4242, or work it started)"
    assert "alive: yes" not in process(pid=os.getpid())
