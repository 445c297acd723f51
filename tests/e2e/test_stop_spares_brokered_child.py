"""Through the real `li`: every stop of a confined run — `li job kill` of the
parent itself, and its timeout — stops the parent's work and spares the child run its work
submitted through the run's broker (adapters/broker.py), in the lean supervisor and in the full
runner alike. The child goes on and ends on its own, `succeeded`.

Where the work gets a PID namespace of its own, the namespace alone keeps the child
out of the parent's processes (tests/e2e/test_run_ends_whole.py). Here the runs are submitted
where the kernel makes none (a user namespace whose `max_pid_namespaces` is 0: the host's limit
is untouched), so the broker's mark and the mount namespace are all that tell the child apart —
the case where `li job kill PARENT` once cancelled the child too.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support import li_bin, machine

SUPERVISORS = ["lean", "full"]
pytestmark = pytest.mark.skipif(shutil.which("unshare") is None, reason="no unshare(1) here")
FAST = {"LI_KILL_GRACE": "0.5"}


# `li` in a user namespace (root mapped to this user) where no PID namespace can be made
NO_PID_NAMESPACES = ["unshare", "--user", "--map-root-user", "sh", "-c",
                     'echo 0 > /proc/sys/user/max_pid_namespaces && exec "$@"', "sh"]


def submit(home: str, script: str, supervisor: str, *extra: str) -> str:
    argv = [*NO_PID_NAMESPACES, li_bin(), "agent", "--detach", *extra, "sh", script, "--machine"]
    done = subprocess.run(argv, env={**os.environ, "LI_HOME": home, "LI_SUPERVISOR": supervisor},
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return str(json.loads(done.stdout)["data"]["run_id"])


def status(home: str, run_id: str) -> dict[str, Any]:
    return machine("job", "status", run_id, home=home).data  # type: ignore[no-any-return]


def ended(home: str, run_id: str, within: float = 60) -> dict[str, Any]:
    waited = machine("job", "wait", run_id, "--max-wait", str(within), "--poll-interval", "0.1", home=home).data
    assert waited["all_terminal"] is True, waited
    return status(home, run_id)


def said(home: str, run_id: str, name: str, within: float = 30) -> str:
    """The run id a run's work said it submitted (`NAME=<id>` in its console)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        text = str(machine("job", "output", run_id, home=home).data["console"]["value"])
        found = re.search(rf"^{name}=(\S+)$", text, re.M)
        if found:
            return found.group(1)
        time.sleep(0.1)
    raise AssertionError(f"the work of {run_id} said no {name}: {text!r}")


def child_of(home: str, parent: str) -> str:
    """The child the parent's work said it submitted (`CHILD=<id>` in its console)."""
    return said(home, parent, "CHILD")


def running(home: str, run_id: str) -> tuple[dict[str, Any], int]:
    """The child's status once its work runs, and its runner's pid."""
    deadline = time.monotonic() + 30
    while (data := status(home, run_id))["status"] != "running" or data.get("pid") is None:
        assert time.monotonic() < deadline, data
        time.sleep(0.1)
    return data, int(data["pid"])


def gated(tmp_path: Path) -> tuple[Path, Path, str]:
    """(the gate the test opens, the file the child then writes, the child's script): the child
    runs until the test opens its gate (at most two minutes), so no timing decides the test."""
    gate, done = tmp_path / "gate", tmp_path / "child-done"
    script = f"n=0; while [ ! -e {gate} ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n+1)); done; touch {done}"
    return gate, done, script


def parent_work(child_script: str, tail: str) -> str:
    li = shlex.quote(li_bin())
    return f"""
        child=$({li} agent --detach sh {shlex.quote(child_script)} 2>/dev/null)
        echo "CHILD=$child"
        {tail}
    """


