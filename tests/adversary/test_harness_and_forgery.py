"""The arena's own checks catch what they claim to, the decoy record is armed, and a forged record.

A regular `record.json` the work wrote itself, naming a live process outside the run with its
true incarnation, is the plant the store cannot reject by shape: only `li job kill` itself can
refuse to signal a process that is not the run's.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.adversary.harness import (
    PLACEHOLDER,
    Arena,
    CanaryServed,
    eventually,
    sh_script,
    show,
    wait_gone,
)


def test_the_arena_catches_a_served_canary_a_changed_file_and_a_signalled_decoy(arena: Arena) -> None:
    arena.seal()
    with pytest.raises(CanaryServed):
        arena.assert_no_canary(("job", "output"), b'{"x": "' + arena.canaries[0].encode() + b'"}', b"")
    with pytest.raises(CanaryServed):
        arena.assert_no_canary(("job", "output"), b"", arena.digests[0].encode())
    secret = arena.outside / "secret.txt"
    before = secret.stat().st_mtime_ns
    os.utime(secret, ns=(before, before + 1_000_000))
    with pytest.raises(AssertionError, match="outside the store changed"):
        arena.verify()
    os.utime(secret, ns=(before, before))
    arena.verify()
    assert arena.decoy is not None
    arena.decoy.stop()
    with pytest.raises(AssertionError, match="signalled"):
        arena.assert_decoy_alive()


def test_the_decoy_record_is_armed_a_store_that_followed_it_would_see_a_live_run(arena: Arena) -> None:
    """The record planted by link, wrong id, bad bytes or size names the decoy as a live run: read as
    a real record it is `running` and alive, so a kill that followed it would signal the decoy. And
    the record of a gone run is reaped by the first status: a status that followed a linked run
    folder holding one would write into the folder outside the store."""
    run_id = arena.clone()
    (arena.runs / run_id / "record.json").write_text(json.dumps(arena.record_naming_decoy(run_id)))
    arena.seal()
    status = arena.li("job", "status", run_id)
    assert status["ok"] is True, show(status)
    assert (status["data"]["status"], status["data"]["terminal"], status["data"]["alive"]) == \
        ("running", False, True), show(status)
    gone = arena.clone()
    record = arena.runs / gone / "record.json"
    record.write_text(json.dumps(arena.record_naming_dead_run(gone)))
    before = record.read_bytes()
    reaped = arena.li("job", "status", gone)  # the reaper writes its verdict into the run's folder
    assert reaped["ok"] is True and reaped["data"]["terminal"] is True, show(reaped)
    assert record.read_bytes() != before
    arena.verify()


def test_a_record_the_work_forged_as_a_regular_file_gets_no_process_outside_the_run_signalled(
        arena: Arena) -> None:
    """Once its runner has exited, a process outside the run (no process of the run outlives it) replaces record.json by a regular file
    of the right shape and run id, naming a live process outside the run with its true
    incarnation (the decoy); `li job kill` must not signal it."""
    arena.payload("forged.json", json.dumps(arena.record_naming_decoy(PLACEHOLDER), indent=1).encode())
    marker, go = arena.scratch / "forged", arena.scratch / "go"
    after = arena.scratch / "forge.sh"
    after.write_text(sh_script([
        'R="$1"; ID="$2"; i=0',
        'while [ ! -e "$GO" ]; do',  # the test touches it once the runner has exited
        '  i=$((i+1)); [ "$i" -lt 600 ] || exit 1; sleep 0.05',
        'done',
        f'sed "s/{PLACEHOLDER}/$ID/g" {arena.outside}/payloads/forged.json > "$R/.forged"',
        'mv -f "$R/.forged" "$R/record.json"', f': > {marker}'], GO=str(go)))
    arena.seal()
    run_id, pid = arena.submit(sh_script(["echo done"]))
    # No process of the run outlives it any more (its runner stops every one before recording the
    # end), so the forger is another process of the store's user, outside the run.
    subprocess.Popen(["sh", str(after), str(arena.runs / run_id), run_id], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_gone(pid)
    go.touch()
    eventually("the forger", marker.exists)
    arena.seal_made()
    status = arena.li("job", "status", run_id)
    killed = arena.li("job", "kill", run_id)
    arena.assert_decoy_alive(f"li job kill answered {killed}; li job status had answered {status}")
    arena.verify()
