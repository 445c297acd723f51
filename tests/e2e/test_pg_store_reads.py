"""Reading a shared (PostgreSQL) store from another host, as issue 16 names it: the console streamed
in ordered chunks (`--tail-chars`, `--follow`), artifacts over the per-artifact cap listed with
their reason, `li store copy` resumed, and doctor's privilege check. A real server, a real second
host (tests/hosts.py), the real `li`."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

import pytest

from tests.hosts import OtherHost
from tests.support import li_bin, machine, run_li


@pytest.fixture
def store(pg_dsn: str, li_home: str) -> dict[str, str]:
    env = {"LI_STORE": pg_dsn}
    machine("store", "init", home=li_home, env=env)
    return env


@pytest.fixture
def other(tmp_path: Any) -> Any:
    host = OtherHost(str(tmp_path))
    try:
        yield host
    finally:
        host.stop()


def _there(other: OtherHost, tmp_path: Any, store: dict[str, str]) -> dict[str, str]:
    return {**os.environ, "LI_HOME": os.path.join(str(tmp_path), "other-home"), **store}


def test_another_host_tails_and_follows_the_console_as_the_runner_streams_it(
        store: dict[str, str], li_home: str, other: OtherHost, tmp_path: Any) -> None:
    go = tmp_path / "go"
    # A console of many lines (several chunks), then a wait for the test's word, then a last line.
    script = (f"i=0; while [ $i -lt 400 ]; do echo line-$i-$(printf '%0200d' 0); i=$((i+1)); done; "
              f"j=0; while [ ! -e {go} ] && [ $j -lt 1500 ]; do sleep 0.02; j=$((j+1)); done; echo last")
    run_id = machine("agent", "--detach", "sh", script, home=li_home, env=store).envelope["data"]["run_id"]
    env = _there(other, tmp_path, store)
    deadline = time.monotonic() + 30
    while True:  # read from the other host while the run is still going
        tail = json.loads(other.run([li_bin(), "job", "output", run_id, "--tail-chars", "300", "--machine"],
                                    env, timeout=60).stdout)["data"]
        if "line-399-" in (tail["console"]["value"] or ""):
            break
        assert time.monotonic() < deadline, tail
        time.sleep(0.1)
    value = tail["console"]["value"]
    assert len(value) <= 300 and value.endswith("\n") and "line-399-" in value
    assert tail["console"]["truncated"] is True
    follower = other.popen([li_bin(), "job", "output", run_id, "--follow"], env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        assert follower.poll() is None  # the run is another host's and still going: keep following
        go.touch()
        out, err = follower.communicate(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.returncode == 0, err
    # The follow starts at the console's tail (as `tail -f` does) and streams on: in order, once,
    # up to the last line written after it began, then the runner's word.
    lines = [line for line in out.splitlines() if line.startswith("line-")]
    numbers = [int(line.split("-")[1]) for line in lines]
    assert numbers and numbers == list(range(numbers[0], 400)), out[-500:]
    assert out.splitlines()[out.splitlines().index(lines[-1]) + 1] == "last"


def test_an_artifact_over_the_cap_is_listed_unavailable_too_large_and_the_others_are_read(
        store: dict[str, str], li_home: str) -> None:
    from lionrun.adapters.pg_store import ARTIFACT_BODY_MAX, PgRunStore

    script = (f'head -c {ARTIFACT_BODY_MAX + 1} /dev/zero > "$LI_ARTIFACTS_DIR/big.bin"; '
              f'head -c {ARTIFACT_BODY_MAX} /dev/zero > "$LI_ARTIFACTS_DIR/edge.bin"; '
              'printf small > "$LI_ARTIFACTS_DIR/small.txt"')
    run_id = machine("agent", "--detach", "sh", script, home=li_home, env=store).envelope["data"]["run_id"]
    waited = machine("job", "wait", run_id, "--max-wait", "60", home=li_home, env=store).envelope["data"]
    assert waited["runs"][0]["outcome"] == "succeeded", waited
    out = machine("job", "output", run_id, home=li_home, env=store).envelope["data"]
    entries = {a["name"]: a for a in out["artifacts"]["value"]}
    assert entries["big.bin"]["size"] == ARTIFACT_BODY_MAX + 1
    assert (entries["big.bin"]["available"], entries["big.bin"]["reason_code"]) == (False, "too_large")
    assert entries["edge.bin"].get("available", True) is True and entries["small.txt"].get("available", True)
    reader = PgRunStore(store["LI_STORE"], os.path.join(li_home, "spool"))
    assert reader.artifact_body(run_id, "small.txt") == b"small"
    assert reader.artifact_body(run_id, "edge.bin") == bytes(ARTIFACT_BODY_MAX)
    assert reader.artifact_body(run_id, "big.bin") is None


def test_a_copy_that_skipped_a_live_run_takes_it_in_when_run_again_after_it_ended(
        pg_dsn: str, li_home: str, tmp_path: Any) -> None:
    done = machine("agent", "--detach", "sh", "echo done", home=li_home).envelope["data"]["run_id"]
    go = tmp_path / "go"
    live = machine("agent", "--detach", "sh", f"while [ ! -e {go} ]; do sleep 0.05; done; echo late",
                   home=li_home).envelope["data"]["run_id"]
    machine("job", "wait", done, "--max-wait", "30", home=li_home)
    other = os.path.join(str(tmp_path), "other-home")
    os.mkdir(other)
    env = {"LI_STORE": pg_dsn}
    machine("store", "init", home=other, env=env)
    first = machine("store", "copy", "--from", li_home, "--to", pg_dsn, home=other, timeout=60).envelope["data"]
    assert (first["copied"], first["already_there"], first["skipped"]) == (1, 0, 1)
    assert machine("job", "status", live, home=other, env=env).envelope["error"]["kind"] == "not_found"
    go.touch()
    machine("job", "wait", live, "--max-wait", "30", home=li_home)
    resumed = machine("store", "copy", "--from", li_home, "--to", pg_dsn, home=other, timeout=60).envelope["data"]
    assert (resumed["copied"], resumed["already_there"], resumed["skipped"]) == (1, 1, 0)
    copied = machine("job", "output", live, home=other, env=env).envelope["data"]
    assert copied["console"]["value"].startswith("late\n")


def test_doctor_names_missing_privileges_of_the_role(pg_dsn: str, store: dict[str, str], li_home: str) -> None:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    role = "li_no_rights"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"DROP ROLE IF EXISTS {role}")
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT CONNECT ON DATABASE \"{conninfo_to_dict(pg_dsn)['dbname']}\" TO {role}")
    try:
        parts = conninfo_to_dict(pg_dsn)
        weak = f"postgresql://{role}@{parts.get('host', '127.0.0.1')}:{parts.get('port', 5432)}/{parts['dbname']}"
        doctor = machine("doctor", home=li_home, env={"LI_STORE": weak}).envelope["data"]
        [shared] = [c for c in doctor["checks"] if c["name"] == "store.shared"]
        assert shared["ok"] is False and "permission denied" in shared["detail"], shared
        # Every verb on that role answers unavailable, never internal.
        refused = machine("job", "list", home=li_home, env={"LI_STORE": weak}).envelope
        assert refused["ok"] is False and refused["error"]["kind"] == "unavailable", refused
        human = run_li("job", "list", home=li_home, env={"LI_STORE": weak})
        assert human.returncode != 0 and len(human.stderr.strip().splitlines()) == 1
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE IF EXISTS {role}")
