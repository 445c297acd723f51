"""Output a person can use. `li job output` tails start at a line boundary,
`--lines N`, `--follow` on an ended run prints the whole console, `--artifact NAME` prints an
artifact (confined: no link followed, no FIFO opened)."""

from __future__ import annotations

import os

import pytest

from tests.support import machine, run_li, wait_terminal

COUNT = "for i in $(seq 1 3000); do echo line-$i; done"


def ended_run(home: str, command: str) -> str:
    run_id = machine("agent", "--detach", "sh", command, home=home).data["run_id"]
    assert wait_terminal(home, run_id, timeout=60)["terminal"]
    return run_id


def test_a_tail_starts_at_a_line_boundary(li_home: str) -> None:
    run_id = ended_run(li_home, COUNT)
    result = run_li("job", "output", run_id, "--tail-chars", "100", home=li_home)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith("line-") for line in lines), lines  # the work's lines alone
    assert "lines; the console is longer" in result.stderr


def test_lines_gives_the_last_n_whole_lines(li_home: str) -> None:
    run_id = ended_run(li_home, COUNT + "; printf 'no newline'")
    result = run_li("job", "output", run_id, "--lines", "3", home=li_home)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == ["line-2999", "line-3000"], result.stdout
    assert len(result.stdout.splitlines()) == 3


def test_lines_under_machine_keeps_the_envelope_and_says_it_is_truncated(li_home: str) -> None:
    run_id = ended_run(li_home, COUNT)
    console = machine("job", "output", run_id, "--lines", "2", home=li_home).data["console"]
    assert console["available"] is True and console["truncated"] is True
    assert console["value"].count("\n") == 2


@pytest.mark.parametrize("argv", [["--lines", "x"], ["--lines", "2", "--tail-chars", "5"]])
def test_a_bad_lines_is_refused(li_home: str, argv: list[str]) -> None:
    run_id = ended_run(li_home, "echo hi")
    result = run_li("job", "output", run_id, *argv, home=li_home)
    assert result.returncode == 2 and result.stderr.startswith("li: invalid_input:"), result.stderr
    assert machine("job", "output", run_id, *argv, home=li_home).error["kind"] == "invalid_input"


def test_follow_on_an_ended_run_prints_the_whole_console(li_home: str) -> None:
    run_id = ended_run(li_home, COUNT)  # about 28 KB: more than the 20000-character default tail
    result = run_li("job", "output", run_id, "--follow", home=li_home)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "line-1" and "line-3000" in lines


def test_an_artifact_is_printed_by_name(li_home: str) -> None:
    run_id = ended_run(li_home, 'printf "a\\nb\\n" > "$LI_ARTIFACTS_DIR/notes.txt"')
    result = run_li("job", "output", run_id, "--artifact", "notes.txt", home=li_home)
    assert (result.returncode, result.stdout) == (0, "a\nb\n"), result.stderr


def test_an_unknown_artifact_is_not_found_and_names_the_known_ones(li_home: str) -> None:
    run_id = ended_run(li_home, 'echo x > "$LI_ARTIFACTS_DIR/notes.txt"')
    result = run_li("job", "output", run_id, "--artifact", "nope.txt", home=li_home)
    assert result.returncode == 3
    assert result.stderr.startswith("li: not_found:") and "notes.txt" in result.stderr, result.stderr


@pytest.mark.parametrize("plant", ["link", "fifo"])
def test_an_artifact_that_is_a_link_or_a_fifo_is_not_read(li_home: str, plant: str) -> None:
    make = 'ln -s /etc/passwd "$LI_ARTIFACTS_DIR/x"' if plant == "link" else 'mkfifo "$LI_ARTIFACTS_DIR/x"'
    run_id = ended_run(li_home, make + "; echo done")
    result = run_li("job", "output", run_id, "--artifact", "x", home=li_home, timeout=30)
    assert result.returncode != 0 and result.stdout == "", result.stdout
    assert result.stderr.startswith("li: ") and "root:" not in result.stderr


def test_artifact_under_machine_is_one_envelope_refusing_it(li_home: str) -> None:
    run_id = ended_run(li_home, 'echo x > "$LI_ARTIFACTS_DIR/notes.txt"')
    error = machine("job", "output", run_id, "--artifact", "notes.txt", home=li_home).error
    assert error["kind"] == "invalid_input"
    assert os.path.isdir(os.path.join(li_home, "runs", run_id))
