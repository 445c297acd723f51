"""Faults of the PostgreSQL store, driven through the real `li` against real servers: the server
stopped mid-run and started again, a statement timeout, connections terminated mid-run.

The runner waits out an outage to record its end and move its whole console (no chunk lost or
doubled); every read answers one `unavailable` envelope, never `internal`, never a hang. Stopping
a server is done on a server of this module's own (`PrivateServer`): the shared test server is
used by parallel workers and is never stopped; the other faults use it.
"""

from __future__ import annotations

import os
import time
from typing import Any

from tests.e2e.pg_faults import (
    AT_ONCE,
    RETRYING,
    WAIT_NOT_MADE,
    console_has,
    spooled,
    stored,
    submit,
    until,
)
from tests.e2e.pg_faults import private as private  # noqa: F401 - the fixtures, shared
from tests.e2e.pg_faults import server as server  # noqa: F401
from tests.e2e.pg_faults import shared as shared  # noqa: F401
from tests.pg import PrivateServer
from tests.support import machine, run_li


def ended_by_its_runner(home: str, env: dict[str, str], run_id: str) -> str:
    """Wait for the run's end and for its runner to be gone (the spool moved in); its whole console."""
    waited = machine("job", "wait", run_id, "--max-wait", "30", home=home, env=env).data
    assert waited["all_terminal"] is True, waited
    assert (waited["runs"][0]["status"], waited["runs"][0]["outcome"]) == ("completed", "succeeded"), waited
    spool = os.path.join(home, "spool", run_id)
    until(lambda: not os.path.exists(spool), 15, "the runner never moved its whole console into the store")
    record, chunks = stored(env["LI_STORE"], run_id)
    assert (record["terminal_source"], record["outcome"]) == ("runner", "succeeded"), record
    # The chunks follow each other byte for byte: none missing, none stored twice.
    assert [offset for offset, _ in chunks] == [sum(len(b) for _, b in chunks[:i]) for i in range(len(chunks))]
    console = b"".join(body for _, body in chunks).decode()
    assert machine("job", "output", run_id, home=home, env=env).data["console"]["value"] == console
    return console


def test_a_server_stopped_mid_run_and_started_again_gets_the_runners_end_and_whole_console(
        server: PrivateServer, private: dict[str, str], li_home: str, tmp_path: Any) -> None:
    go = tmp_path / "go"
    run_id = submit(li_home, private, f"echo a; while [ ! -e {go} ]; do sleep 0.05; done; echo b")
    until(lambda: console_has(li_home, private, run_id, "a\n"), 10, "the console never reached the store")
    server.stop()
    go.touch()  # the work ends while the server is stopped: its runner finds the store away
    until(lambda: RETRYING in spooled(li_home, run_id, "li.log"), 10, "the runner never said it waits for the store")
    status = machine("job", "status", run_id, home=li_home, env=private).error
    assert status["kind"] == "unavailable", status
    server.start()
    console = ended_by_its_runner(li_home, private, run_id)
    assert console == "a\nb\n"  # the work's bytes, each once, and nothing of li's
    said = machine("job", "output", run_id, home=li_home, env=private).data["li_log"]["value"].splitlines()
    assert any(line.startswith(RETRYING) for line in said), said
    assert said[-1] == "li runner: completed", said
    manifest = machine("job", "output", run_id, home=li_home, env=private).data["manifest"]
    assert manifest["available"] is True, manifest


