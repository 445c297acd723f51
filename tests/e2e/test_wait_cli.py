"""`li job wait` end to end: the real executable over real detached processes written through FsRunStore."""

from __future__ import annotations

import json
import os
import signal
from datetime import UTC, datetime

import pytest

from tests.builders import (
    MALFORMED_ID,
    UNKNOWN_ID,
    RealBatch,
    alive,
    signal_when_waiting,
    snapshot,
    start_li,
)
from tests.support import machine, run_li

ENTRY_KEYS = ["run_id", "kind", "label", "status", "terminal", "outcome", "reason_code",
              "possibly_orphaned", "spawn_state", "submitted_at", "host", "queue", "reap_withheld",
              "retry_at", "session_id", "runner_end", "error"]


def test_the_acceptance_batch_is_partitioned_exactly_with_per_id_errors_in_input_order(
    real_batch: RealBatch,
) -> None:
    b = real_batch
    order = [b.add("done", "completed"), b.add("broke", "failed"), b.add("busy", "running", ends_after=1.0),
             b.add("lost", "gone, identity unrecorded"), b.add("stale", "aged preparing"), UNKNOWN_ID, MALFORMED_ID]
    data = machine("job", "wait", *order, "--max-wait", "30", "--poll-interval", "0.1", home=b.home).data

    assert [e["run_id"] for e in data["runs"]] == order
    assert all(list(e) == ENTRY_KEYS for e in data["runs"])
    summary = [(e["status"], e["terminal"], e["outcome"], e["error"] and e["error"]["kind"]) for e in data["runs"]]
    assert summary == [
        ("completed", True, "succeeded", None),
        ("failed", True, "failed", None),
        ("completed", True, "succeeded", None),  # it ended inside the window
        ("exited", False, None, None),
        ("running", False, None, None),
        (None, None, None, "not_found"),
        (None, None, None, "invalid_input"),
    ]
    assert (data["pending"], data["stopped_without_end"], data["unresolved_spawn"]) == (
        [], [b.ids["lost"]], [b.ids["stale"]])
    assert (data["all_terminal"], data["timed_out"], data["unresolved_spawn_after"]) == (False, False, 600)
    assert data["runs"][3]["possibly_orphaned"] is True and data["runs"][4]["possibly_orphaned"] is True
    assert (data["max_wait"], data["poll_interval"], data["requested_max_wait"], data["requested_poll_interval"]) == (
        30, 0.1, 30, 0.1)


def test_a_conclusively_gone_started_run_comes_back_terminal_never_stopped(real_batch: RealBatch) -> None:
    run_id = real_batch.add("reaped", "gone")
    data = machine("job", "wait", run_id, "--max-wait", "0", home=real_batch.home).data
    entry = data["runs"][0]
    assert (entry["terminal"], entry["outcome"], data["stopped_without_end"]) == (True, "indeterminate", [])
    assert data["all_terminal"] is True


def test_a_snapshot_of_a_running_run_answers_at_once_with_it_pending(real_batch: RealBatch) -> None:
    run_id = real_batch.add("busy", "running")
    data = machine("job", "wait", run_id, "--max-wait", "0", home=real_batch.home).data
    assert (data["pending"], data["timed_out"], data["runs"][0]["status"]) == ([run_id], True, "running")
    assert alive(real_batch.children[0])


def test_ids_read_from_stdin_take_the_place_of_the_dash(real_batch: RealBatch) -> None:
    first, second = real_batch.add("a", "completed"), real_batch.add("b", "failed")
    data = machine("job", "wait", first, "-", first, "--max-wait", "0", home=real_batch.home,
                   stdin=f"  {second}\n{UNKNOWN_ID}\t").data
    assert [e["run_id"] for e in data["runs"]] == [first, second, UNKNOWN_ID, first]
    assert data["runs"][2]["error"]["kind"] == "not_found"


@pytest.mark.parametrize("argv, stdin", [((), None), (("-",), ""), (("-",), " \n\t")])
def test_a_wait_with_no_ids_is_refused_as_invalid_input(li_home: str, argv: tuple[str, ...], stdin: str | None) -> None:
    result = machine("job", "wait", *argv, "--max-wait", "0", home=li_home, stdin=stdin)
    assert result.error["kind"] == "invalid_input"
    human = run_li("job", "wait", *argv, home=li_home, stdin=stdin)
    assert human.returncode == 2 and human.stdout == ""
    assert len(human.stderr.strip().splitlines()) == 1 and "Traceback" not in human.stderr


