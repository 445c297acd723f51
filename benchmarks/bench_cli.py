"""Per-call latency of `li --machine` against a bare interpreter start-up, with the targets beside it.

    .venv/bin/python benchmarks/bench_cli.py [--repeat 15] [--li /abs/path/to/li]

Every figure is the median wall time of `--repeat` runs of one subprocess, started the same way
as the baseline (`python -c pass` with this same interpreter). Stores are synthetic (finished
records written directly) in a temporary LI_HOME, removed afterwards. Nothing here is a test:
the figures depend on the machine; the ratios are what the targets speak about.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tools.synthetic import finished_runs  # noqa: E402


@dataclass
class Figure:
    name: str
    median: float
    ratio: float | None
    target: str
    met: bool | None
    note: str = ""


def li_path(given: str | None) -> str:
    if given:
        return given
    beside = os.path.join(os.path.dirname(sys.executable), "li")
    return beside if os.path.exists(beside) else shutil.which("li") or "li"


def timed(argv: Sequence[str], env: dict[str, str], repeat: int) -> tuple[float, str]:
    """Median seconds of `repeat` runs (after one warm-up), and the last stdout."""
    samples, out = [], ""
    for index in range(repeat + 1):
        start = time.perf_counter()
        done = subprocess.run(list(argv), env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, check=False)
        elapsed = time.perf_counter() - start
        out = done.stdout
        if index:
            samples.append(elapsed)
    return statistics.median(samples), out


def refused(stdout: str) -> str | None:
    """The refusal message when the envelope is `ok: false` (the figure is then not meaningful)."""
    import json

    try:
        envelope = json.loads(stdout)
    except ValueError:
        return f"no envelope: {stdout[:80]!r}"
    return None if envelope.get("ok") else f"{envelope['error']['kind']}: {envelope['error']['message']}"


def home_with(root: str, name: str, runs: int) -> tuple[str, list[str]]:
    home = os.path.join(root, name)
    os.makedirs(home)
    return home, finished_runs(home, runs)


def measure(li: str, repeat: int, root: str) -> tuple[list[Figure], float]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("LI_NOTIFY_COMMAND", None)
    bare, _ = timed([sys.executable, "-c", "pass"], env, repeat)
    print(f"bare `python -c pass`: {bare * 1000:.1f} ms (median of {repeat})", file=sys.stderr)
    one_home, one_ids = home_with(root, "one", 1)
    k_home, k_ids = home_with(root, "thousand", 1000)
    h_home, _ = home_with(root, "hundred", 100)
    print("populating 10,000 synthetic runs ...", file=sys.stderr)
    big_home, _ = home_with(root, "ten-thousand", 10_000)
    sub_home = os.path.join(root, "submit")
    os.makedirs(sub_home)

    def run(name: str, home: str, *argv: str) -> tuple[float, str | None]:
        seconds, out = timed([li, *argv, "--machine"], {**env, "LI_HOME": home}, repeat)
        print(f"  {name}: {seconds * 1000:.1f} ms", file=sys.stderr)
        return seconds, refused(out)

    results = {
        "handshake": run("handshake", one_home, "handshake"),
        "status": run("status", one_home, "job", "status", one_ids[0]),
        "wait1": run("wait 1", one_home, "job", "wait", one_ids[0], "--max-wait", "0"),
        "wait1000": run("wait 1000", k_home, "job", "wait", *k_ids, "--max-wait", "0"),
        "list100": run("list 100", h_home, "job", "list", "--limit", "20"),
        "list10000": run("list 10000", big_home, "job", "list", "--limit", "20"),
        "submit": run("submit", sub_home, "agent", "--detach", "sh", "true"),
    }
    return figures(results, bare), bare


def figures(results: dict[str, tuple[float, str | None]], bare: float) -> list[Figure]:
    def fig(key: str, name: str, target: str, limit: float | None, base: str | None = None) -> Figure:
        seconds, problem = results[key]
        ratio = seconds / bare
        versus = ratio if base is None else seconds / results[base][0]
        met = None if limit is None or problem else versus < limit
        note = f"refused — {problem}" if problem else (f"{versus:.2f}× {base}" if base else "")
        return Figure(name, seconds, ratio, target, met, note)

    return [
        fig("handshake", "handshake", "< 3× bare", 3.0),
        fig("status", "job status (1 run)", "< 15× bare", 15.0),
        fig("wait1", "job wait --max-wait 0 (1 id)", "< 15× bare", 15.0),
        fig("wait1000", "job wait --max-wait 0 (1,000 ids)", "< 3× wait (1 id)", 3.0, "wait1"),
        fig("list100", "job list --limit 20 (100 runs)", "—", None),
        fig("list10000", "job list --limit 20 (10,000 runs)", "< 1.5× list (100 runs)", 1.5, "list100"),
        fig("submit", "agent --detach sh true (submit → handle)", "—", None),
    ]


def table(rows: list[Figure], bare: float) -> str:
    lines = [f"{'call':44} {'median':>9} {'× bare':>7}  {'target':24} {'met':5} note",
             f"{'python -c pass (baseline)':44} {bare * 1000:7.1f}ms {1.0:6.2f}×"]
    for row in rows:
        met = "—" if row.met is None else ("yes" if row.met else "NO")
        ratio = f"{row.ratio:6.2f}×" if row.ratio is not None else "      —"
        lines.append(f"{row.name:44} {row.median * 1000:7.1f}ms {ratio}  {row.target:24} {met:5} {row.note}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15, help="runs per figure (median; default 15)")
    parser.add_argument("--li", help="absolute path of the li to measure (default: beside this python)")
    args = parser.parse_args(argv)
    li = li_path(args.li)
    root = tempfile.mkdtemp(prefix="li-bench-")
    try:
        rows, bare = measure(li, args.repeat, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"li: {li}\ninterpreter: {sys.executable} (Python {sys.version.split()[0]}), "
          f"{os.cpu_count()} CPUs, median of {args.repeat}\n")
    print(table(rows, bare))
    missed = [r.name for r in rows if r.met is False]
    print("\nall targets met" if not missed else f"\ntargets missed: {', '.join(missed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
