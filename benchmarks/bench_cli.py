"""Per-call cost of `li --machine` as a ratio to the interpreter floor, measured in one run.

    python benchmarks/bench_cli.py [--repeat 15] [--rev REV | --li /abs/li] [--peer /abs/li
                                   [--peer-python /abs/python]] [--quick]

By default it installs this repository's HEAD (regular `pip install`, not editable) into a temp
venv and measures that `li`. Each round runs, for every call, the floor `python -I -S -c pass`
(the base interpreter of the li under measure) and then the call (and the peer's call, after its own
interpreter's floor with --peer-python), so floor and call samples are paired and interleaved. Figures: CPU time of the whole child (user + sys,
from os.wait4) and wall time, min/median/max; the ratio is the median of the paired ratios
call / floor. Stores are synthetic, in a temp LI_HOME. Nothing here passes or fails on speed:
targets (benchmarks/targets.toml) are printed beside the figures. JSON: build/bench/cli.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as common  # noqa: E402

CALLS: list[tuple[str, str, list[str]]] = [
    # (key, shown as, argv after li; {id} is a run id of the store)
    ("handshake", "handshake --machine", ["handshake", "--machine"]),
    ("status", "job status <id> --machine", ["job", "status", "{id}", "--machine"]),
    ("wait", "job wait <id> --max-wait 0 --machine (1 id)",
     ["job", "wait", "{id}", "--max-wait", "0", "--machine"]),
    ("list", "job list --machine (20 runs)", ["job", "list", "--machine"]),
    ("submit", "agent --detach --machine sh true → handle",
     ["agent", "--detach", "--machine", "sh", "true"]),
    ("help", "--help --machine", ["--help", "--machine"]),
]
STORE_RUNS = 20
# What the libraries li is built on cost by themselves: imported by the li's own interpreter and left
# with os._exit, as li leaves (entrypoints/startup/quick_exit.py). No code of ours can make a call
# that imports them cheaper than these rows (docs/performance.md, "What item 7 asks").
REFERENCES: list[tuple[str, str, str]] = [
    # (key, shown as, what is imported)
    ("msgspec", "import msgspec (the wire model's library: every read)", "msgspec"),
    ("submit_imports", "import msgspec, psutil, filelock (a submit, before it allocates: D8)",
     "msgspec, psutil, filelock"),
]


@dataclass
class Series:
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    ratio_cpu: list[float] = field(default_factory=list)
    ratio_wall: list[float] = field(default_factory=list)
    maxrss_kb: list[int] = field(default_factory=list)
    problem: str | None = None

    def add(self, sample: common.Sample, floor: common.Sample | None) -> None:
        self.cpu.append(sample.cpu)
        self.wall.append(sample.wall)
        self.maxrss_kb.append(sample.maxrss_kb)
        if floor is not None:
            self.ratio_cpu.append(sample.cpu / floor.cpu if floor.cpu > 0 else float("nan"))
            self.ratio_wall.append(sample.wall / floor.wall)

    def summary(self) -> dict[str, Any]:
        if self.problem:
            return {"ok": False, "problem": self.problem}

        def three(values: list[float], scale: float = 1000.0) -> dict[str, float]:
            return {"min": round(min(values) * scale, 2), "median": round(statistics.median(values) * scale, 2),
                    "max": round(max(values) * scale, 2)}

        out: dict[str, Any] = {"ok": True, "samples": len(self.cpu), "cpu_ms": three(self.cpu),
                               "wall_ms": three(self.wall), "maxrss_kb_median": statistics.median(self.maxrss_kb)}
        if self.ratio_cpu:
            out["ratio_cpu"] = three(self.ratio_cpu, 1.0)
            out["ratio_wall"] = three(self.ratio_wall, 1.0)
        return out


def prepare(root: str) -> tuple[str, str, str, str]:
    """Three homes: an empty one (handshake), one with 20 finished runs, one for submits."""
    from tools.synthetic import finished_runs

    empty, store, submits = (os.path.join(root, name) for name in ("empty", "store", "submits"))
    for home in (empty, store, submits):
        os.makedirs(home, mode=0o700)
    run_id = finished_runs(store, STORE_RUNS)[-1]
    return empty, store, run_id, submits


def measure(li: str, peer: str | None, floor_python: str, repeat: int, root: str,
            warm_up: bool = True, peer_python: str | None = None) -> dict[str, Any]:
    """Each call paired with the floor of its own interpreter: `peer_python` is the peer's (another
    Python's install of li, to compare two Pythons in one run), else both share `floor_python`."""
    empty, store, run_id, submits = prepare(root)
    peer_submits = os.path.join(root, "peer-submits")
    os.makedirs(peer_submits, mode=0o700)
    homes = {"handshake": empty, "status": store, "wait": store, "list": store, "submit": submits, "help": empty}
    floor_argv = [floor_python, "-I", "-S", "-c", "pass"]
    peer_floor_argv = [peer_python, "-I", "-S", "-c", "pass"] if peer_python else floor_argv
    floor, peer_floor = Series(), Series()
    mine = {key: Series() for key, _, _ in CALLS}
    theirs = {key: Series() for key, _, _ in CALLS}
    sides = [(li, mine, None, floor_argv, floor)] + (
        [(peer, theirs, peer_submits, peer_floor_argv, peer_floor)] if peer else [])
    references = {side: {key: Series() for key, _, _ in REFERENCES} for side in ("li", "peer")}
    interpreters = {"li": common.interpreter_of(li), "peer": common.interpreter_of(peer) if peer else None}
    for round_no in range(0 if warm_up else 1, repeat + 1):  # round 0 warms caches up, not counted
        for key, _, template in CALLS:
            argv = [part.replace("{id}", run_id) for part in template]
            for exe, series, submit_home, its_floor, floor_series in sides:
                home = submit_home if (key == "submit" and submit_home) else homes[key]
                one_call(key, [exe, *argv], home, its_floor, series[key], floor_series, counted=round_no > 0)
        for side, its_floor in (("li", floor_argv), ("peer", peer_floor_argv)):
            reference(references[side], interpreters[side], its_floor, homes["handshake"], round_no)
        print(f"  round {round_no}/{repeat}", file=sys.stderr)
    return {"floor": floor.summary(), "li": summaries(mine),
            "peer": summaries(theirs) if peer else None,
            "peer_floor": peer_floor.summary() if peer_python and peer else None,
            "reference": {side: summaries(references[side], interpreters[side]) for side in references}}


