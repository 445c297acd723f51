"""On a real PostgreSQL server, through the real `li`: an outage never bends an end's time,
never fails a wait that can still answer within its window, and never strands the evidence.

- the server stopped across the work's end: `finished_at` is the work's end (within 1 s), not the
  moment the store came back;
- every backend killed while `li job wait` waits: the wait reconnects and answers the end;
- an outage longer than the runner's `LI_STORE_OUTAGE`: the run is reaped `indeterminate`, and the
  next li call on its host moves its console and li log from the spool into the store, the status
  saying where they were.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import datetime
from typing import Any

from tests.e2e.pg_faults import (
    RETRYING,
    console_has,
    spooled,
    stored,
    submit,
    until,
)
from tests.e2e.pg_faults import private as private  # noqa: F401 - the fixtures, shared
from tests.e2e.pg_faults import server as server  # noqa: F401
from tests.e2e.pg_faults import shared as shared  # noqa: F401
from tests.e2e.test_process_titles import named
from tests.pg import PrivateServer
from tests.support import li_bin, machine


def moment(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_an_outage_across_the_work_s_end_does_not_move_the_end_s_time(
        server: PrivateServer, private: dict[str, str], li_home: str, tmp_path: Any) -> None:
    go, ended = tmp_path / "go", tmp_path / "ended"
    run_id = submit(li_home, private, f"echo a; while [ ! -e {go} ]; do sleep 0.05; done; date +%s.%N > {ended}")
    until(lambda: console_has(li_home, private, run_id, "a\n"), 20, "the console never reached the store")
    server.stop()
    go.touch()  # the work ends while the server is stopped
    until(lambda: RETRYING in spooled(li_home, run_id, "li.log"), 20, "the runner never said it waits for the store")
    time.sleep(6)  # an outage of several seconds after the work's end
    server.start()
    waited = machine("job", "wait", run_id, "--max-wait", "60", home=li_home, env=private).data
    assert waited["all_terminal"], waited
    record, _ = stored(private["LI_STORE"], run_id)
    true_end = float(ended.read_text())
    assert record["terminal_source"] == "runner" and record["status"] == "completed", record
    assert 0 <= moment(record["finished_at"]) - true_end <= 1.0, (record["finished_at"], true_end)
    manifest = machine("job", "output", run_id, home=li_home, env=private).data["manifest"]["value"]
    began = moment(record["started_at"] or record["submitted_at"])
    assert manifest["metering"]["wall_seconds"] <= true_end - began + 1.0, (manifest["metering"], true_end - began)


def test_a_wait_whose_backends_are_killed_reconnects_and_answers(shared: dict[str, str], li_home: str,
                                                                  tmp_path: Any) -> None:
    import psycopg

    go = tmp_path / "go"
    run_id = submit(li_home, shared, f"while [ ! -e {go} ]; do sleep 0.05; done; echo done")
    command = [li_bin(), "job", "wait", run_id, "--max-wait", "40", "--machine"]
    env = {**os.environ, "LI_HOME": li_home, **shared}
    waiter = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with psycopg.connect(shared["LI_STORE"], autocommit=True) as admin:
            def others() -> int:
                (count,) = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                         "AND pid <> pg_backend_pid()").fetchone()
                return int(count)

            until(lambda: others() >= 3, 20, "the wait never connected")  # the runner's, the wait's, its LISTEN
            time.sleep(1.0)  # the wait is in its pause, watching
            killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                                   "datname = current_database() AND pid <> pg_backend_pid()").fetchall()
            assert len(killed) >= 2
            go.touch()
        out, err = waiter.communicate(timeout=60)
    finally:
        if waiter.poll() is None:
            waiter.kill()
    envelope = json.loads(out)
    assert envelope["ok"], (envelope, err)
    data = envelope["data"]
    assert data["all_terminal"] and data["runs"][0]["status"] == "completed", data


def test_evidence_left_in_the_spool_past_the_outage_limit_reaches_the_store_afterwards(
        server: PrivateServer, private: dict[str, str], li_home: str, tmp_path: Any) -> None:
    go = tmp_path / "go"
    brief = {**private, "LI_STORE_OUTAGE": "2"}  # the runner waits out 2 s of outage, no more
    run_id = submit(li_home, brief, f"echo a; while [ ! -e {go} ]; do sleep 0.05; done; echo b")
    until(lambda: console_has(li_home, private, run_id, "a\n"), 20, "the console never reached the store")
    server.stop()
    go.touch()
    until(lambda: "the end could not be recorded" in spooled(li_home, run_id, "li.log"), 30,
          "the runner never gave up")
    until(lambda: not named(run_id), 30, "the runner never exited")  # its last console move gave up too
    spool = os.path.join(li_home, "spool", run_id)
    assert os.path.exists(os.path.join(spool, "console.log")) and "b\n" in spooled(li_home, run_id)
    server.start()
    # One li call on this host: it reaps the run (its runner is gone) and, once answered, moves the spool in.
    first = machine("job", "status", run_id, home=li_home, env=private).data
    assert first["terminal"] and first["outcome"] == "indeterminate", first
    until(lambda: not os.path.exists(spool), 20, "the spool was never moved into the store")
    output = machine("job", "output", run_id, home=li_home, env=private).data
    assert output["console"]["value"] == "a\nb\n", output["console"]
    said = output["li_log"]["value"]
    assert "giving up" in said and "moved into the store" in said, said
    status = machine("job", "status", run_id, home=li_home, env=private).data
    where = status["evidence_spool"]
    assert where["path"] == spool and where["host"] == first["host"] and where["moved_at"], status

