"""The full runner's stop of the run's processes (`ChildGroups.stop_strays`), with real processes:
a process that left its group and session is still stopped when it carries the run's tag, and a
process that is not a run's (no LI_RUN_ID here) never stops anything."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time

from lionrun.adapters import proctree
from lionrun.adapters.providers import ChildGroups


def run_id() -> str:
    """A run id of this test's own: the stop scans every process for the tag, so two tests run side
    by side (xdist) must never share one, or one counts the other's process."""
    return f"20261204T000000-{secrets.token_hex(3)}"


def escaped(run_id: str) -> int:
    """A `sleep` in a session of its own whose parent already exited, carrying `run_id`'s tag."""
    env = {**os.environ, "LI_RUN_ID": run_id}
    # setsid(1) may fork (two tagged processes for a moment); this makes the session in place
    setsid = f"{sys.executable} -c 'import os; os.setsid(); os.execvp(\"sleep\", [\"sleep\", \"30\"])'"
    subprocess.run(["sh", "-c", f"{setsid} & echo $! > pid"], env=env, check=True, cwd=os.environ["TMPDIR_RUN"])
    with open(os.path.join(os.environ["TMPDIR_RUN"], "pid")) as handle:
        return int(handle.read())


def gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        stat = proctree.stat_of(str(pid))
        if stat is None or proctree.zombie(stat[0]):
            return True
        time.sleep(0.02)
    return False


STOP = """
import sys
from lionrun.adapters.providers import ChildGroups
from tests.integration.test_run_tree_groups import escaped
print(escaped(sys.argv[1]), flush=True)
ChildGroups(sys.argv[1]).stop_strays(sys.stdout.write, grace=0.5)
"""


def test_a_tagged_process_that_escaped_is_stopped_and_said(tmp_path, monkeypatch) -> None:
    """The stop runs in a process of its own that starts the work, as the runner does: every
    descendant of the stopping process counts as the run's, and a pytest worker has children of
    other tests' (a server a fixture started), which would be counted with the escaped one."""
    monkeypatch.setenv("TMPDIR_RUN", str(tmp_path))
    run = run_id()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", STOP, run], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": repo}, cwd=repo)
    assert done.returncode == 0, done.stderr
    pid, said = done.stdout.split("\n", 1)
    assert gone(int(pid))
    assert said == "li runner: stopping 1 process(es) the work left running\n"


def test_outside_a_run_nothing_is_stopped(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR_RUN", str(tmp_path))
    monkeypatch.delenv("LI_RUN_ID", raising=False)
    pid = escaped(run_id())
    try:
        ChildGroups().stop_strays(grace=0.2)
        ChildGroups().terminate_all()
        assert not gone(pid, within=0.5)
    finally:
        os.kill(pid, 9)


STOP_ONE_LEG = """
import os, subprocess, sys
from lionrun.adapters.providers import ChildGroups
run = sys.argv[1]
env = {**os.environ, "LI_RUN_ID": run}
# leg b: started (a descendant of this runner, carrying its leg id) but not registered yet, as in
# the moment between a fanout leg's fork and its Popen's return, or just after its group went
b = subprocess.Popen(["sleep", "30"], env={**env, "LI_LEG_ID": "b"}, process_group=0)
# what leg a left running: carries leg a's id
a = subprocess.Popen(["sleep", "30"], env={**env, "LI_LEG_ID": "a"}, process_group=0)
print(a.pid, b.pid, flush=True)
ChildGroups(run).stop_strays(sys.stdout.write, grace=0.5, leg="a")
print("b alive" if b.poll() is None else "b stopped", flush=True)
b.kill()
"""


def test_a_legs_stop_takes_only_what_carries_that_leg_never_another_leg(tmp_path) -> None:
    """A fanout leg's end stops what that leg left running, and never a process of another leg,
    even one whose group is not (or no longer) registered: a leg that had just been forked was
    stopped as a stray of its sibling (about 1 fanout in 6 ended failed)."""
    run = run_id()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", STOP_ONE_LEG, run], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": repo}, cwd=repo)
    assert done.returncode == 0, done.stderr
    pids, said, verdict = done.stdout.split("\n", 2)
    assert said == "li runner: stopping 1 process(es) the work left running"
    assert verdict.strip() == "b alive", done.stdout
    assert gone(int(pids.split()[0]))