def one_call(key: str, argv: list[str], home: str, floor_argv: list[str], series: Series, floor_series: Series,
             counted: bool) -> None:
    """One sample of a call, right after one of its floor; a call that gave no ok envelope is
    marked and not run again."""
    if series.problem:
        return
    env = common.clean_env(home)
    paired = common.spawn(floor_argv, env)
    sample = common.spawn(argv, env)
    series.problem = common.envelope_problem(sample, "run_id" if key == "submit" else None)
    if series.problem:
        return
    if key == "submit":  # its runner ends before anything else is measured
        pid = common.envelope_data(sample).get("pid")
        if isinstance(pid, int):
            common.wait_gone([pid], 60)
    if counted:
        floor_series.add(paired, None)
        series.add(sample, paired)


def summaries(series: dict[str, Series], measured: object = True) -> dict[str, Any] | None:
    """Each series' figures; None for a side that was not `measured` (no interpreter of its own)."""
    return {key: one.summary() for key, one in series.items()} if measured else None


def reference(series: dict[str, Series], interpreter: str | None, floor_argv: list[str], home: str,
              round_no: int) -> None:
    """One round of the reference rows, each paired with a floor like a call."""
    if interpreter is None:
        return
    for key, _, modules in REFERENCES:
        if series[key].problem:
            continue
        env = common.clean_env(home)
        paired = common.spawn(floor_argv, env)
        sample = common.spawn([interpreter, "-c", f"import {modules}\nimport os\nos._exit(0)"], env)
        if sample.returncode != 0:
            series[key].problem = f"exit {sample.returncode}: {sample.stderr.strip()[-200:]}"
        elif round_no:
            series[key].add(sample, paired)


