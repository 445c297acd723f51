"""`li job status` on the PostgreSQL store beside the filesystem store, paired in one run.

Each round runs, in alternating order, one `li job status RUN --machine` on a filesystem store and
one on a PostgreSQL database (each holding one ended run), as children reaped with `os.wait4`:
wall time around spawn and reap, CPU time (user + sys) of the whole child. The figures are the
medians over the rounds and the PostgreSQL/filesystem ratio of the medians.

    python benchmarks/bench_store_read.py --store postgresql://user@host:port/db [--rounds 30]
                                          [--li /abs/path/to/li] [--out build/bench/store_read.json]

The database named must exist; a schema is made in it (`li store init`). Stdlib only; the `li`
measured is the one beside this interpreter unless `--li` says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def li_default() -> str:
    return os.path.join(os.path.dirname(sys.executable), "li")


def call(li: str, argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout) of one li call."""
    with tempfile.TemporaryFile() as out:
        began = time.monotonic()
        proc = subprocess.Popen([li, *argv], env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    return wall, usage.ru_utime + usage.ru_stime, text


def one_run(li: str, env: dict[str, str]) -> str:
    _, _, text = call(li, ["agent", "sh", "true", "--machine"], env)
    run_id = json.loads(text)["data"]["run_id"]
    call(li, ["job", "wait", run_id, "--max-wait", "60", "--machine"], env)
    return str(run_id)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=os.environ.get("LI_TEST_POSTGRES", ""),
                        help="postgresql://… of an existing database (default: $LI_TEST_POSTGRES)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--li", default=li_default())
    parser.add_argument("--out", default="build/bench/store_read.json")
    parser.add_argument("--quick", action="store_true", help="3 rounds: a smoke run")
    parser.add_argument("--psycopg", action="store_true",
                        help="PostgreSQL reads through psycopg, not libpq (LI_STORE_LEAN=0): the cost before issue 40")
    args = parser.parse_args()
    if not args.store:
        parser.error("--store postgresql://… (or LI_TEST_POSTGRES) is needed")
    rounds = 3 if args.quick else args.rounds
    base = {k: v for k, v in os.environ.items() if not k.startswith("LI_")}
    with tempfile.TemporaryDirectory() as top:
        fs_env = {**base, "LI_HOME": os.path.join(top, "fs")}
        pg_env = {**base, "LI_HOME": os.path.join(top, "pg"), "LI_STORE": args.store}
        if args.psycopg:
            pg_env["LI_STORE_LEAN"] = "0"
        call(args.li, ["store", "init", "--machine"], pg_env)
        stores = {"filesystem": (fs_env, one_run(args.li, fs_env)), "postgresql": (pg_env, one_run(args.li, pg_env))}
        samples: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in stores}
        for index in range(rounds):
            order = list(stores) if index % 2 == 0 else list(reversed(stores))
            for name in order:
                env, run_id = stores[name]
                wall, cpu, text = call(args.li, ["job", "status", run_id, "--machine"], env)
                assert json.loads(text)["ok"], text
                samples[name]["wall"].append(wall)
                samples[name]["cpu"].append(cpu)
    medians = {name: {key: statistics.median(values) for key, values in figures.items()}
               for name, figures in samples.items()}
    ratio = {key: medians["postgresql"][key] / medians["filesystem"][key] for key in ("wall", "cpu")}
    print("| store | status wall (median ms) | status CPU (median ms) |\n| --- | --- | --- |")
    for name, figures in medians.items():
        print(f"| {name} | {figures['wall'] * 1000:.0f} | {figures['cpu'] * 1000:.0f} |")
    print(f"| postgresql / filesystem | {ratio['wall']:.2f}x | {ratio['cpu']:.2f}x |")
    print(f"({rounds} paired rounds, {args.li}{', reads through psycopg' if args.psycopg else ''})")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump({"rounds": rounds, "li": args.li, "psycopg": args.psycopg, "medians": medians, "ratio": ratio, "samples": samples},
                  handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
