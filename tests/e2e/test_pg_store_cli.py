"""`li` on a PostgreSQL store (LI_STORE), driven as a program would, against a real server; and a
second host (new mount and PID namespaces with their own machine id) sharing that store."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from typing import Any

import pytest

from tests.hosts import OtherHost
from tests.support import li_bin, machine, run_li

DOWN = "postgresql://postgres@127.0.0.1:1/lionrun"  # nothing listens on port 1


@pytest.fixture
def store(pg_dsn: str, li_home: str) -> dict[str, str]:
    """The environment of a li on this host using the test database (schema made by `li store init`)."""
    env = {"LI_STORE": pg_dsn}
    data = machine("store", "init", home=li_home, env=env).envelope["data"]
    assert (data["store"], data["schema_version"]) == ("postgresql", 1)
    assert "@" not in data["location"].split("//", 1)[1].split("/")[0] or ":" not in data["location"].split("@")[0][13:]
    return env


def test_store_init_is_idempotent_and_a_database_without_the_schema_is_unavailable(pg_dsn: str, li_home: str) -> None:
    env = {"LI_STORE": pg_dsn}
    refused = machine("job", "list", home=li_home, env=env).envelope["error"]
    assert refused["kind"] == "unavailable" and "li store init" in refused["message"]
    human = run_li("job", "list", home=li_home, env=env)
    assert human.returncode != 0 and human.stdout == "" and len(human.stderr.strip().splitlines()) == 1
    for _ in range(2):
        data = machine("store", "init", home=li_home, env=env).envelope["data"]
        assert data["schema_version"] == 1
    assert machine("job", "list", home=li_home, env=env).envelope["data"]["runs"] == []


def test_a_run_is_submitted_waited_on_and_read_back_from_the_store(store: dict[str, str], li_home: str) -> None:
    script = 'echo hello from the store; printf data > "$LI_ARTIFACTS_DIR/out.txt"'
    run_id = machine("agent", "--detach", "sh", script, home=li_home, env=store).envelope["data"]["run_id"]
    waited = machine("job", "wait", run_id, "--max-wait", "30", home=li_home, env=store).envelope["data"]
    assert waited["runs"][0]["outcome"] == "succeeded"
    status = machine("job", "status", run_id, home=li_home, env=store).envelope["data"]
    assert (status["status"], status["outcome"], status["host"]) == ("completed", "succeeded", _machine_id())
    out = machine("job", "output", run_id, home=li_home, env=store).envelope["data"]
    assert out["console"]["value"] == "hello from the store\n"  # the work's bytes alone
    names = {a["name"]: a for a in out["artifacts"]["value"]}
    assert names["out.txt"]["size"] == 4 and names["out.txt"]["path"].startswith("postgresql:runs/")
    assert out["manifest"]["available"] and "out.txt" in out["manifest"]["value"]["artifacts"]["value"]
    # and a person prints it by name, from the store
    printed = run_li("job", "output", run_id, "--artifact", "out.txt", home=li_home, env=store)
    assert (printed.returncode, printed.stdout) == (0, "data"), printed.stderr
    missing = run_li("job", "output", run_id, "--artifact", "none.txt", home=li_home, env=store)
    assert missing.returncode != 0 and missing.stdout == "" and "none.txt" in missing.stderr
    # Nothing of the run stays on this host's disk once its end is recorded.
    assert not os.path.exists(os.path.join(li_home, "runs", run_id))
    assert not os.path.exists(os.path.join(li_home, "spool", run_id))


def test_a_runs_output_is_exactly_what_the_work_wrote_and_li_s_lines_are_in_the_store_apart(
        store: dict[str, str], li_home: str) -> None:
    """On the shared store: the console chunks hold the work's bytes, li_log_chunks li's."""
    run_id = machine("agent", "--detach", "sh", "printf abc", home=li_home, env=store).envelope["data"]["run_id"]
    waited = machine("job", "wait", run_id, "--max-wait", "30", home=li_home, env=store).envelope["data"]
    assert waited["runs"][0]["outcome"] == "succeeded"
    deadline = time.monotonic() + 15  # the runner moves its last line in as it exits
    while os.path.exists(os.path.join(li_home, "spool", run_id)):
        assert time.monotonic() < deadline, "the runner never moved its spool into the store"
        time.sleep(0.05)
    shown = run_li("job", "output", run_id, home=li_home, env=store)
    assert (shown.returncode, shown.stdout) == (0, "abc"), shown.stderr
    out = machine("job", "output", run_id, home=li_home, env=store).envelope["data"]
    assert out["console"]["value"] == "abc" and out["li_log"]["value"] == "li runner: completed\n"
    followed = run_li("job", "output", "--follow", run_id, home=li_home, env=store)
    assert (followed.returncode, followed.stdout, followed.stderr) == (0, "abc", "li runner: completed\n")


def test_a_server_that_is_down_answers_unavailable_on_every_verb_and_a_submit_leaves_nothing(li_home: str) -> None:
    env = {"LI_STORE": DOWN}
    for argv in (("job", "list"), ("job", "status", "20261203T080000-abcdef"),
                 ("job", "wait", "20261203T080000-abcdef", "--max-wait", "0"),
                 ("job", "output", "20261203T080000-abcdef"), ("job", "kill", "20261203T080000-abcdef"),
                 ("agent", "--detach", "sh", "true"), ("store", "init")):
        envelope = machine(*argv, home=li_home, env=env).envelope
        if envelope["ok"]:  # a wait answers per id: the id's row says it could not be observed
            rows = envelope["data"]["runs"]
            assert rows[0]["error"] is not None and rows[0]["terminal"] is None, (argv, envelope)
            continue
        assert envelope["error"]["kind"] == "unavailable", (argv, envelope)
    assert not os.path.exists(os.path.join(li_home, "runs"))
    doctor = machine("doctor", home=li_home, env=env).envelope["data"]
    [shared] = [c for c in doctor["checks"] if c["name"] == "store.shared"]
    assert shared["ok"] is False and doctor["ok"] is False


def test_doctor_checks_the_shared_store(store: dict[str, str], li_home: str) -> None:
    doctor = machine("doctor", home=li_home, env=store).envelope["data"]
    [shared] = [c for c in doctor["checks"] if c["name"] == "store.shared"]
    assert shared["ok"] is True and "schema current" in shared["detail"]


def _machine_id() -> str:
    with open("/etc/machine-id", encoding="ascii") as handle:
        return handle.read().strip()


def test_another_hosts_run_is_shown_with_its_host_and_never_probed_or_reaped_here(
        store: dict[str, str], li_home: str, tmp_path: Any) -> None:
    other = OtherHost(str(tmp_path))
    try:
        env = {**os.environ, "LI_HOME": os.path.join(str(tmp_path), "other-home"), **store}
        submitted = other.run([li_bin(), "agent", "--detach", "--machine", "sh", "sleep 60"], env, timeout=60)
        run_id = json.loads(submitted.stdout)["data"]["run_id"]
        # On the other host the run is its own: alive.
        there = json.loads(other.run([li_bin(), "job", "status", run_id, "--machine"], env, timeout=60).stdout)
        assert (there["data"]["host"], there["data"]["alive"]) == (other.machine_id, True)
        here = machine("job", "status", run_id, home=li_home, env=store).envelope["data"]
        assert here["host"] == other.machine_id != _machine_id()
        assert (here["terminal"], here["alive"]) == (False, None)  # another host's process: not judged here
        # The other host dies with its run; this host still never reaps what is not its own.
        other.stop()
        time.sleep(0.5)
        for _ in range(3):
            after = machine("job", "status", run_id, home=li_home, env=store).envelope["data"]
            assert (after["terminal"], after["outcome"], after["alive"]) == (False, None, None)
        rows = machine("job", "list", home=li_home, env=store).envelope["data"]["runs"]
        assert [(r["run_id"], r["host"]) for r in rows] == [(run_id, other.machine_id)]
    finally:
        other.stop()


def test_a_kill_from_another_host_is_recorded_and_the_owning_runner_stops_its_work_within_2_s(
        store: dict[str, str], li_home: str, tmp_path: Any) -> None:
    other = OtherHost(str(tmp_path))
    try:
        env = {**os.environ, "LI_HOME": os.path.join(str(tmp_path), "other-home"), **store}
        run_id, second = (json.loads(other.run([li_bin(), "agent", "--detach", "--machine", "sh",
                                                "echo started; sleep 60"], env, timeout=60).stdout)["data"]["run_id"]
                          for _ in range(2))
        deadline = time.monotonic() + 30
        while not all("started" in (machine("job", "output", r, home=li_home, env=store)
                                    .envelope["data"]["console"]["value"] or "") for r in (run_id, second)):
            assert time.monotonic() < deadline, "the work never started"
            time.sleep(0.1)
        # This host kills another host's run: nothing is signalled from here, the request is recorded.
        killed = machine("job", "kill", run_id, home=li_home, env=store).envelope["data"]
        asked = time.time()
        assert (killed["action"], killed["terminal"]) == ("requested", False), killed
        human = run_li("job", "kill", second, home=li_home, env=store)  # a person is told the same
        assert human.returncode == 0 and "kill requested" in human.stdout, human
        # The owning runner, watching the store, stops its work and records the end itself.
        waited = machine("job", "wait", run_id, "--max-wait", "10", home=li_home, env=store).envelope["data"]
        [row] = waited["runs"]
        assert (row["status"], row["outcome"], row["terminal"]) == ("cancelled", "cancelled", True), row
        status = machine("job", "status", run_id, home=li_home, env=store).envelope["data"]
        assert status["reason_code"] == "kill_requested", status
        from lionrun.adapters.pg_store import PgRunStore

        record = PgRunStore(store["LI_STORE"], os.path.join(li_home, "spool")).read(run_id)
        assert record.terminal_source == "runner"  # recorded by the owning runner, not reaped
        assert status["host"] == other.machine_id
        ended = datetime.fromisoformat(status["finished_at"]).timestamp()
        assert ended - asked < 2.0, (ended - asked, status)
        # The work itself is gone on its host: no `sleep 60` is left in its namespace.
        machine("job", "wait", second, "--max-wait", "10", home=li_home, env=store)
        left = other.run(["sh", "-c", "ps -eo args | grep -c '^sleep 60$' || true"], env, timeout=30)
        assert left.stdout.strip() == "0", left
        out = machine("job", "output", run_id, home=li_home, env=store).envelope["data"]
        assert out["console"]["value"] == "started\n"  # the work's bytes alone
        assert "li runner: a kill request is recorded; stopping the work" in out["li_log"]["value"]
    finally:
        other.stop()


def test_a_wait_on_the_shared_store_wakes_on_notify_not_at_its_next_poll(
        store: dict[str, str], li_home: str, tmp_path: Any, pg_dsn: str) -> None:
    import subprocess

    import psycopg

    go = tmp_path / "go"
    script = f"i=0; while [ ! -e {go} ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done"
    run_id = machine("agent", "--detach", "sh", script, home=li_home, env=store).envelope["data"]["run_id"]
    env = {**os.environ, "LI_HOME": li_home, **store}
    waiter = subprocess.Popen([li_bin(), "job", "wait", run_id, "--poll-interval", "5", "--max-wait", "60",
                               "--machine"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, env=env)
    try:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            deadline = time.monotonic() + 30
            while not conn.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %%' "
                                   "AND datname = current_database()").fetchone()[0]:
                assert waiter.poll() is None, waiter.communicate()
                assert time.monotonic() < deadline, "the wait never listened"
                time.sleep(0.01)
            go.touch()  # the work ends; its runner records the end (and the write notifies)
            out, err = waiter.communicate(timeout=30)
            returned = time.time()
            recorded = conn.execute("SELECT extract(epoch FROM written_at) FROM runs WHERE run_id = %s",
                                    (run_id,)).fetchone()[0]
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    data = json.loads(out)["data"]
    assert data["all_terminal"] is True and data["timed_out"] is False, (data, err)
    assert data["poll_interval"] == 5
    assert returned - float(recorded) < 1.0  # a 5 s poll would have taken up to 5 s


def test_the_work_never_sees_the_store_url(store: dict[str, str], li_home: str) -> None:
    script = 'printf "%s" "${LI_STORE-unset}" > "$LI_ARTIFACTS_DIR/seen.txt"'
    run_id = machine("agent", "--detach", "sh", script, home=li_home, env=store).envelope["data"]["run_id"]
    machine("job", "wait", run_id, "--max-wait", "30", home=li_home, env=store)
    from lionrun.adapters.pg_store import PgRunStore

    body = PgRunStore(store["LI_STORE"], os.path.join(li_home, "spool")).artifact_body(run_id, "seen.txt")
    assert body == b"unset"


def test_the_human_list_on_a_shared_store_shows_each_runs_host(
        store: dict[str, str], li_home: str, tmp_path: Any) -> None:
    other = OtherHost(str(tmp_path))
    try:
        env = {**os.environ, "LI_HOME": os.path.join(str(tmp_path), "other-home"), **store}
        theirs = json.loads(other.run([li_bin(), "agent", "--detach", "--machine", "--label", "there", "sh", "true"],
                                      env, timeout=60).stdout)["data"]["run_id"]
        ours = machine("agent", "--detach", "--label", "here", "sh", "true", home=li_home, env=store).data["run_id"]
        machine("job", "wait", ours, "--max-wait", "30", home=li_home, env=store)
        for argv, host in ((None, _machine_id()), (other, other.machine_id)):
            # Read from each host: the same table, each run naming its own host (never the reader's).
            if argv is None:
                result = run_li("job", "list", "--wide", home=li_home, env={**store, "NO_COLOR": "1"})
                listing, code = result.stdout, result.returncode
            else:
                done = other.run([li_bin(), "job", "list", "--wide"], {**env, "NO_COLOR": "1"}, timeout=60)
                listing, code = done.stdout, done.returncode
            assert code == 0, listing
            lines = listing.splitlines()
            heads = lines[0].split()
            assert heads[heads.index("DURATION") + 1:] == ["HOST", "LABEL", "COMMAND"], (host, lines)
            at = lines[0].index("HOST")
            shown = {line.split()[0]: line[at:].split()[:2] for line in lines[1:]}
            assert shown == {theirs: [other.machine_id[:8], "there"], ours: [_machine_id()[:8], "here"]}, lines
        assert other.machine_id[:8] != _machine_id()[:8]
    finally:
        other.stop()


def test_a_runs_work_on_the_postgresql_store_gets_no_way_into_the_store(store: dict[str, str], li_home: str) -> None:
    """Li's way into a shared store (its URL, which may carry a password, and any
    libpq variable it was given) is li's, never the work's: the work's environment holds none."""
    env = {**store, "PGPASSWORD": "li-secret", "PGHOST": "127.0.0.1", "PGAPPNAME": "li-app"}
    script = "env"  # onto the console, which this store keeps
    run_id = machine("agent", "--detach", "sh", script, home=li_home, env=env).envelope["data"]["run_id"]
    waited = machine("job", "wait", run_id, "--max-wait", "30", home=li_home, env=env).envelope["data"]
    assert waited["runs"][0]["outcome"] == "succeeded", waited
    text = machine("job", "output", run_id, home=li_home, env=env).envelope["data"]["console"]["value"]
    assert f"LI_RUN_ID={run_id}" in text, "the artifact was not read: the check would prove nothing"
    assert "LI_STORE=" not in text and "li-secret" not in text and "PGHOST=" not in text and "PGAPPNAME" not in text
    assert store["LI_STORE"].split("//", 1)[1] not in text
