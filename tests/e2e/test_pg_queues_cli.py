"""Queues on the PostgreSQL store: settings in its tables, places and slots held by
session advisory locks, one line first come first served across two hosts of the store."""

from __future__ import annotations

import json
import os
import signal
import time

from tests.hosts import OtherHost
from tests.support import li_bin, machine

WORK = 'echo "$LI_RUN_ID" >> {log}; echo x > "$LI_ARTIFACTS_DIR/a"; sleep {seconds}'


def store_env(pg_dsn: str, li_home: str) -> dict[str, str]:
    env = {"LI_STORE": pg_dsn}
    assert machine("store", "init", home=li_home, env=env).data["store"] == "postgresql"
    return env


def started_at(li_home: str, env: dict[str, str], run_id: str) -> str:
    return str(machine("job", "status", run_id, home=li_home, env=env).data["started_at"])


def test_a_queue_on_postgresql_limits_its_runs_and_a_sigkilled_waiter_frees_its_place(
        pg_dsn: str, li_home: str, tmp_path: object) -> None:
    env = store_env(pg_dsn, li_home)
    log = os.path.join(str(tmp_path), "starts")
    assert machine("queue", "set", "pq", "--parallel", "1", home=li_home, env=env).data["queues"][0]["parallel"] == 1
    gate = os.path.join(str(tmp_path), "open")
    first = WORK.format(log=log, seconds=0) + f'; while [ ! -e "{gate}" ]; do sleep 0.05; done'
    ids = [machine("agent", "--detach", "--queue", "pq", "sh", first if not i else WORK.format(log=log, seconds=0),
                   home=li_home, env=env).data["run_id"] for i in range(3)]
    deadline = time.monotonic() + 60
    while machine("job", "status", ids[2], home=li_home, env=env).data["queue_position"] != 2:
        assert time.monotonic() < deadline, "the third run was never second in line"
        time.sleep(0.1)
    victim = machine("job", "status", ids[1], home=li_home, env=env).data
    assert victim["status"] == "queued" and victim["alive"] is True
    os.kill(victim["pid"], signal.SIGKILL)  # its session ends: the server lets go of its place
    open(gate, "w").close()
    ends: dict[str, dict[str, object]] = {}
    for run_id in (ids[0], ids[2]):
        deadline = time.monotonic() + 60
        while not machine("job", "status", run_id, home=li_home, env=env).data["terminal"]:
            assert time.monotonic() < deadline, f"{run_id} never ended"
            time.sleep(0.2)
        ends[run_id] = machine("job", "status", run_id, home=li_home, env=env).data
    assert ends[ids[0]]["outcome"] == ends[ids[2]]["outcome"] == "succeeded"
    with open(log, encoding="utf-8") as handle:
        assert [line.strip() for line in handle] == [ids[0], ids[2]]
    row = machine("queue", "list", home=li_home, env=env).data["queues"][0]
    assert (row["running"], row["waiting"]) == (0, 0)


def test_one_line_across_two_hosts_of_the_store_is_first_come_first_served(
        pg_dsn: str, li_home: str, tmp_path: object) -> None:
    env = store_env(pg_dsn, li_home)
    log = os.path.join(str(tmp_path), "starts")
    machine("queue", "set", "shared", "--parallel", "1", home=li_home, env=env)
    other = OtherHost(str(tmp_path))
    try:
        there = {**os.environ, "LI_HOME": os.path.join(str(tmp_path), "other-home"), **env}
        order: list[str] = []
        for turn in range(4):
            argv = ["agent", "--detach", "--machine", "--queue", "shared", "sh", WORK.format(log=log, seconds=0.5)]
            if turn % 2:
                out = other.run([li_bin(), *argv], there, timeout=60).stdout
                order.append(json.loads(out)["data"]["run_id"])
            else:
                order.append(machine(*argv[:2], *argv[3:], home=li_home, env=env).data["run_id"])
        seen = machine("queue", "list", home=li_home, env=env).data["queues"][0]
        assert seen["parallel"] == 1 and seen["running"] <= 1  # the limit holds for both hosts' runs
        deadline = time.monotonic() + 90
        while True:
            with open(log, encoding="utf-8") if os.path.exists(log) else open(os.devnull) as handle:
                started = [line.strip() for line in handle if line.strip()]
            if len(started) == len(order):
                break
            assert time.monotonic() < deadline, f"only {started} started of {order}"
            time.sleep(0.2)
        assert started == order, (started, order)  # the submits' order, whichever host submitted
    finally:
        other.stop()
