"""Load on one PostgreSQL store shared by two hosts (this one and a second in its own mount and PID
namespaces, tests/hosts.py): 200 runs submitted from both, 8 readers on each host reading status,
list and wait, runners SIGKILLed at random from the host that owns them.

Proven: zero lost (every handle is listed, from both hosts, and ends), zero false terminal (no
read ever saw a run ended while its work was alive; a run not killed ends `succeeded` by its own
runner, never reaped), exactly one reap per orphan (every write to the `runs` table is logged by a
trigger this test installs, so a second end or a lost update would show), and no run is reaped
from the wrong host (the reap's evidence names its observer, which must be the run's own host).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.hosts import OtherHost
from tests.support import REPO, li_bin

RUNS = int(os.environ.get("LI_LOAD_RUNS", "200"))  # 100 from each host (fewer only to measure by hand)
SUBMITTERS = 4  # per host
READERS = 8  # per host
GATED = 0.4  # the share of runs whose work waits for the gate (the others end at once)
# Of a host's gated runs: the whole session SIGKILLed, the runner alone SIGKILLed (its work
# lives on a while, then is killed too), or left alone to end when the gate opens.
FATES = {"session": 0.5, "runner": 0.25, "none": 0.25}
PAUSE = (1.0, 4.0)  # seconds a reader rests between reads
QUICK = 'echo "$LI_RUN_ID" > "$LI_ARTIFACTS_DIR/id.txt"'

AUDIT = """
DROP TABLE IF EXISTS load_audit;
CREATE TABLE load_audit (
    seq bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp(),
    run_id text NOT NULL, generation integer NOT NULL, record text);
CREATE OR REPLACE FUNCTION load_audit_runs() RETURNS trigger AS $$
BEGIN
    INSERT INTO load_audit (run_id, generation, record) VALUES (NEW.run_id, NEW.generation, NEW.record);
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER load_audit_runs AFTER INSERT OR UPDATE ON runs FOR EACH ROW EXECUTE FUNCTION load_audit_runs();
"""


@dataclass
class Host:
    name: str
    machine_id: str
    env: dict[str, str]
    wrap: Callable[[list[str]], list[str]]

    def li(self, *argv: str, timeout: float = 120) -> tuple[float, float, dict[str, Any]]:
        """(sent, answered, envelope) of `li ARGV --machine` run on this host."""
        sent = time.time()
        done = subprocess.run(self.wrap([li_bin(), *argv, "--machine"]), env=self.env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=timeout)
        answered = time.time()
        try:
            envelope = json.loads(done.stdout)
        except ValueError as exc:
            raise AssertionError(f"{self.name}: li {' '.join(argv)} gave no envelope "
                                 f"(exit {done.returncode}): {done.stdout!r} {done.stderr!r}") from exc
        return sent, answered, envelope

    def kill(self, what: str, run_id: str, incarnation: dict[str, Any]) -> str:
        """SIGKILL the run's session (or its runner alone) from inside this host; `alive` says
        instead which of the run's processes live there (what it prints)."""
        done = subprocess.run(self.wrap([sys.executable, "-m", "tests.load.kill_in_host", what, run_id,
                                         json.dumps(incarnation)]),
                              env={**self.env, "PYTHONPATH": REPO}, cwd=REPO, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=60)
        assert done.returncode == 0, (self.name, what, run_id, done.stderr)
        return done.stdout


@dataclass
class Observation:
    host: str
    verb: str
    sent: float
    answered: float
    rows: list[tuple[str, bool | None, str | None]]  # (run_id, terminal, outcome)


