"""Memory of run supervisors: N concurrent sleeping runs, total and per-run RSS (and PSS).

    python benchmarks/bench_rss.py [--runs 100] [--sleep 600] [--rev REV | --li /abs/li] [--quick]

Submits N `li agent --detach --machine sh 'sleep S'` (8 submitters at once, so every run is
alive when sampled), then finds each run's supervisor: of the processes whose environment
carries LI_RUN_ID=<that run>, the one whose parent does not (the root of the run's tree: the
runner as li starts it, whatever its command line). RSS from /proc/<pid>/status, PSS from
/proc/<pid>/smaps_rollup when readable. Then `li job kill` each run, waits for them, and
SIGKILLs whatever is left of them (reported). JSON: build/bench/rss.json.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as common  # noqa: E402

SUBMITTERS = 8


def tagged_processes(run_ids: set[str]) -> dict[int, tuple[str, int]]:
    """pid -> (run id, parent pid) for every process whose environment carries one of run_ids."""
    found: dict[int, tuple[str, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        for item in environ.split(b"\0"):
            if item.startswith(b"LI_RUN_ID="):
                run_id = item[len(b"LI_RUN_ID="):].decode(errors="replace")
                if run_id in run_ids:
                    found[int(entry)] = (run_id, parent)
                break
    return found


def supervisors(run_ids: set[str]) -> dict[str, int]:
    """run id -> pid of the root of that run's tagged process tree."""
    tagged = tagged_processes(run_ids)
    roots: dict[str, int] = {}
    for pid, (run_id, parent) in tagged.items():
        if tagged.get(parent, ("", 0))[0] != run_id:
            roots[run_id] = min(pid, roots.get(run_id, pid))
    return roots


def memory_kb(pid: int) -> dict[str, Any]:
    facts: dict[str, Any] = {"pid": pid}
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    facts["rss_kb"] = int(line.split()[1])
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            facts["cmdline"] = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return facts
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    facts["pss_kb"] = int(line.split()[1])
    except OSError:
        pass
    return facts


def submit(li: str, env: dict[str, str], sleep: int) -> tuple[str | None, str | None]:
    sample = common.spawn([li, "agent", "--detach", "--machine", "sh", f"sleep {sleep}"], env)
    problem = common.envelope_problem(sample, "run_id")
    return (None, problem) if problem else (str(common.envelope_data(sample)["run_id"]), None)


def stats(values: list[int]) -> dict[str, float]:
    if not values:
        return {}
    return {"count": len(values), "total_mb": round(sum(values) / 1024, 1),
            "min_mb": round(min(values) / 1024, 2), "median_mb": round(statistics.median(values) / 1024, 2),
            "max_mb": round(max(values) / 1024, 2)}


def measure(li: str, runs: int, sleep: int, home: str) -> dict[str, Any]:
    env = common.clean_env(home)
    run_ids: list[str] = []
    problems: list[str] = []
    result: dict[str, Any] = {}
    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(SUBMITTERS) as pool:
            for run_id, problem in pool.map(lambda _: submit(li, env, sleep), range(runs)):
                if run_id:
                    run_ids.append(run_id)
                if problem:
                    problems.append(problem)
        result["submit_seconds"] = round(time.perf_counter() - started, 1)
        print(f"  {len(run_ids)} runs submitted in {result['submit_seconds']} s", file=sys.stderr)
        time.sleep(1.0)  # every supervisor past its start-up
        roots = supervisors(set(run_ids))
        facts = [memory_kb(pid) for pid in roots.values()]
        result.update({
            "runs_submitted": len(run_ids), "submit_problems": sorted(set(problems))[:5],
            "supervisors_found": len(roots),
            "supervisor_cmdline_example": next((f["cmdline"] for f in facts if f.get("cmdline")), None),
            "rss": stats([f["rss_kb"] for f in facts if "rss_kb" in f]),
            "pss": stats([f["pss_kb"] for f in facts if "pss_kb" in f]),
        })
    finally:
        result.update(cleanup(li, env, run_ids))
    return result


def cleanup(li: str, env: dict[str, str], run_ids: list[str]) -> dict[str, Any]:
    """`li job kill` every run, wait for their processes, SIGKILL the rest; reports what it took."""
    if not run_ids:
        return {"killed_by_li": 0, "left_after_kill": 0}
    with ThreadPoolExecutor(SUBMITTERS) as pool:
        answers = list(pool.map(lambda run_id: common.envelope_problem(common.spawn(
            [li, "job", "kill", run_id, "--machine"], env)), run_ids))
    wanted = set(run_ids)
    deadline = time.monotonic() + 30
    left = tagged_processes(wanted)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = tagged_processes(wanted)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    if left:
        print(f"  {len(left)} processes outlived `li job kill`; SIGKILLed", file=sys.stderr)
    return {"killed_by_li": sum(1 for a in answers if a is None),
            "kill_problems": sorted({a for a in answers if a})[:5], "left_after_kill": len(left)}


def table(result: dict[str, Any], target_mb: float) -> str:
    rows = []
    for kind in ("rss", "pss"):
        figures = result.get(kind) or {}
        if not figures:
            rows.append([kind.upper(), "—", "—", "—", "—", "—"])
            continue
        met = "✓" if figures["median_mb"] <= target_mb else "✗"
        rows.append([kind.upper(), f"{figures['count']}", f"{figures['total_mb']:.0f}",
                     f"{figures['median_mb']:.1f} ({figures['min_mb']:.1f}–{figures['max_mb']:.1f})",
                     f"≤ {target_mb:g} MB" if kind == "rss" else "—", met if kind == "rss" else ""])
    return common.md_table(["supervisors", "count", "total MB", "per run MB median (min–max)", "target", "met"],
                           rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100, help="concurrent sleeping runs (default 100; --quick: 3)")
    parser.add_argument("--sleep", type=int, default=600,
                        help="seconds each run sleeps (default 600: they are killed once sampled)")
    common.add_target_arguments(parser)
    args = parser.parse_args(argv)
    runs = 3 if args.quick else args.runs
    root = common.temp_root("li-bench-rss-")
    try:
        target = common.resolve_target(args, root)
        facts = common.machine_facts()
        home = os.path.join(root, "home")
        os.makedirs(home, mode=0o700)
        result = measure(target.li, runs, args.sleep, home)
    finally:
        common.remove(root)
    target_mb = float(common.load_targets()["rss"]["supervisor_mb"])
    payload = {"benchmark": "rss", "li": target.li, "measured": target.label, "commit": target.commit,
               "runs": runs, "sleep": args.sleep, "quick": args.quick, "machine": facts,
               "target_supervisor_rss_mb": target_mb, **result}
    path = common.write_json(args.out, "rss", payload)
    print(f"{target.label}; {runs} concurrent `sh -c 'sleep {args.sleep}'` runs; "
          f"load {facts['loadavg']} on {facts['cpus']} CPUs")
    print(f"supervisor: {result.get('supervisor_cmdline_example')}\n")
    print(table(result, target_mb))
    print(f"\nsubmitted {result.get('runs_submitted')} in {result.get('submit_seconds')} s; "
          f"supervisors found {result.get('supervisors_found')}; killed by li {result['killed_by_li']}; "
          f"left after kill (SIGKILLed) {result['left_after_kill']}")
    print(f"JSON: {path}")
    complete = result.get("runs_submitted") == runs and result.get("supervisors_found") == runs
    if args.quick and not complete:
        print("quick check: not every run answered ok or has a supervisor", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
