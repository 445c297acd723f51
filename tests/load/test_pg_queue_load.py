"""One queue on a PostgreSQL store shared by two hosts (this one and a namespaced second,
tests/hosts.py), runs submitted from both at once and run sessions SIGKILLed at random from the
host that owns them, while they wait and while their work runs (issue 29).

Proven, from outside li: never more works running than the queue's limit at any 50 ms sample
(/proc of this host sees the second host's processes too), no slot or place lost (the queue says
0 running and 0 waiting at the end), every run ends, and the runs were given their slots in the
order their submits took tickets, whichever host submitted.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from typing import Any

from tests.load.test_pg_load import Host, Records, two_hosts  # noqa: F401 - the fixture, shared
from tests.load.test_queue_load import TAG, works_running

PARALLEL = 2
RUNS = int(os.environ.get("LI_PG_QUEUE_LOAD_RUNS", "16"))  # half from each host


def submit(host: Host, token: str, log: str, count: int, ids: list[tuple[str, str]], errors: list[str],
           lock: threading.Lock) -> None:
    work = f'echo x > "$LI_ARTIFACTS_DIR/a"; echo "$LI_RUN_ID" >> "{log}"; exec sleep 1'
    env = {**host.env, TAG: token}
    for _ in range(count):
        _, _, envelope = Host(host.name, host.machine_id, env, host.wrap).li(
            "agent", "--detach", "--queue", "pgl", "sh", work)
        with lock:
            if not envelope["ok"] or envelope["data"]["status"] != "queued":
                errors.append(f"{host.name}: {envelope}")
            else:
                ids.append((host.name, envelope["data"]["run_id"]))


def test_one_queue_across_two_hosts_of_a_postgresql_store_with_sessions_sigkilled(
        two_hosts: tuple[Host, Host, Records], tmp_path: Any) -> None:  # noqa: F811 - the shared fixture
    here, there, records = two_hosts
    run_queue_load(here, there, records, str(tmp_path))


def run_queue_load(here: Host, there: Host, records: Records, tmp: str) -> None:
    token, log = uuid.uuid4().hex, os.path.join(tmp, "starts")
    _, _, made = here.li("queue", "set", "pgl", "--parallel", str(PARALLEL))
    assert made["ok"], made
    lock, ids, errors = threading.Lock(), [], []
    done = threading.Event()
    peak = [0, 0]  # peak, samples
    killed: dict[str, str] = {}
    by_name = {"A": here, "B": there}

    def sampler() -> None:
        tag = f"{TAG}={token}".encode()
        while not done.is_set():
            running = works_running(tag)
            with lock:
                peak[0], peak[1] = max(peak[0], running), peak[1] + 1
                if running > PARALLEL:
                    errors.append(f"{running} works running at once in a queue of parallel {PARALLEL}")
            time.sleep(0.05)

    def killer() -> None:
        rng = random.Random(29)
        while not done.is_set():
            time.sleep(rng.uniform(0.2, 0.8))
            with lock:
                candidates = [(h, r) for h, r in ids if r not in killed]
                enough = len(killed) >= 0.25 * RUNS
            if not candidates or enough:
                continue
            host, run_id = rng.choice(candidates[-6:])
            record = records.record(run_id)
            if not record or record.get("finished_at") or not record.get("incarnation"):
                continue
            with lock:
                killed[run_id] = str(record["status"])
            by_name[host].kill("session", run_id, record["incarnation"])

    workers = [threading.Thread(target=submit, args=(h, token, log, RUNS // 4, ids, errors, lock))
               for h in (here, there, here, there)]
    watchers = [threading.Thread(target=sampler), threading.Thread(target=killer)]
    began = time.monotonic()
    for thread in watchers + workers:
        thread.start()
    for thread in workers:
        thread.join()
    remaining = {r: h for h, r in ids}
    deadline = time.monotonic() + 180
    while remaining and time.monotonic() < deadline:
        for name in ("A", "B"):
            mine = [r for r, h in remaining.items() if h == name]
            if mine:  # each host reads (and reaps) its own runs
                _, _, waited = by_name[name].li("job", "wait", *mine, "--max-wait", "5", "--poll-interval", "0.2")
                for entry in waited["data"]["runs"]:
                    if entry["terminal"]:
                        remaining.pop(entry["run_id"], None)
    done.set()
    for thread in watchers:
        thread.join()
    print(f"pg queue load: {len(ids)} runs from 2 hosts, {len(killed)} sessions SIGKILLed "
          f"({sum(v == 'queued' for v in killed.values())} queued), peak {peak[0]} of {PARALLEL}, "
          f"{peak[1]} samples, {time.monotonic() - began:.1f} s")
    assert errors == [], errors[:5]
    assert len(ids) == RUNS and remaining == {}, f"never ended: {sorted(remaining)[:5]}"
    rows = {r: records.record(r) or {} for _, r in ids}
    for run_id, record in rows.items():
        assert run_id in killed or record.get("outcome") == "succeeded", record
    ticket = {r: int(rec["extra"]["queue_ticket"]) for r, rec in rows.items()}
    given = sorted((str(rec["started_at"]), r) for r, rec in rows.items() if rec.get("started_at"))
    assert [ticket[r] for _, r in given] == sorted(ticket[r] for _, r in given), "slots given out of turn"
    with open(log, encoding="utf-8") as handle:
        worked = {line.strip() for line in handle if line.strip()}
    assert set(ticket) - worked <= set(killed), "a run not killed never started its work"
    _, _, listed = here.li("queue", "list")
    row = listed["data"]["queues"][0]
    assert (row["running"], row["waiting"]) == (0, 0), row
    assert peak[1] > 10
