"""How soon `li job wait` answers after a run's end is recorded, with a poll interval far longer.

    python benchmarks/bench_wakeup.py [--repeat 15] [--poll 5] [--store postgresql://…]
                                      [--rev REV | --li /abs/li] [--quick]

Each sample: a detached `sh` run that spins until a go-file appears; `li job wait <id>
--poll-interval P --max-wait 60 --machine` is started and, once it holds its inotify descriptor
(it is then waiting, not starting up), the go-file is created; the run's runner records the end.
Latency = the moment the wait's process was reaped minus the moment this script's own inotify
watch on the run folder saw record.json renamed into it (the end's publication; the record's
mtime would be earlier by the runner's fsync). Without a wake-up it would be up to P seconds. Where the wait never holds an
inotify descriptor (no inotify), the go-file is created after 3 s and the figure shows the poll.
With `--store postgresql://…` the moment the end is recorded is when this script, LISTENing on
the channel the store NOTIFYs in the end's own transaction, receives that notification (so no
earlier than the commit), and the wait is ready once it holds its own LISTEN.
JSON: build/bench/wakeup.json.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import select
import statistics
import struct
import subprocess
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as common  # noqa: E402


class RecordWatch:
    """A thread that notes when record.json is renamed into a run folder (IN_MOVED_TO)."""

    def __init__(self, folder: str) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, os.fsencode(folder), 0x80) < 0:
            raise OSError(ctypes.get_errno(), "inotify")
        self.seen: float | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while self.seen is None:
            if not select.select([self.fd], [], [], 120)[0]:
                return
            data, offset = os.read(self.fd, 65536), 0
            while offset + 16 <= len(data):
                _wd, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16: offset + 16 + length].rstrip(b"\0")
                offset += 16 + length
                if mask & 0x80 and name == b"record.json":
                    self.seen = time.time()
                    return

    def close(self) -> float | None:
        self.thread.join(5)
        os.close(self.fd)
        return self.seen


class NotifyWatch:
    """On a PostgreSQL store: a thread that LISTENs as `li job wait` does and notes when the
    notification of the run's end (a write whose record has `finished_at`) arrives."""

    def __init__(self, dsn: str, run_id: str) -> None:
        import psycopg

        self.conn = psycopg.connect(dsn, autocommit=True)
        self.conn.execute("LISTEN lionrun_runs")
        self.look = psycopg.connect(dsn, autocommit=True)
        self.run_id = run_id
        self.seen: float | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for note in self.conn.notifies(timeout=120):
            at = time.time()
            if note.payload != self.run_id:
                continue
            row = self.look.execute("SELECT record FROM runs WHERE run_id = %s", (self.run_id,)).fetchone()
            if row and json.loads(row[0]).get("finished_at"):
                self.seen = at
                return

    def close(self) -> float | None:
        self.thread.join(5)
        self.conn.close()
        self.look.close()
        return self.seen


def listening(dsn: str) -> int:
    """How many sessions of the database are LISTENing (the bench's own watch is one)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %%' "
                           "AND datname = current_database()").fetchone()
    return int(row[0]) if row else 0


def one(li: str, env: dict[str, str], home: str, poll: float, n: int) -> dict[str, Any]:
    """One sample: submit a run that spins until its go-file, start the wait, let the run end."""
    # beside the store, not in it: the store is hidden from the run's work (its confinement)
    go = os.path.join(os.path.dirname(home), f"go-{n}")
    submitted = subprocess.run([li, "agent", "--detach", "--machine", "sh",
                                f"while [ ! -e {go} ]; do sleep 0.02; done"],
                               capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, check=False)
    run_id = json.loads(submitted.stdout)["data"]["run_id"]
    dsn = env.get("LI_STORE")
    if dsn:  # a shared store: the end is published by its NOTIFY; the wait is ready once it LISTENs
        notified = NotifyWatch(dsn, run_id)
        others = listening(dsn)
        ready: Any = lambda pid: listening(dsn) > others  # noqa: E731
    else:  # the filesystem store: the end is the rename of record.json; the wait holds an inotify fd
        ready = common.watching
    wait = subprocess.Popen([li, "job", "wait", run_id, "--poll-interval", str(poll), "--max-wait", "60",
                             "--machine"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 3.0
    watched = False
    while time.monotonic() < deadline and wait.poll() is None:
        if ready(wait.pid):
            watched = True
            break
        time.sleep(0.005)
    if not dsn:
        renamed = RecordWatch(os.path.join(home, "runs", run_id))
    with open(go, "w"):
        pass
    out, _ = wait.communicate(timeout=120)
    returned = time.time()
    if dsn:
        recorded = notified.close()
    else:
        recorded = renamed.close() or os.stat(os.path.join(home, "runs", run_id, "record.json")).st_mtime
    data = json.loads(out)["data"]
    latency = None if recorded is None else round((returned - recorded) * 1000, 1)
    return {"run_id": run_id, "latency_ms": latency, "watched": watched, "all_terminal": data["all_terminal"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15, help="samples (default 15; --quick: 2)")
    parser.add_argument("--poll", type=float, default=5.0, help="the wait's --poll-interval (default 5)")
    parser.add_argument("--store", default="", help="a postgresql:// store (schema made here) instead of the "
                        "filesystem one: the end's NOTIFY is the moment it is recorded")
    common.add_target_arguments(parser)
    args = parser.parse_args(argv)
    repeat = 2 if args.quick else args.repeat
    root = common.temp_root("li-bench-wakeup-")
    try:
        target = common.resolve_target(args, root)
        facts = common.machine_facts()
        home = os.path.join(root, "home")
        os.makedirs(home, mode=0o700)
        env = common.clean_env(home)
        if args.store:
            env["LI_STORE"] = args.store
            subprocess.run([target.li, "store", "init", "--machine"], env=env, capture_output=True,
                           stdin=subprocess.DEVNULL, check=True)
        samples = [one(target.li, env, home, args.poll, n) for n in range(repeat)]
    finally:
        common.remove(root)
    latencies = [s["latency_ms"] for s in samples if s["latency_ms"] is not None]
    figures = {"median_ms": statistics.median(latencies), "min_ms": min(latencies), "max_ms": max(latencies)}
    payload = {"benchmark": "wakeup", "store": "postgresql" if args.store else "filesystem", "li": target.li, "measured": target.label, "commit": target.commit,
               "poll_interval": args.poll, "repeat": repeat, "quick": args.quick, "machine": facts,
               "samples": samples, **figures}
    path = common.write_json(args.out, "wakeup", payload)
    print(f"{target.label}; {payload['store']} store; `li job wait --poll-interval {args.poll:g}`; load {facts['loadavg']} "
          f"on {facts['cpus']} CPUs\n")
    print(common.md_table(["end recorded → wait answered", "samples", "median ms", "min ms", "max ms", "watched"],
                          [["latency", str(repeat), f"{figures['median_ms']:.0f}", f"{figures['min_ms']:.0f}",
                            f"{figures['max_ms']:.0f}", f"{sum(s['watched'] for s in samples)}/{repeat}"]]))
    print(f"JSON: {path}")
    if args.quick and not all(s["all_terminal"] for s in samples):
        print("quick check: a wait did not see its run end", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