def test_a_corrupt_record_is_a_per_id_error_that_stops_nothing_else(real_batch: RealBatch) -> None:
    good = real_batch.add("done", "completed")
    junk = real_batch.store.reserve(datetime.now(UTC))
    with open(os.path.join(real_batch.store.run_dir(junk), "record.json"), "w", encoding="utf-8") as handle:
        handle.write("{half a record")
    data = machine("job", "wait", junk, good, "--max-wait", "0", home=real_batch.home).data
    assert data["runs"][0]["error"]["kind"] == "record_unusable"
    assert data["runs"][1]["outcome"] == "succeeded" and data["all_terminal"] is False


def test_human_mode_exits_zero_only_when_every_run_succeeded(real_batch: RealBatch) -> None:
    done, broke = real_batch.add("done", "completed"), real_batch.add("broke", "failed")
    lost = real_batch.add("lost", "gone, identity unrecorded")
    ok = run_li("job", "wait", done, "--max-wait", "0", home=real_batch.home)
    assert (ok.returncode, ok.stdout.split()[:3]) == (0, [done, "completed", "succeeded"])
    for others in ([broke], [lost], [UNKNOWN_ID], [MALFORMED_ID]):
        assert run_li("job", "wait", done, *others, "--max-wait", "0", home=real_batch.home).returncode == 1


def test_human_mode_degrades_to_plain_lines_when_stderr_is_not_a_terminal(real_batch: RealBatch) -> None:
    busy = real_batch.add("busy", "running")
    proc = start_li("job", "wait", busy, "--max-wait", "30", "--poll-interval", "0.1", home=real_batch.home)
    assert proc.stderr is not None
    first = proc.stderr.readline()  # li has observed the run once and said so
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    real_batch.store.update(busy, lambda r: r.evolve(status="completed", finished_at=now))
    _out, rest = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "\x1b" not in first + rest
    live = [line for line in (first + rest).splitlines() if line.startswith(busy)]
    assert [line.split()[1] for line in live] == ["running", "completed"]  # one line per change, not per poll


def test_human_mode_on_a_terminal_redraws_a_live_line_per_run(real_batch: RealBatch) -> None:
    pexpect = pytest.importorskip("pexpect")
    from tests.support import li_bin

    busy, done = real_batch.add("busy", "running"), real_batch.add("done", "completed")
    child = pexpect.spawn(li_bin(), ["job", "wait", busy, done, "--max-wait", "1.5", "--poll-interval", "0.1"],
                          env={**os.environ, "LI_HOME": real_batch.home}, encoding="utf-8", timeout=30)
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before
    assert "\x1b[2K" in screen and "\x1b[2F" in screen  # lines cleared and redrawn in place
    assert any(f"{spin} {busy}  running" in screen for spin in "|/-\\")
    assert child.exitstatus == 1  # the window closed with a run still going


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_in_human_mode_still_shows_what_was_observed_and_leaves_the_run(
    real_batch: RealBatch, signame: str,
) -> None:
    busy = real_batch.add("busy", "running")
    before = snapshot(real_batch.store, [busy])
    proc = start_li("job", "wait", busy, "--max-wait", "60", "--poll-interval", "0.1", home=real_batch.home)
    signal_when_waiting(proc, getattr(signal, signame))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + getattr(signal, signame)  # Ctrl-C: 130, as a shell reports it
    assert out.split()[:2] == [busy, "running"]
    assert "stopped by a signal" in err and "Traceback" not in err
    assert alive(real_batch.children[0]) and snapshot(real_batch.store, [busy]) == before


def test_a_signal_under_machine_answers_with_the_envelope_and_a_json_safe_echo(real_batch: RealBatch) -> None:
    busy, done = real_batch.add("busy", "running"), real_batch.add("done", "completed")
    proc = start_li("job", "wait", done, busy, "--machine", "--max-wait", "inf", "--poll-interval", "nan",
                    home=real_batch.home)
    signal_when_waiting(proc, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    envelope = json.loads(out)
    assert proc.returncode == 0 and envelope["ok"] is True, err
    data = envelope["data"]
    assert [e["status"] for e in data["runs"]] == ["completed", "running"]
    assert (data["max_wait"], data["requested_max_wait"], data["poll_interval"], data["requested_poll_interval"]) == (
        600, "inf", 0.05, "nan")


def test_a_person_whose_pipe_closes_early_gets_no_traceback_and_the_run_is_untouched(real_batch: RealBatch) -> None:
    busy = real_batch.add("busy", "running")
    before = snapshot(real_batch.store, [busy])
    proc = start_li("job", "wait", busy, "--max-wait", "0.3", "--poll-interval", "0.1", home=real_batch.home)
    assert proc.stdout is not None
    proc.stdout.close()  # like `li job wait ... | head -0`
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and "Traceback" not in err and "Exception ignored" not in err
    assert alive(real_batch.children[0]) and snapshot(real_batch.store, [busy]) == before