@pytest.mark.parametrize("supervisor", SUPERVISORS)
def test_killing_the_parent_spares_the_child_its_work_submitted(li_home: str, supervisor: str,
                                                                  tmp_path: Path) -> None:
    gate, done, child_script = gated(tmp_path)
    parent = submit(li_home, parent_work(child_script, "sleep 300"), supervisor)
    child = child_of(li_home, parent)
    before, child_runner = running(li_home, child)
    assert before["parent"] == parent, before
    here = status(li_home, parent)
    assert (here["confinement"], here["processes"]) == ("store_hidden", "shared"), here
    answer = machine("job", "kill", parent, home=li_home, env=FAST).data
    assert answer["action"] == "signalled", answer
    killed = ended(li_home, parent)
    assert (killed["status"], killed["reason_code"]) == ("cancelled", "kill_requested"), killed
    # the kill is over, the parent's end recorded: the child still runs, untouched ...
    assert psutil.pid_exists(child_runner) and psutil.Process(child_runner).status() != psutil.STATUS_ZOMBIE
    assert status(li_home, child)["status"] == "running"
    assert not done.exists()
    # ... and ends on its own, as itself
    gate.touch()
    after = ended(li_home, child)
    assert (after["status"], after["outcome"], after["parent"]) == ("completed", "succeeded", parent), after
    assert (after["confinement"], after.get("kill_requested_at")) == ("store_hidden", None), after
    assert done.exists()


@pytest.mark.parametrize("supervisor", SUPERVISORS)
def test_the_parents_timeout_spares_the_child_its_work_submitted(li_home: str, supervisor: str,
                                                                   tmp_path: Path) -> None:
    gate, done, child_script = gated(tmp_path)
    parent = submit(li_home, parent_work(child_script, "sleep 300"), supervisor, "--timeout", "8")
    child = child_of(li_home, parent)
    running(li_home, child)
    stopped = ended(li_home, parent)
    assert (stopped["status"], stopped["reason_code"]) == ("timed_out", "timeout"), stopped
    assert status(li_home, child)["status"] == "running"
    assert not done.exists()
    gate.touch()
    after = ended(li_home, child)
    assert (after["status"], after["outcome"], after["parent"]) == ("completed", "succeeded", parent), after
    assert done.exists()


@pytest.mark.parametrize("stop", ["end", "kill"])
@pytest.mark.parametrize("supervisor", SUPERVISORS)
def test_a_grandchild_left_to_the_parent_when_the_child_ended_is_spared_too(
        li_home: str, supervisor: str, stop: str, tmp_path: Path) -> None:
    # The child's work submits a grandchild through the child's broker and the child ends: the
    # grandchild's runner is re-parented to the parent's head (a subreaper) and carries the
    # child's mark, not the parent's. The parent's end, and a kill of it, spare it all the same.
    gate, done, grandchild_script = gated(tmp_path)
    li = shlex.quote(li_bin())
    child_script = (f"g=$({li} agent --detach sh {shlex.quote(grandchild_script)} 2>/dev/null); "
                    'echo "GRANDCHILD=$g"')
    release = tmp_path / "release"  # the parent's work ends (or is killed) once the test looked
    tail = (f'{li} job wait "$child" --max-wait 60 >/dev/null 2>&1; '
            + (f"n=0; while [ ! -e {release} ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n+1)); done"
               if stop == "end" else "sleep 300"))
    parent = submit(li_home, parent_work(child_script, tail), supervisor)
    child = child_of(li_home, parent)
    grandchild = said(li_home, child, "GRANDCHILD")
    ended(li_home, child)
    _, runner = running(li_home, grandchild)
    head = status(li_home, parent)
    assert head["status"] == "running" and psutil.Process(runner).ppid() == head["pid"], (head, runner)
    if stop == "kill":
        assert machine("job", "kill", parent, home=li_home, env=FAST).data["action"] == "signalled"
    else:
        release.touch()
    stopped = ended(li_home, parent)
    assert stopped["status"] == ("completed" if stop == "end" else "cancelled"), stopped
    assert psutil.pid_exists(runner) and status(li_home, grandchild)["status"] == "running"
    gate.touch()
    after = ended(li_home, grandchild)
    assert (after["status"], after["outcome"], after["parent"]) == ("completed", "succeeded", child), after
    assert done.exists()
