"""Scale: `job list` over growing stores, `job wait` over many ids, submit throughput.

    python benchmarks/bench_scale.py [--list-sizes 100,10000,100000] [--wait-sizes 1,1000,10000]
                                     [--submitters 8] [--submits 96] [--repeat 5]
                                     [--store postgresql://…] [--rev REV | --li /abs/li] [--quick]

One synthetic store (finished runs written directly) grows to each list size in turn;
`li job list --machine` (its default limit) is timed at each size, `li job wait <ids>
--max-wait 0 --machine` over the newest N ids once the store holds enough of them. Ids go on
the command line; when they do not fit this system's exec limit the ids are given on stdin
(`-`) instead and the output says so. Throughput: `--submitters` threads each submitting
`li agent --detach --machine sh true` until `--submits` in all; runs/s over the wall time
(their runners run meanwhile, as they would). `job status <newest id> --machine` is timed at
each list size too. CPU and wall per call, min/median/max.

`--store postgresql://…/db` measures a PostgreSQL store beside the filesystem one, in the same
run: a scratch database `lionrun_bench_<pid>` is made on that server (the URL's own database is
only connected to), `li store init` makes its schema, it holds the very same runs (each record's
text inserted as `li store copy` keeps it), every call is timed on both stores in turn, and the
scratch database is dropped at the end. A regular install (`--rev`) then includes the
`[postgresql]` extra.
`--unknown-ids N` times `li job wait - --max-wait 0 --machine` over 1 real run and N well-formed
ids of no run on stdin (100,001 ids); with `--peer /abs/path/to/other/li` the same call of
that li is timed right after each of this one's, on the same store, so the two are side by side.

JSON: build/bench/scale.json (the PostgreSQL figures under `postgresql`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as common  # noqa: E402


def sizes(text: str) -> list[int]:
    return sorted(int(part.replace("_", "")) for part in text.split(",") if part.strip())


def grow(home: str, have: int, want: int) -> list[str]:
    """Adds finished runs until the store holds `want`; returns the new ids (oldest first)."""
    from tools.synthetic import finished_runs

    if want <= have:
        return []
    started = time.perf_counter()
    ids = finished_runs(home, want - have, datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=have))
    print(f"  store grown to {want:,} runs in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return ids


class SharedStore:
    """A scratch database on the server `--store` names: made, seeded with the filesystem store's
    runs, dropped at the end."""

    def __init__(self, server: str, li: str, root: str) -> None:
        from urllib.parse import urlsplit

        import psycopg

        if not server.startswith(("postgresql://", "postgres://")):
            raise SystemExit(f"--store must be a postgresql:// URL: {server}")
        self.server = server
        self.name = f"lionrun_bench_{os.getpid()}"
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}"')
            conn.execute(f'CREATE DATABASE "{self.name}"')
        self.dsn = urlsplit(server)._replace(path=f"/{self.name}").geturl()
        self.home = os.path.join(root, "pg-home")
        os.makedirs(self.home, mode=0o700)
        self.env = {**common.clean_env(self.home), "LI_STORE": self.dsn}
        problem = common.envelope_problem(common.spawn([li, "store", "init", "--machine"], self.env), "schema_version")
        if problem:
            self.drop()
            raise SystemExit(f"li store init on the scratch database failed: {problem}")
        self.conn = psycopg.connect(self.dsn, autocommit=True)

    def seed(self, home: str, ids: list[str]) -> None:
        """The same runs in the database: each record's text as is (its generation kept)."""
        import json

        started = time.perf_counter()
        with self.conn.cursor() as cur, cur.copy("COPY runs (run_id, host_id, generation, record) FROM STDIN") as copy:
            for run_id in ids:
                with open(os.path.join(home, "runs", run_id, "record.json"), encoding="utf-8") as handle:
                    text = handle.read()
                copy.write_row((run_id, "bench", json.loads(text)["generation"], text))
        print(f"  {len(ids):,} runs copied into {self.name} in {time.perf_counter() - started:.1f} s", file=sys.stderr)

    def drop(self) -> None:
        import psycopg

        if getattr(self, "conn", None) is not None:
            self.conn.close()
        with psycopg.connect(self.server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def timed(argv: list[str], env: dict[str, str], repeat: int, stdin: str | None = None) -> dict[str, Any]:
    samples = []
    warm_up = repeat > 1  # --quick (1): no warm-up, it only checks the answer
    for index in range(0 if warm_up else 1, repeat + 1):  # call 0 warms the page cache up, not counted
        sample = common.spawn(argv, env, stdin)
        problem = common.envelope_problem(sample)
        if problem:
            return {"ok": False, "problem": problem}
        if index:
            samples.append(sample)

    def three(values: list[float]) -> dict[str, float]:
        return {"min": round(min(values) * 1000, 1), "median": round(statistics.median(values) * 1000, 1),
                "max": round(max(values) * 1000, 1)}

    return {"ok": True, "samples": len(samples), "cpu_ms": three([s.cpu for s in samples]),
            "wall_ms": three([s.wall for s in samples]),
            "maxrss_mb_median": round(statistics.median(s.maxrss_kb for s in samples) / 1024, 1)}


def wait_argv(li: str, ids: list[str], env: dict[str, str]) -> tuple[list[str], str | None, str]:
    """The wait call over ids, on argv when it fits the exec limit, else on stdin (said)."""
    argv = [li, "job", "wait", *ids, "--max-wait", "0", "--machine"]
    size = sum(len(part) + 1 + 8 for part in argv) + sum(len(k) + len(v) + 2 + 8 for k, v in env.items())
    limit = os.sysconf("SC_ARG_MAX")
    if size < limit - 4096:
        return argv, None, f"ids on argv ({size:,} of {limit:,} bytes)"
    return ([li, "job", "wait", "-", "--max-wait", "0", "--machine"], "\n".join(ids) + "\n",
            f"ARGV LIMIT: {len(ids):,} ids need {size:,} bytes > {limit:,}; ids given on stdin (`-`)")


def unknown_ids_wait(li: str, peer: str | None, root: str, unknown: int, repeat: int) -> dict[str, Any]:
    """`job wait -` over one real run and `unknown` well-formed ids of no run, li and peer in turn."""
    home = os.path.join(root, "unknown-ids")
    os.makedirs(home, mode=0o700)
    real = grow(home, 0, 1)
    ids = real + [f"20250101T000000-{index:06x}" for index in range(unknown)]
    env = common.clean_env(home)
    stdin = "\n".join(ids) + "\n"
    argv = {"li": [li, "job", "wait", "-", "--max-wait", "0", "--machine"]}
    if peer:
        argv["peer"] = [peer, *argv["li"][1:]]
    samples: dict[str, list[Any]] = {name: [] for name in argv}
    for index in range(repeat + (1 if repeat > 1 else 0)):  # one warm-up round when repeating
        for name, words in argv.items():
            sample = common.spawn(words, env, stdin)
            problem = common.envelope_problem(sample)
            if problem:
                return {"ok": False, "problem": f"{name}: {problem}"}
            if index or repeat == 1:
                samples[name].append(sample)

    def three(values: list[float]) -> dict[str, float]:
        return {"min": round(min(values) * 1000, 1), "median": round(statistics.median(values) * 1000, 1),
                "max": round(max(values) * 1000, 1)}

    out: dict[str, Any] = {"ok": True, "ids": len(ids)}
    for name, got in samples.items():
        out[name] = {"cpu_ms": three([s.cpu for s in got]), "wall_ms": three([s.wall for s in got])}
    if peer:
        ratios = [a.cpu / b.cpu for a, b in zip(samples["li"], samples["peer"], strict=True) if b.cpu > 0]
        out["cpu_ratio_to_peer_median"] = round(statistics.median(ratios), 2)
    return out


def throughput(li: str, home: str, submitters: int, submits: int, store: str = "") -> dict[str, Any]:
    env = {**common.clean_env(home), **({"LI_STORE": store} if store else {})}
    problems: list[str] = []
    pids: list[int] = []

    def one(_: int) -> None:
        sample = common.spawn([li, "agent", "--detach", "--machine", "sh", "true"], env)
        problem = common.envelope_problem(sample, "run_id")
        if problem:
            problems.append(problem)
        else:
            pid = common.envelope_data(sample).get("pid")
            if isinstance(pid, int):
                pids.append(pid)

    started = time.perf_counter()
    with ThreadPoolExecutor(submitters) as pool:
        list(pool.map(one, range(submits)))
    wall = time.perf_counter() - started
    left = common.wait_gone(pids, 120)  # their runners end before anything else is measured
    ok = submits - len(problems)
    return {"ok": not problems, "submitters": submitters, "submits": submits, "answered_ok": ok,
            "wall_s": round(wall, 2), "runs_per_s": round(ok / wall, 1),
            "problems": sorted(set(problems))[:5], "runners_still_alive_after_120s": len(left)}


def measure(li: str, list_sizes: list[int], wait_sizes: list[int], repeat: int,
            submitters: int, submits: int, root: str, shared: SharedStore | None = None) -> dict[str, Any]:
    """The filesystem store's figures; with `shared`, the same calls on it under `postgresql`."""
    home = os.path.join(root, "store")
    os.makedirs(home, mode=0o700)
    stores = {"filesystem": common.clean_env(home), **({"postgresql": shared.env} if shared else {})}
    figures: dict[str, dict[str, dict[str, Any]]] = {
        name: {"list": {}, "status": {}, "wait": {}} for name in stores}
    ids: list[str] = []
    pending_waits = list(wait_sizes)
    for size in sorted(set(list_sizes) | ({max(wait_sizes)} if wait_sizes else set())):
        new = grow(home, len(ids), size)
        ids += new
        if shared is not None:
            shared.seed(home, new)
        for name, env in stores.items():
            if size in list_sizes:
                got = figures[name]
                got["list"][str(size)] = timed([li, "job", "list", "--machine"], env, repeat)
                got["status"][str(size)] = timed([li, "job", "status", ids[-1], "--machine"], env, repeat)
                print(f"  {name}: list at {size:,}: {got['list'][str(size)]}\n"
                      f"  {name}: status at {size:,}: {got['status'][str(size)]}", file=sys.stderr)
        for count in [n for n in pending_waits if n <= len(ids)]:
            pending_waits.remove(count)
            for name, env in stores.items():
                argv, stdin, how = wait_argv(li, ids[-count:], env)
                figures[name]["wait"][str(count)] = {**timed(argv, env, repeat, stdin), "ids": how}
                print(f"  {name}: wait over {count:,}: {figures[name]['wait'][str(count)]}", file=sys.stderr)
    for name in stores:
        submit_home = os.path.join(root, f"submits-{name}")
        os.makedirs(submit_home, mode=0o700)
        store = shared.dsn if shared is not None and name == "postgresql" else ""
        figures[name]["throughput"] = throughput(li, submit_home, submitters, submits, store) if submits else None
    return {**figures["filesystem"], "postgresql": figures.get("postgresql")}


def cells(figures: dict[str, Any]) -> list[str]:
    if not figures.get("ok"):
        return ["—", "—", f"— ({figures.get('problem')})"]
    cpu, wall = figures["cpu_ms"], figures["wall_ms"]
    return [f"{cpu['median']:.0f} ({cpu['min']:.0f}–{cpu['max']:.0f})",
            f"{wall['median']:.0f} ({wall['min']:.0f}–{wall['max']:.0f})", f"{figures['maxrss_mb_median']:.0f}"]


def tables(result: dict[str, Any]) -> str:
    """One table, a row per call and store (the PostgreSQL row beside the filesystem one)."""
    stores = {"filesystem": result, **({"postgresql": result["postgresql"]} if result.get("postgresql") else {})}
    header = ["call", "store", "CPU ms median (min–max)", "wall ms median (min–max)", "max RSS MB"]
    calls = [("list", lambda n, f: f"`job list --machine` over {int(n):,} runs"),
             ("status", lambda n, f: f"`job status <newest> --machine` at {int(n):,} runs"),
             ("wait", lambda n, f: f"`job wait --max-wait 0 --machine` over {int(n):,} id{'s' if int(n) != 1 else ''}"
                                   f" ({f.get('ids')})")]
    rows = [[name(n, f), store, *cells(figures[part][n])]
            for part, name in calls for n, f in result[part].items()
            for store, figures in stores.items() if n in figures[part]]
    out = common.md_table(header, rows)
    for store, figures in stores.items():
        put = figures.get("throughput")
        if put:
            out += (f"\n\nsubmit throughput ({store}): {put['answered_ok']}/{put['submits']} "
                    f"`agent --detach --machine sh true` from {put['submitters']} concurrent submitters in "
                    f"{put['wall_s']} s = **{put['runs_per_s']} runs/s**")
            if put["problems"]:
                out += f" (not ok: {'; '.join(put['problems'])})"
    return out


def print_unknown_ids_wait(waited: dict[str, Any] | None) -> None:
    """The line of the wait over ids of no run, when it was measured."""
    if not waited or not waited.get("ok"):
        return
    line = (f"\n`job wait - --max-wait 0 --machine` over {waited['ids']:,} ids (1 run, the rest of none): "
            f"CPU median {waited['li']['cpu_ms']['median']:.0f} ms")
    if "peer" in waited:
        line += (f"; peer {waited['peer']['cpu_ms']['median']:.0f} ms; "
                 f"paired ratio {waited['cpu_ratio_to_peer_median']}×")
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list-sizes", default="100,10000,100000", help="store sizes for job list")
    parser.add_argument("--wait-sizes", default="1,1000,10000", help="id counts for job wait")
    parser.add_argument("--repeat", type=int, default=5, help="counted calls per figure (default 5)")
    parser.add_argument("--submitters", type=int, default=8, help="concurrent submitters (default 8)")
    parser.add_argument("--submits", type=int, default=96, help="submits in all (default 96; 0: skip)")
    parser.add_argument("--store", help="also measure a PostgreSQL store on this server (a postgresql:// URL; "
                                        "a scratch database is made there and dropped)")
    parser.add_argument("--unknown-ids", type=int, default=0,
                        help="also time job wait - over 1 real run and this many ids of no run (100000)")
    parser.add_argument("--peer", help="with --unknown-ids: another li (absolute path) timed side by side")
    common.add_target_arguments(parser)
    args = parser.parse_args(argv)
    if args.quick:
        list_sizes, wait_sizes, repeat, submits = [10, 50], [1, 20], 1, 8
    else:
        list_sizes, wait_sizes = sizes(args.list_sizes), sizes(args.wait_sizes)
        repeat, submits = args.repeat, args.submits
    root = common.temp_root("li-bench-scale-")
    try:
        target = common.resolve_target(args, root)
        facts = common.machine_facts()
        started = time.perf_counter()
        homes = os.path.join(root, "homes")
        os.makedirs(homes)
        shared = SharedStore(args.store, target.li, homes) if args.store else None
        try:
            result = measure(target.li, list_sizes, wait_sizes, repeat, args.submitters, submits, homes, shared)
        finally:
            if shared is not None:
                shared.drop()
        unknown = 100 if args.quick else args.unknown_ids
        if unknown:
            result["unknown_ids_wait"] = unknown_ids_wait(target.li, args.peer, homes, unknown, repeat)
            print(f"  wait over 1 run and {unknown:,} ids of none: {result['unknown_ids_wait']}", file=sys.stderr)
        elapsed = time.perf_counter() - started
        payload = {"benchmark": "scale", "li": target.li, "measured": target.label, "commit": target.commit,
                   "repeat": repeat, "quick": args.quick, "machine": facts, "load_after": os.getloadavg(),
                   "seconds": round(elapsed, 1), **result}
        path = common.write_json(args.out, "scale", payload)  # before the (slow) removal of a big store
        print(f"{target.label}; {repeat} counted calls per figure after one warm-up; "
              f"load {facts['loadavg']} on {facts['cpus']} CPUs\n")
        print(tables(result), flush=True)
        print_unknown_ids_wait(result.get("unknown_ids_wait"))
        print(f"\nJSON: {path}", flush=True)
    finally:
        print("  removing the synthetic stores ...", file=sys.stderr)
        common.remove(root)
    for store, figures in (("filesystem", result), ("postgresql", result.get("postgresql"))):
        if not figures:
            continue
        bad = [k for part in ("list", "status", "wait") for k, f in figures[part].items() if not f.get("ok")]
        put = figures.get("throughput")
        if store == "filesystem" and figures.get("unknown_ids_wait", {"ok": True}).get("ok") is False:
            bad.append("unknown_ids_wait")
        if args.quick and (bad or (put and not put["ok"])):
            print(f"quick check: not every call answered ok on the {store} store ({bad or put})", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