@dataclass
class Ledger:
    """What every thread reports to the test, under one lock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    owner: dict[str, str] = field(default_factory=dict)  # run id -> the host that submitted it
    fate: dict[str, str] = field(default_factory=dict)  # quick | session | runner | none
    killed_at: dict[str, float] = field(default_factory=dict)  # when the work's SIGKILL was first sent
    runner_killed_at: dict[str, float] = field(default_factory=dict)
    observations: list[Observation] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def fail(self, message: str) -> None:
        with self.lock:
            self.errors.append(message)

    def ids(self) -> list[str]:
        with self.lock:
            return list(self.owner)


class Records:
    """The store's rows read directly (the test's own connection), to find a run's incarnation."""

    def __init__(self, dsn: str) -> None:
        import psycopg

        self._conn = psycopg.connect(dsn, autocommit=True)
        self._lock = threading.Lock()

    def record(self, run_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute("SELECT record FROM runs WHERE run_id = %s", (run_id,)).fetchone()
        return None if row is None or row[0] is None else json.loads(row[0])

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def close(self) -> None:
        self._conn.close()


def guarded(ledger: Ledger, body: Callable[[], None]) -> threading.Thread:
    def run() -> None:
        try:
            body()
        except BaseException as exc:  # noqa: BLE001 - reported to the test thread, which fails
            ledger.fail(f"{type(exc).__name__}: {exc}")
    return threading.Thread(target=run)


def reader(host: Host, ledger: Ledger, seed: int) -> Callable[[], None]:
    """Status of one run, the whole list, or a wait (--max-wait 0) over a sample, in a loop."""
    rng = random.Random(seed)

    def body() -> None:
        while not ledger.stop.is_set():
            ids = ledger.ids()
            if not ids:
                time.sleep(0.05)
                continue
            turn = rng.choice(("status", "list", "wait"))
            if turn == "status":
                argv: tuple[str, ...] = ("job", "status", rng.choice(ids))
            elif turn == "list":
                argv = ("job", "list", "--limit", "1000")
            else:
                argv = ("job", "wait", *rng.sample(ids, min(20, len(ids))), "--max-wait", "0")
            sent, answered, envelope = host.li(*argv)
            if not envelope.get("ok"):
                ledger.fail(f"{host.name}: {' '.join(argv[:2])} answered {envelope.get('error')}")
                continue
            data = envelope["data"]
            rows = [data] if turn == "status" else data["runs"]
            for row in rows:
                if row.get("error") is not None:
                    ledger.fail(f"{host.name}: {turn} row error {row}")
            with ledger.lock:
                ledger.observations.append(Observation(host.name, turn, sent, answered,
                                                       [(r["run_id"], r["terminal"], r["outcome"]) for r in rows]))
            # A read costs about 0.3 s of CPU on this store: sixteen readers unpaced would starve
            # the submitters and runners of two cores. Paced, each host still lists every second or two.
            time.sleep(rng.uniform(PAUSE[0], PAUSE[1]))
    return body


def submitter(host: Host, other: Host, ledger: Ledger, records: Records, plan: list[str], gate: str,
              killers: list[threading.Thread], seed: int) -> Callable[[], None]:
    rng = random.Random(seed)
    # the work says it runs (a file named by its run id beside the gate) before it waits for the gate
    gated = (f'touch "{gate}.$LI_RUN_ID"; i=0; while [ ! -e {gate} ] && [ $i -lt 900 ]; do sleep 1; '
             f"i=$((i+1)); done; " + QUICK)

    def body() -> None:
        for fate in plan:
            _, _, envelope = host.li("agent", "--detach", "sh", QUICK if fate == "quick" else gated)
            assert envelope["ok"], (host.name, envelope)
            handle = envelope["data"]
            assert handle["terminal"] is False and handle["outcome"] is None, handle
            run_id = handle["run_id"]
            with ledger.lock:
                ledger.owner[run_id] = host.name
                ledger.fate[run_id] = fate
            if fate in ("session", "runner"):
                thread = guarded(ledger, killer(host, other, ledger, records, run_id, fate, rng.uniform(0.0, 2.0),
                                                rng.uniform(0.5, 1.5), f"{gate}.{run_id}"))
                killers.append(thread)
                thread.start()
    return body


def observe(host: Host, ledger: Ledger, run_id: str) -> dict[str, Any]:
    """One `li job status` of the run on `host`, recorded as the readers' are."""
    sent, answered, envelope = host.li("job", "status", run_id)
    assert envelope["ok"], (host.name, envelope)
    data = envelope["data"]
    with ledger.lock:
        ledger.observations.append(Observation(host.name, "status", sent, answered,
                                               [(run_id, data["terminal"], data["outcome"])]))
    return data  # type: ignore[no-any-return]


def killer(host: Host, other: Host, ledger: Ledger, records: Records, run_id: str, fate: str, after: float,
           work_lives: float, working: str) -> Callable[[], None]:
    """SIGKILL the run from its own host; with the runner alone killed first (once the work said
    it runs: the file `working`), a read at home while its work still lives must not end it. After
    the kill, the other host reads the orphan too."""
    def body() -> None:
        deadline = time.monotonic() + 90
        while True:
            record = records.record(run_id)
            if record and record.get("spawn_state") == "started" and record.get("incarnation"):
                break
            assert time.monotonic() < deadline, f"run {run_id} never started: {record}"
            time.sleep(0.05)
        assert record["incarnation"]["host_id"] == host.machine_id, (host.name, record["incarnation"])
        time.sleep(after)
        if fate == "runner":
            # killed before its work started, a runner leaves nothing alive to outlive it (a fork of
            # its own, such as the confinement's probe, is not the work): wait for the work's word
            while not os.path.exists(working):
                assert time.monotonic() < deadline, f"run {run_id}: its work never said it runs"
                time.sleep(0.05)
            with ledger.lock:
                ledger.runner_killed_at[run_id] = time.time()
            host.kill("runner", run_id, record["incarnation"])
            time.sleep(work_lives)  # the work is alive, its runner gone: no read may end the run
            seen = observe(host, ledger, run_id)
            if seen["terminal"] is not False:  # name what was reaped, and what /proc showed of the run then
                ended = records.record(run_id) or {}
                raise AssertionError(f"{run_id} on {host.name}: ended while its work lived: {seen['status']} "
                                     f"{seen['reason_code']}, evidence {ended.get('terminal_evidence')}; "
                                     f"on its host now: {host.kill('alive', run_id, record['incarnation'])}")
        with ledger.lock:
            ledger.killed_at[run_id] = time.time()
        host.kill("session", run_id, record["incarnation"])
        observe(other, ledger, run_id)  # never reaped from there (the audit below proves it)
    return body


def plans(rng: random.Random) -> list[list[str]]:
    """Each submitter's fates, in order: quick, or a gated run's fate."""
    per_host = RUNS // 2
    gated = round(per_host * GATED)
    fates = ["quick"] * (per_host - gated)
    for fate, share in FATES.items():
        fates += [fate] * round(gated * share)
    fates += ["none"] * (per_host - len(fates))
    rng.shuffle(fates)
    return [fates[i::SUBMITTERS] for i in range(SUBMITTERS)]


def report(ledger: Ledger, records: Records, began: float) -> None:
    """Progress on stderr every 10 s (seen with -s): how far a slow run got."""
    while not ledger.stop.wait(10):
        with ledger.lock:
            counts = (len(ledger.owner), len(ledger.killed_at), len(ledger.observations), len(ledger.errors))
        ended = records.query("SELECT count(*) FROM runs WHERE (record::jsonb ->> 'finished_at') IS NOT NULL")[0][0]
        print(f"  {time.monotonic() - began:5.0f}s: {counts[0]} submitted, {counts[1]} killed, {ended} ended, "
              f"{counts[2]} reads, {counts[3]} errors, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)


@pytest.fixture
def two_hosts(pg_dsn: str, tmp_path: Any) -> Iterator[tuple[Host, Host, Records]]:
    here_env = {**os.environ, "LI_HOME": str(tmp_path / "home-a"), "LI_STORE": pg_dsn}
    here_env.pop("LI_NOTIFY_COMMAND", None)
    done = subprocess.run([li_bin(), "store", "init", "--machine"], env=here_env, capture_output=True, text=True,
                          timeout=60)
    assert json.loads(done.stdout)["ok"], done.stdout
    records = Records(pg_dsn)
    records.query("SELECT 1")
    with records._lock:
        records._conn.execute(AUDIT)
    other = OtherHost(str(tmp_path))
    with open("/etc/machine-id", encoding="ascii") as handle:
        mine = handle.read().strip()
    here = Host("A", mine, here_env, list)
    there = Host("B", other.machine_id, {**here_env, "LI_HOME": str(tmp_path / "home-b")}, other.argv)
    try:
        yield here, there, records
    finally:
        other.stop()
        with records._lock:
            records._conn.execute("DROP TABLE IF EXISTS load_audit")
        records.close()


@pytest.mark.slow
@pytest.mark.reaper
@pytest.mark.timeout(900)  # about 4 min on 2 cores: some 360 CPU-s of li and runner processes
def test_two_hundred_runs_from_two_hosts_with_random_sigkills_lose_nothing_and_reap_each_orphan_once_at_home(
        two_hosts: tuple[Host, Host, Records], tmp_path: Any) -> None:
    here, there, records = two_hosts
    hosts = {"A": here, "B": there}
    seed = int(os.environ.get("LI_LOAD_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    ledger = Ledger()
    gate = str(tmp_path / "gate")
    began = time.monotonic()

    readers = [guarded(ledger, reader(host, ledger, rng.randrange(1 << 30)))
               for host in (here, there) for _ in range(READERS)]
    killers: list[threading.Thread] = []
    writers = [guarded(ledger, submitter(host, other, ledger, records, plan, gate, killers, rng.randrange(1 << 30)))
               for host, other in ((here, there), (there, here)) for plan in plans(rng)]
    for thread in readers + writers:
        thread.start()
    progress = threading.Thread(target=report, args=(ledger, records, began), daemon=True)
    progress.start()
    try:
        for thread in writers:
            thread.join()
        submitted = time.monotonic() - began
        for thread in list(killers):
            thread.join()
        with open(gate, "w", encoding="ascii"):
            pass  # the gated runs left alone end now, by their own runner
        ids = ledger.ids()
        assert len(ids) == RUNS == len(set(ids)), f"seed {seed}: {len(ids)} handles; {ledger.errors[:5]}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not ledger.errors:
            open_runs = records.query("SELECT count(*) FROM runs WHERE record IS NULL OR "
                                      "(record::jsonb ->> 'finished_at') IS NULL")[0][0]
            if open_runs == 0:
                break
            time.sleep(0.2)
        ended = time.monotonic() - began
    finally:
        with open(gate, "a", encoding="ascii"):
            pass  # on a failure too: no gated work outlives the test by more than a second
        ledger.stop.set()
        for thread in readers:
            thread.join()
    assert ledger.errors == [], f"seed {seed}: {ledger.errors[:10]}"
    print(f"seed {seed}: submitted in {submitted:.1f}s, all ended at {ended:.1f}s, "
          f"{len(ledger.observations)} reads, {len(ledger.killed_at)} SIGKILLed")

    # Zero lost: every handle is listed from both hosts with its own host, and nothing else is.
    for host in hosts.values():
        _, _, envelope = host.li("job", "list", "--limit", "1000")
        rows = {r["run_id"]: r for r in envelope["data"]["runs"]}
        assert sorted(rows) == sorted(ids), f"seed {seed}: {host.name} lists other runs"
        assert all(rows[i]["host"] == hosts[ledger.owner[i]].machine_id for i in ids)
        assert all(rows[i]["terminal"] is True for i in ids), [i for i in ids if not rows[i]["terminal"]][:5]

    audit = records.query("SELECT run_id, generation, record, extract(epoch FROM at) FROM load_audit ORDER BY seq")
    writes: dict[str, list[tuple[int, dict[str, Any], float]]] = {}
    for run_id, generation, record, at in audit:
        if record is not None:
            writes.setdefault(run_id, []).append((generation, json.loads(record), float(at)))
    assert sorted(writes) == sorted(ids)
    ends: dict[str, tuple[dict[str, Any], float]] = {}
    for run_id, history in writes.items():
        generations = [g for g, _, _ in history]
        assert generations == list(range(1, len(history) + 1)), (run_id, generations)  # no lost update
        endings = [(record, at) for (_, record, at), before in zip(history, [None, *history], strict=False)
                   if record.get("finished_at") and not (before and before[1].get("finished_at"))]
        assert len(endings) == 1, (run_id, [r.get("terminal_source") for r, _ in endings])  # one end, once
        ends[run_id] = endings[0]

    killed = [i for i in ids if ledger.fate[i] in ("session", "runner")]
    assert killed and len(killed) == len(ledger.killed_at)
    for run_id in ids:
        record, at = ends[run_id]
        owner = hosts[ledger.owner[run_id]]
        if run_id in ledger.killed_at:
            # Exactly one reap, after the work was killed, by a reader on the run's own host.
            evidence = record["terminal_evidence"]
            assert record["terminal_source"] == "reaper" and record["outcome"] == "indeterminate", (run_id, record)
            assert at >= ledger.killed_at[run_id], (run_id, "reaped before its work was killed")
            assert evidence["recorded"]["host_id"] == owner.machine_id, (run_id, evidence)
            assert evidence["observer"]["host_id"] == owner.machine_id, (run_id, "reaped from the wrong host")
        else:
            assert (record["terminal_source"], record["outcome"]) == ("runner", "succeeded"), (run_id, record)

    # Zero false terminal in what the readers saw: never an end before the work's kill, and a run
    # not killed never seen with any outcome but success.
    seen_terminal = 0
    for observation in ledger.observations:
        for run_id, terminal, outcome in observation.rows:
            if not terminal:
                continue
            seen_terminal += 1
            if run_id in ledger.killed_at:
                assert observation.answered >= ledger.killed_at[run_id], (observation, "ended before its kill")
            else:
                assert outcome == "succeeded", (observation, run_id)
    assert seen_terminal > 0
    # The chances to go wrong were taken: the owner's readers read a run whose runner was dead and
    # work alive (and did not end it), the other host's readers read orphans before their reap.
    ended_at = {run_id: at for run_id, (_, at) in ends.items()}
    orphan_reads = runner_dead_reads = 0
    for observation in ledger.observations:
        for run_id, terminal, _ in observation.rows:
            if run_id not in ledger.killed_at or terminal:
                continue
            own = observation.host == ledger.owner[run_id]
            if own and ledger.runner_killed_at.get(run_id, float("inf")) <= observation.sent \
                    and observation.answered <= ledger.killed_at[run_id]:
                runner_dead_reads += 1
            if not own and ledger.killed_at[run_id] <= observation.sent and observation.answered <= ended_at[run_id]:
                orphan_reads += 1
    print(f"seed {seed}: {runner_dead_reads} reads at home of runs with a dead runner and live work, "
          f"{orphan_reads} reads of orphans by the other host before their reap")
    assert runner_dead_reads > 0 and orphan_reads > 0, (runner_dead_reads, orphan_reads)
    for name in hosts:  # each host's readers read status, list and wait
        assert {o.verb for o in ledger.observations if o.host == name} == {"status", "list", "wait"}
