"""The per-run cost of hiding the store from the work: what confinement adds to a leg's start.

    python benchmarks/bench_confine.py [--rounds 200] [--quick] [--out PATH]

For each round, paired: fork + exec `true` + wait, plain and with `adapters.confinement.confine`
in the child (user + mount namespace for a non-root user, mount namespace for root; tmpfs over a
store, its artifacts folder bound back), and the runner's one `probe` (a fork that confines
itself and exits). As root it measures root's path and, through setuid in the forked child,
nobody's (uid 65534) too. Medians and p90 in ms; JSON in build/bench/confine.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "adapters"))
import confinement  # noqa: E402 - the stdlib-only module, as the lean supervisor imports it

NOBODY = 65534


def _one(home: str, artifacts: str, confined: bool, uid: int | None) -> float:
    began = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            if confined:
                confinement.confine(home, artifacts)
            os.execv("/bin/true", ["true"])
        finally:
            os._exit(127)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the leg did not start"
    return (time.perf_counter() - began) * 1000


def _probe(home: str, uid: int | None) -> float:
    read, write = os.pipe()
    began = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        os.write(write, b"0" if confinement.probe(home) is None else b"1")
        os._exit(0)
    os.waitpid(pid, 0)
    took = (time.perf_counter() - began) * 1000
    ok = os.read(read, 1) == b"0"
    os.close(read)
    os.close(write)
    assert ok, "the kernel refused the confinement"
    return took


def _figures(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median_ms": round(statistics.median(ordered), 3),
            "p90_ms": round(ordered[int(len(ordered) * 0.9) - 1 if len(ordered) > 1 else 0], 3)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                                                      "bench", "confine.json"))
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    top = tempfile.mkdtemp(prefix="li-bench-confine-")
    os.chmod(top, 0o755)
    home = os.path.join(top, "home")
    artifacts = os.path.join(home, "runs", "20260101T000000-000000", "artifacts")
    os.makedirs(artifacts)
    users: list[tuple[str, int | None]] = [("self", None)]
    if os.geteuid() == 0:
        for folder, _, _ in os.walk(top):
            os.chown(folder, NOBODY, NOBODY)
        users = [("root", None), ("nobody", NOBODY)]
    result: dict[str, dict[str, object]] = {}
    for name, uid in users:
        plain, confined, probes = [], [], []
        for _ in range(rounds):
            plain.append(_one(home, artifacts, False, uid))
            confined.append(_one(home, artifacts, True, uid))
            probes.append(_probe(home, uid))
        added = [c - p for c, p in zip(confined, plain, strict=True)]
        result[name] = {"plain": _figures(plain), "confined": _figures(confined),
                        "added": _figures(added), "probe": _figures(probes), "rounds": rounds}
    out = args.out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as handle:
        json.dump(result, handle, indent=1)
    print(json.dumps(result, indent=1))
    import shutil

    shutil.rmtree(top, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