def test_every_read_while_the_server_is_stopped_answers_one_unavailable_envelope_at_once(
        server: PrivateServer, private: dict[str, str], li_home: str) -> None:
    run_id = submit(li_home, private, "echo done")
    machine("job", "wait", run_id, "--max-wait", "30", home=li_home, env=private)
    server.stop()
    for argv in (("job", "status", run_id), ("job", "list"), ("job", "wait", run_id, "--max-wait", str(WAIT_NOT_MADE)),
                 ("job", "output", run_id), ("job", "kill", run_id),
                 ("agent", "--detach", "sh", "true"), ("doctor",)):
        began = time.monotonic()
        answer = machine(*argv, home=li_home, env=private)  # exactly one JSON object on stdout
        took = time.monotonic() - began
        envelope = answer.envelope
        if argv == ("doctor",):
            assert envelope["ok"] is True and envelope["data"]["ok"] is False, envelope
        else:
            assert envelope["ok"] is False and envelope["error"]["kind"] == "unavailable", (argv, envelope)
            assert "Traceback" not in answer.stderr
        assert took < AT_ONCE, (argv, took)  # a connection refused at once: never the connect timeout
    assert machine("handshake", home=li_home, env=private).envelope["ok"] is True  # it never reads the store
    for argv in (("job", "status", run_id), ("job", "output", run_id, "--follow")):
        person = run_li(*argv, home=li_home, env=private)
        assert person.returncode != 0 and person.stdout == "", person
        assert len(person.stderr.strip().splitlines()) == 1 and person.stderr.startswith("li: unavailable"), person
    server.start()
    assert machine("job", "status", run_id, home=li_home, env=private).data["outcome"] == "succeeded"


def test_a_statement_timeout_answers_unavailable_and_the_runner_waits_it_out(
        shared: dict[str, str], li_home: str, tmp_path: Any) -> None:
    import psycopg

    go = tmp_path / "go"
    quick = {**shared, "LI_STORE_STATEMENT_TIMEOUT": "0.5"}  # the runner's statements too
    run_id = submit(li_home, quick, f"echo a; while [ ! -e {go} ]; do sleep 0.05; done; echo b")
    until(lambda: console_has(li_home, shared, run_id, "a\n"), 10, "the console never reached the store")
    with psycopg.connect(shared["LI_STORE"]) as blocker:
        blocker.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")  # every statement on runs waits
        go.touch()  # the work ends while the store cannot take its end
        until(lambda: RETRYING in spooled(li_home, run_id, "li.log"), 10,
              "the runner never said it waits for the store")
        for argv in (("job", "status", run_id), ("job", "list"), ("job", "kill", run_id)):
            began = time.monotonic()
            error = machine(*argv, home=li_home, env=quick).error
            assert error["kind"] == "unavailable" and "timeout" in error["message"], (argv, error)
            took = time.monotonic() - began
            assert took < AT_ONCE, (argv, took, error)  # the 0.5 s timeout, never the lock's release
        blocker.rollback()
    console = ended_by_its_runner(li_home, shared, run_id)
    assert console == "a\nb\n"  # the work's bytes, each once, and nothing of li's
    said = machine("job", "output", run_id, home=li_home, env=shared).data["li_log"]["value"].splitlines()
    assert "timeout" in next(line for line in said if "the store is unavailable, retrying" in line)


def test_connections_terminated_mid_run_are_made_again_and_the_run_keeps_its_end_and_console(
        shared: dict[str, str], li_home: str, tmp_path: Any) -> None:
    import psycopg

    go, again = tmp_path / "go", tmp_path / "again"
    run_id = submit(li_home, shared, f"echo a; while [ ! -e {go} ]; do sleep 0.05; done; echo b; "
                                     f"while [ ! -e {again} ]; do sleep 0.05; done; echo c")
    with psycopg.connect(shared["LI_STORE"], autocommit=True) as admin:
        def terminate() -> int:
            rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                 "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall()
            return len(rows)

        until(lambda: console_has(li_home, shared, run_id, "a\n"), 10, "the console never reached the store")
        assert terminate() >= 1  # the runner's connection (its forwarder's too)
        go.touch()
        until(lambda: console_has(li_home, shared, run_id, "b\n"), 10, "the forwarder never reconnected")
        terminate()
        again.touch()  # the end is written on a connection terminated while the work ran
        console = ended_by_its_runner(li_home, shared, run_id)
    assert console == "a\nb\nc\n", console  # the work's bytes, each once, and nothing of li's
