"""`li store copy`: a filesystem store's ended runs moved into a real PostgreSQL store and read back
from it as they were; a second copy copies nothing; a live run is skipped; a link is never followed."""

from __future__ import annotations

import os
from typing import Any

from tests.support import machine, run_li

LIFECYCLE = ("run_id", "status", "outcome", "exit_code", "submitted_at", "started_at", "finished_at", "host",
             "spawn_state", "terminal_source")


def _lifecycle(status: dict[str, Any]) -> dict[str, Any]:
    return {key: status.get(key) for key in LIFECYCLE}


def _digests(output: dict[str, Any]) -> dict[str, Any]:
    return {a["name"]: (a["type"], a["size"], a["sha256"], a.get("link")) for a in output["artifacts"]["value"]}


def test_ended_runs_are_copied_whole_once_and_read_back_from_the_database(
        pg_dsn: str, li_home: str, tmp_path: Any) -> None:
    scripts = ('echo one; printf data > "$LI_ARTIFACTS_DIR/out.txt"; mkdir "$LI_ARTIFACTS_DIR/sub"; '
               'printf more > "$LI_ARTIFACTS_DIR/sub/b.txt"', "echo two",
               "head -c 200000 /dev/zero | tr '\\0' a; echo three; exit 3")  # a console of several chunks
    ids = [machine("agent", "--detach", "sh", s, home=li_home).envelope["data"]["run_id"] for s in scripts]
    machine("job", "wait", *ids, "--max-wait", "30", home=li_home)
    # A planted link in the first run's artifacts, to a FIFO: following it would hang the copy.
    fifo = os.path.join(str(tmp_path), "fifo")
    os.mkfifo(fifo)
    os.symlink(fifo, os.path.join(li_home, "runs", ids[0], "artifacts", "planted"))
    # live for the whole test (killed at its end): a run not ended is skipped by every copy
    live = machine("agent", "--detach", "sh", "sleep 600", home=li_home).envelope["data"]["run_id"]
    try:
        before = {i: (machine("job", "status", i, home=li_home).envelope["data"],
                      machine("job", "output", i, home=li_home).envelope["data"]) for i in ids}
        other = os.path.join(str(tmp_path), "other-home")
        os.mkdir(other)
        env = {"LI_STORE": pg_dsn}
        machine("store", "init", home=other, env=env)
        copied = machine("store", "copy", "--from", li_home, "--to", pg_dsn, home=other, timeout=60).envelope["data"]
        assert (copied["copied"], copied["already_there"], copied["skipped"]) == (3, 0, 1)
        assert [(s["run_id"], s["reason_code"]) for s in copied["skipped_runs"]] == [(live, "not_ended")]
        for run_id in ids:
            status = machine("job", "status", run_id, home=other, env=env).envelope["data"]
            output = machine("job", "output", run_id, home=other, env=env).envelope["data"]
            fs_status, fs_output = before[run_id]
            assert _lifecycle(status) == _lifecycle(fs_status)
            assert output["console"] == fs_output["console"] and output["console"]["available"]
            assert _digests(output) == _digests(fs_output)
        first = {a["name"]: a for a in machine("job", "output", ids[0], home=other, env=env)
                 .envelope["data"]["artifacts"]["value"]}
        assert first["planted"]["type"] == "symlink" and first["planted"]["sha256"] is None
        assert first["planted"]["link"] == fifo and first["sub/b.txt"]["size"] == 4
        import psycopg

        with psycopg.connect(pg_dsn) as conn:
            bodies = dict(conn.execute("SELECT name, body FROM artifacts WHERE run_id = %s", (ids[0],)).fetchall())
            chunks = conn.execute("SELECT count(*), sum(length(body)) FROM console_chunks WHERE run_id = %s",
                                  (ids[2],)).fetchone()
        assert chunks == (4, os.path.getsize(os.path.join(li_home, "runs", ids[2], "console.log")))
        assert bodies == {"out.txt": b"data", "sub/b.txt": b"more", "planted": None,
                          "response.md": b"one\n"}
        again = machine("store", "copy", "--from", li_home, "--to", pg_dsn, home=other).envelope["data"]
        assert (again["copied"], again["already_there"], again["skipped"]) == (0, 3, 1)
        human = run_li("store", "copy", "--from", li_home, "--to", pg_dsn, home=other)
        assert human.returncode == 0 and len(human.stdout.strip().splitlines()) == 1
        assert "copied 0 runs" in human.stdout
    finally:
        machine("job", "kill", live, home=li_home)


def test_a_target_that_is_down_answers_unavailable_and_a_folder_that_is_no_store_invalid_input(
        li_home: str, tmp_path: Any) -> None:
    os.makedirs(os.path.join(li_home, "runs"), exist_ok=True)
    down = run_li("store", "copy", "--from", li_home, "--to", "postgresql://postgres@127.0.0.1:1/lionrun",
                  "--machine", home=li_home).envelope["error"]
    assert down["kind"] == "unavailable" and down["detail"]["reason_code"] == "store_refused"
    empty = os.path.join(str(tmp_path), "empty")
    os.mkdir(empty)
    refused = run_li("store", "copy", "--from", empty, "--to", "postgresql://x@127.0.0.1:1/db", "--machine",
                     home=li_home).envelope["error"]
    assert refused["kind"] == "invalid_input" and refused["detail"]["reason_code"] == "not_a_store"
