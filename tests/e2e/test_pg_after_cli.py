"""Runs that wait for runs on the PostgreSQL store: a chain whose runs are on two hosts
of one store, each waiting for another host's run, in the store and not in any one process."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from tests.hosts import OtherHost
from tests.support import li_bin, machine


def store_env(pg_dsn: str, li_home: str) -> dict[str, str]:
    env = {"LI_STORE": pg_dsn}
    assert machine("store", "init", home=li_home, env=env).data["store"] == "postgresql"
    return env


def lines(path: str) -> list[str]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


def test_a_chain_across_two_hosts_of_one_postgresql_store(pg_dsn: str, li_home: str, tmp_path: Any) -> None:
    env = store_env(pg_dsn, li_home)
    tmp = str(tmp_path)
    marks = os.path.join(tmp, "marks")
    gate_ok, gate_fail = os.path.join(tmp, "ok.open"), os.path.join(tmp, "fail.open")

    def here(work: str, *options: str) -> str:
        return str(machine("agent", "--detach", *options, "sh", work, home=li_home, env=env).data["run_id"])

    def status(run_id: str) -> dict[str, Any]:
        return machine("job", "status", run_id, home=li_home, env=env).data

    def ended(run_id: str, within: float = 90.0) -> dict[str, Any]:
        deadline = time.monotonic() + within
        while not (seen := status(run_id))["terminal"]:
            assert time.monotonic() < deadline, f"{run_id} never ended: {seen['status']}"
            time.sleep(0.2)
        return seen

    def mark(name: str, code: int = 0) -> str:
        return f'echo {name} >> "{marks}"; echo x > "$LI_ARTIFACTS_DIR/a"; exit {code}'

    other = OtherHost(tmp)
    try:
        there_env = {**os.environ, "LI_HOME": os.path.join(tmp, "other-home"), **env}

        def there(work: str, *options: str) -> str:
            done = other.run([li_bin(), "agent", "--detach", "--machine", *options, "sh", work], there_env, timeout=60)
            return str(json.loads(done.stdout)["data"]["run_id"])

        # A (this host) succeeds -> B (the other host, :ok) fails -> C (this host, :any) runs
        a = here(f'while [ ! -e "{gate_ok}" ]; do sleep 0.05; done')
        b = there(mark("B", 1), "--after", a)
        c = here(mark("C"), "--after", f"{b}:any")
        # A2 (this host) fails -> B2 (the other host, :ok) never starts; D2 (the other host, :fail) runs
        a2 = here(f'while [ ! -e "{gate_fail}" ]; do sleep 0.05; done; exit 2')
        b2 = there(mark("B2"), "--after", f"{a2}:ok")
        d2 = there(mark("D2"), "--after", f"{a2}:fail")
        seen = status(b)
        assert (seen["status"], seen["terminal"], seen["host"]) == ("waiting", False, other.machine_id)
        assert seen["after"][0]["run_id"] == a and seen["after"][0]["state"] == "pending"
        assert status(c)["status"] == "waiting"
        time.sleep(0.5)
        assert lines(marks) == []
        open(gate_ok, "w").close()
        assert [ended(r)["outcome"] for r in (a, b, c)] == ["succeeded", "failed", "succeeded"]
        open(gate_fail, "w").close()
        assert ended(a2)["outcome"] == "failed"
        stopped = ended(b2)
        assert (stopped["outcome"], stopped["reason_code"], stopped["failed_dependency"]) == (
            "cancelled", "dependency_failed", a2)
        assert ended(d2)["outcome"] == "succeeded"
        assert lines(marks) == ["B", "C", "D2"]
    finally:
        other.stop()


def test_a_priority_ten_run_submitted_last_starts_next_on_postgresql(pg_dsn: str, li_home: str, tmp_path: Any) -> None:
    env = store_env(pg_dsn, li_home)
    marks, gate = os.path.join(str(tmp_path), "marks"), os.path.join(str(tmp_path), "open")
    machine("queue", "set", "pq", "--parallel", "1", home=li_home, env=env)

    def submit(work: str, *options: str) -> str:
        return str(machine("agent", "--detach", "--queue", "pq", *options, "sh", work, home=li_home,
                           env=env).data["run_id"])

    a = submit(f'while [ ! -e "{gate}" ]; do sleep 0.05; done')
    deadline = time.monotonic() + 60
    while machine("job", "status", a, home=li_home, env=env).data["status"] != "running":
        assert time.monotonic() < deadline, "A never took the slot"
        time.sleep(0.1)
    b, c = (submit(f'echo {name} >> "{marks}"') for name in ("B", "C"))
    d = submit(f'echo D >> "{marks}"', "--priority", "10")
    deadline = time.monotonic() + 60
    while len(line := machine("queue", "list", home=li_home, env=env).data["queues"][0]["line"]) < 3:
        assert time.monotonic() < deadline, "the three never stood in line"
        time.sleep(0.1)
    assert [(w["run_id"], w["priority"]) for w in line] == [(d, 10), (b, 0), (c, 0)]
    open(gate, "w").close()
    deadline = time.monotonic() + 90
    while len(lines(marks)) < 3:
        assert time.monotonic() < deadline, f"only {lines(marks)} started"
        time.sleep(0.2)
    assert lines(marks) == ["D", "B", "C"]