def cell(summary: dict[str, Any], target: float | None = None) -> list[str]:
    if not summary.get("ok"):
        return ["—", "—", f"— ({summary.get('problem')})"]
    ratio = summary["ratio_cpu"]["median"]
    met = "" if target is None else (" ✓" if ratio <= target else " ✗")
    return [f"{summary['cpu_ms']['median']:.1f} ({summary['cpu_ms']['min']:.1f}–{summary['cpu_ms']['max']:.1f})",
            f"{summary['wall_ms']['median']:.1f}",
            f"{ratio:.1f}×{met} (wall {summary['ratio_wall']['median']:.1f}×)"]


def table(result: dict[str, Any], targets: dict[str, float]) -> str:
    floor = result["floor"]
    header = ["call", "CPU ms median (min–max)", "wall ms", "× floor (CPU)", "target"]
    rows = [["`python -I -S -c pass` (floor)",
             f"{floor['cpu_ms']['median']:.1f} ({floor['cpu_ms']['min']:.1f}–{floor['cpu_ms']['max']:.1f})",
             f"{floor['wall_ms']['median']:.1f}", "1.0×", ""]]
    peer = result.get("peer")
    if peer:
        header += ["peer CPU ms", "peer wall ms", "peer × floor (CPU)"]
        own = result.get("peer_floor")  # the peer's own interpreter's floor (--peer-python)
        rows[0] += ["", "", ""] if not own else [
            f"{own['cpu_ms']['median']:.1f} ({own['cpu_ms']['min']:.1f}–{own['cpu_ms']['max']:.1f})",
            f"{own['wall_ms']['median']:.1f}", "1.0× (its own floor)"]
    for key, shown, _ in CALLS:
        target = targets.get(key)
        row = [f"`{shown}`", *cell(result["li"][key], target), f"≤ {target:g}×" if target else "—"]
        if peer:
            row += cell(peer[key])
        rows.append(row)
    mine, theirs = result["reference"]["li"], result["reference"]["peer"]
    for key, shown, _ in REFERENCES if mine or theirs else ():
        row = [f"({shown})", *(cell(mine[key]) if mine else ["—"] * 3), "—"]
        if peer:
            row += cell(theirs[key]) if theirs else ["—"] * 3
        rows.append(row)
    return common.md_table(header, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15,
                        help="counted rounds after one warm-up round (default 15; --quick: 1, no warm-up)")
    parser.add_argument("--peer", help="absolute path of another implementation's li, measured side by side")
    parser.add_argument("--peer-python", help="the peer's own interpreter: its calls are paired with its own floor "
                                              "(two Pythons' installs of li compared in one run)")
    common.add_target_arguments(parser)
    args = parser.parse_args(argv)
    repeat = 1 if args.quick else args.repeat
    if args.peer and not (os.path.isabs(args.peer) and os.access(args.peer, os.X_OK)):
        parser.error(f"--peer must be an absolute path to an executable: {args.peer}")
    root = common.temp_root("li-bench-cli-")
    try:
        target = common.resolve_target(args, root)
        facts = common.machine_facts()
        answer = common.spawn([target.li, "handshake", "--machine"], common.clean_env(root))
        module = None if common.envelope_problem(answer) else common.envelope_data(answer).get("module")
        result = measure(target.li, args.peer, target.python, repeat, os.path.join(root, "homes"),
                         warm_up=not args.quick, peer_python=args.peer_python)
    finally:
        common.remove(root)
    targets = common.load_targets()["cli"]
    payload = {"benchmark": "cli", "li": target.li, "measured": target.label, "commit": target.commit,
               "li_module": module, "peer": args.peer, "floor": f"{target.python} -I -S -c pass", "repeat": repeat,
               "quick": args.quick, "machine": facts, "load_after": os.getloadavg(),
               "targets_cpu_ratio": targets, **result}
    path = common.write_json(args.out, "cli", payload)
    print(f"{target.label} (its code: {module}); floor `{target.python} -I -S -c pass`; {repeat} paired rounds; "
          f"load {facts['loadavg']} on {facts['cpus']} CPUs\n")
    print(table(result, targets))
    print(f"\nJSON: {path}")
    problems = [k for k, s in result["li"].items() if not s.get("ok")]
    if args.quick and problems:
        print(f"quick check: no ok envelope from {', '.join(problems)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
