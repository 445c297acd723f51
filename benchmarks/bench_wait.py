"""Benchmark: `li job wait --max-wait 0` over 1,000 finished runs (prints figures; asserts nothing).

Keep it fast: a terminal answer comes from the record alone, so the Observer never probes a
process for an ended run (`probe_ended=False`), and a wait reads each distinct record once.
`tests/unit/test_wait.py` pins the "no probe" half of that with a counting prober.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def populate(home: str, count: int) -> list[str]:
    from lionrun.adapters.fs_store import FsRunStore
    from lionrun.domain.run import STARTED, Run, iso

    store, now = FsRunStore(home), datetime.now(UTC)
    ids = []
    for _ in range(count):
        run_id = store.reserve(now)
        store.create(Run(run_id, "agent", "completed", iso(now), spawn_state=STARTED, finished_at=iso(now)))
        ids.append(run_id)
    return ids


def main(count: int = 1000, repeats: int = 5) -> None:
    li = os.path.join(os.path.dirname(sys.executable), "li")
    with tempfile.TemporaryDirectory() as home:
        ids = populate(home, count)
        env = {**os.environ, "LI_HOME": home}
        timings = []
        for _ in range(repeats):
            started = time.perf_counter()
            done = subprocess.run([li, "job", "wait", "-", "--max-wait", "0", "--machine"], input="\n".join(ids),
                                  capture_output=True, text=True, env=env, check=True)
            timings.append(time.perf_counter() - started)
            data = json.loads(done.stdout)["data"]
            assert data["all_terminal"] and len(data["runs"]) == count
        timings.sort()
        print(f"li job wait --max-wait 0 over {count} finished runs: "
              f"best {timings[0]:.3f}s, median {timings[len(timings) // 2]:.3f}s ({repeats} runs)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
