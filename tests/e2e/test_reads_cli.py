"""The real `li job status|output|list|kill`: one envelope for every argument shape, and human mode for people."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lionrun.adapters.fs_store import FsRunStore
from tests.builders import RunState, Sleeper, a_run, end
from tests.support import li_bin, machine, run_li, status_data, submit_detached, wait_terminal

UNKNOWN = "20260101T000000-abcdef"
BAD_IDS = ["../../etc/passwd", "nope", "20260725T175010-97f334/../x", "20260725T175010-97F334", "", " ", "é" * 3]


@pytest.fixture
def home(li_home: str) -> dict[str, str]:
    """A home with a finished run, a running-looking orphan and a corrupt record."""
    store = FsRunStore(li_home)
    t0 = datetime(2026, 7, 25, 17, 50, 10, tzinfo=UTC)
    done = a_run(store, t0, RunState.STARTED, label="a-rather-long-label", status="running")
    end(store, done.run_id, "completed", "succeeded")
    orphan = a_run(store, t0 + timedelta(seconds=1), RunState.STARTED, pid=2 ** 22 + 7, kind="flow")
    broken = a_run(store, t0 + timedelta(seconds=2), RunState.STARTED)
    Path(store.run_dir(broken.run_id), "record.json").write_text("{oops")
    Path(store.run_dir(done.run_id), "console.log").write_text("hello\n")
    return {"home": li_home, "done": done.run_id, "orphan": orphan.run_id, "broken": broken.run_id}


def table(ids: dict[str, str]) -> list[tuple[list[str], str | None]]:
    """Every read verb with good and bad arguments, and the error kind each must answer (None = ok)."""
    cases: list[tuple[list[str], str | None]] = []
    for verb in ("status", "output", "kill"):
        cases += [(["job", verb, ids["done"]], None), (["job", verb, UNKNOWN], "not_found"),
                  (["job", verb, ids["broken"]], "unavailable"), (["job", verb], "invalid_input"),
                  (["job", verb, ids["done"], "--bogus"], "invalid_input")]
        cases += [(["job", verb, bad], "invalid_input") for bad in BAD_IDS]
    cases += [(["job", "output", ids["done"], "--tail-chars", value], "invalid_input")
              for value in ("abc", "-1", "1e3", "2.5", "")]
    cases += [(["job", "output", ids["done"], "--tail-chars", "99999999999999"], None),
              (["job", "output", ids["done"], "--follow"], "invalid_input")]
    cases += [(["job", "list"], None), (["job", "list", "--limit", "5000"], None),
              (["job", "list", "--status", "exited"], None), (["job", "list", "--bogus"], "invalid_input")]
    cases += [(["job", "list", "--limit", value], "invalid_input") for value in ("0", "-3", "ten", "1.5", "")]
    return cases


def test_every_read_verb_writes_exactly_one_envelope_for_every_argument_shape(home) -> None:
    for argv, kind in table(home):
        result = machine(*argv, home=home["home"])  # exit 0, one JSON object, exactly one of data/error
        envelope = result.envelope
        if kind is None:
            assert envelope["ok"] is True, (argv, envelope)
        else:
            assert (envelope["ok"], envelope["error"]["kind"]) == (False, kind), (argv, envelope)
        assert "Traceback" not in result.stderr


def test_a_corrupt_record_is_unavailable_with_its_reason_and_left_alone(home) -> None:
    record = Path(FsRunStore(home["home"]).run_dir(home["broken"]), "record.json")
    error = machine("job", "status", home["broken"], home=home["home"]).error
    assert (error["kind"], error["detail"]["reason_code"]) == ("unavailable", "malformed")
    machine("job", "kill", home["broken"], home=home["home"])
    machine("job", "list", home=home["home"])
    assert record.read_text() == "{oops"


def test_the_listing_clamps_a_large_limit_and_shows_the_unreadable_row(home) -> None:
    data = machine("job", "list", "--limit", "5000", home=home["home"]).data
    assert (data["limit"], data["truncated"]) == (1000, False)
    assert [r["run_id"] for r in data["runs"]] == [home["broken"], home["orphan"], home["done"]]
    assert data["runs"][0]["error"]["kind"] == "record_unusable"
    one = machine("job", "list", "--limit", "1", home=home["home"]).data
    assert (len(one["runs"]), one["truncated"]) == (1, True)


@pytest.mark.parametrize(("argv", "code"), [
    (["job", "status", "../../etc/passwd"], 2), (["job", "status", UNKNOWN], 3), (["job", "kill", UNKNOWN], 3),
    (["job", "output", UNKNOWN], 3), (["job", "list", "--limit", "x"], 2), (["job", "output", "broken"], 2),
])
def test_a_refusal_in_human_mode_is_one_line_on_stderr_and_a_non_zero_exit(home, argv, code) -> None:
    result = run_li(*argv, home=home["home"])
    assert result.returncode == code
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_human_status_is_a_short_summary(home) -> None:
    result = run_li("job", "status", home["done"], home=home["home"])
    assert result.returncode == 0
    assert "completed" in result.stdout and "succeeded" in result.stdout and len(result.stdout.splitlines()) < 12


def test_human_output_prints_the_console_text(home) -> None:
    result = run_li("job", "output", home["done"], home=home["home"])
    assert (result.returncode, result.stdout) == (0, "hello\n")


def test_human_list_is_an_aligned_table_without_colour_when_piped(home) -> None:
    result = run_li("job", "list", home=home["home"], env={"NO_COLOR": ""})
    lines = result.stdout.splitlines()
    assert "\x1b[" not in result.stdout
    assert lines[0].split() == ["RUN", "ID", "KIND", "MODEL", "STATUS", "OUTCOME", "EXIT", "AGE", "STARTED", "DURATION",
                                "LABEL", "COMMAND"]
    column = lines[0].index("STATUS")
    assert [line[column:].split()[0] for line in lines[1:]] == ["unreadable", "exited", "completed"]
    assert home["done"] in lines[3] and "a-rather-long-label" in lines[3] and "succeeded" in lines[3]


@pytest.mark.parametrize(("no_color", "coloured"), [("", True), ("1", False)])
def test_human_list_is_coloured_only_on_a_terminal_without_no_color(home, no_color: str, coloured: bool) -> None:
    pexpect = pytest.importorskip("pexpect")
    env = dict(os.environ, LI_HOME=home["home"], NO_COLOR=no_color)
    child = pexpect.spawn(li_bin(), ["job", "list"], env=env, encoding="utf-8", timeout=30)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert ("\x1b[" in child.before) is coloured
    plain = re.sub(r"\x1b\[[0-9;]*m", "", child.before)
    assert home["done"] in plain


def test_human_kill_says_what_it_did(home) -> None:
    result = run_li("job", "kill", home["done"], home=home["home"])
    assert result.returncode == 0 and "already ended" in result.stdout


WRITER = """
import sys, time
from lionrun.adapters.fs_store import FsRunStore
from datetime import UTC, datetime
store, run_id, status, outcome = FsRunStore(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
with open(store.run_dir(run_id) + "/console.log", "a") as log:
    for i in range(3):
        log.write(f"line {i}\\n"); log.flush(); time.sleep(0.3)
store.update(run_id, lambda r: r.evolve(status=status, outcome=outcome or None,
             finished_at=datetime.now(UTC).isoformat(timespec="microseconds")))
"""


@pytest.mark.parametrize(("status", "outcome", "code"), [
    ("completed", "succeeded", 0), ("timed_out", "failed", 124), ("cancelled", "cancelled", 143),
    ("completed_empty", "failed", 1), ("aborted", "cancelled", 130),
])
def test_follow_streams_the_console_and_exits_with_the_runs_code(li_home, status, outcome, code) -> None:
    store = FsRunStore(li_home)
    run = a_run(store, datetime.now(UTC), RunState.STARTED)
    writer = Sleeper([sys.executable, "-c", WRITER, li_home, run.run_id, status, outcome])
    store.update(run.run_id, lambda r: r.evolve(pid=writer.pid, incarnation=writer.incarnation()))
    try:
        result = run_li("job", "output", run.run_id, "--follow", home=li_home, timeout=60)
    finally:
        writer.stop()
    assert result.stdout == "line 0\nline 1\nline 2\n"
    assert result.returncode == code, result.stderr


def test_follow_gives_up_on_a_run_that_stopped_without_an_end(li_home) -> None:
    store = FsRunStore(li_home)
    run = a_run(store, datetime.now(UTC), RunState.STARTED, pid=2 ** 22 + 9)  # gone, and nothing recorded who it was
    Path(store.run_dir(run.run_id), "console.log").write_text("partial\n")
    result = run_li("job", "output", run.run_id, "--follow", home=li_home, timeout=60)
    assert (result.returncode, result.stdout) == (1, "partial\n")
    assert "no end was recorded" in result.stderr


def test_follow_gives_up_on_an_aged_preparing_run_instead_of_looping_forever(li_home) -> None:
    from datetime import timedelta

    store = FsRunStore(li_home)
    run = a_run(store, datetime.now(UTC) - timedelta(hours=1), RunState.PREPARING)
    result = run_li("job", "output", run.run_id, "--follow", home=li_home, timeout=60)
    assert result.returncode == 1
    assert "start was never recorded" in result.stderr


def test_machine_mode_is_never_inferred_from_a_pipe(home) -> None:
    proc = subprocess.run([li_bin(), "job", "list"], capture_output=True, text=True,
                          env=dict(os.environ, LI_HOME=home["home"]), check=False)
    assert not proc.stdout.lstrip().startswith("{")


# --- found by an adversarial review of the real li; each pins one fixed defect ---------------


def test_out_of_vocabulary_recorded_outcome_is_never_reported_as_success(li_home: str) -> None:
    store = FsRunStore(li_home)
    now = datetime.now(UTC)
    run = a_run(store, now, RunState.STARTED, status="completed", outcome="partial", finished_at=now.isoformat())
    for data in (status_data(li_home, run.run_id),
                 machine("job", "wait", run.run_id, "--max-wait", "0", home=li_home).data["runs"][0]):
        assert data["terminal"] is True
        assert data["outcome"] == "indeterminate", data



def test_artifact_symlink_to_a_directory_is_not_silently_dropped(li_home: str) -> None:
    run_id = submit_detached(li_home, 'echo a > "$LI_ARTIFACTS_DIR/a"; ln -s /etc "$LI_ARTIFACTS_DIR/etc-link"')
    wait_terminal(li_home, run_id)
    artifacts = machine("job", "output", run_id, home=li_home).data["artifacts"]
    assert artifacts["available"], artifacts
    entries = {entry["name"]: entry for entry in artifacts["value"]}
    assert sorted(entries) == ["a", "etc-link"]  # listed as the link it is, never walked into
    assert (entries["etc-link"]["type"], entries["etc-link"]["link"], entries["etc-link"]["sha256"]) \
        == ("symlink", "/etc", None)



@pytest.mark.parametrize("verb", [("job", "list"), ("job", "prune")])
def test_a_store_that_cannot_be_listed_is_unavailable_not_internal(tmp_path: Path, verb: tuple[str, ...]) -> None:
    home = tmp_path / "not-a-folder"
    home.write_text("a file where LI_HOME should be")
    error = machine(*verb, home=str(home)).error
    assert (error["kind"], error["detail"]["reason_code"]) == ("unavailable", "store_unreadable")
    person = run_li(*verb, home=str(home))
    assert person.returncode != 0 and len(person.stderr.splitlines()) == 1 and "Traceback" not in person.stderr
