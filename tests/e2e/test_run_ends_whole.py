"""Through the real `li`: a confined run's work runs in a PID namespace of its
own (as root, and as an unprivileged user inside the user namespace the confinement makes), on
both supervisors.

- the work cannot stop or kill its supervisor: it does not see it by pid (`kill -STOP $PPID`,
  and every ancestor it can find through /proc), so the timeout and `li job kill` still end it;
- nothing it started outlives the run (a double fork, `setsid`, `env -i`, a new name);
- a run its work submitted through the broker is no process of it: killing the parent (or its
  timeout) leaves the child run to end as it would.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cwd_into_the_store import USERS, setup_user, top
from tests.support import li_bin

__all__ = ["top"]  # the fixture, used by name

SUPERVISORS = ["lean", "full"]

# Every ancestor the work can name through the host's /proc (its `stat` gives parents in the
# host's pids): each is sent SIGSTOP and then SIGKILL. In its own PID namespace none is there.
ATTACK = """
    echo "PPID=$PPID"
    kill -STOP $PPID
    p=$(sed 's/.*) //' /proc/self/stat | cut -d' ' -f2); n=0
    while [ "$p" -gt 1 ] && [ $n -lt 8 ]; do
        next=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f2)
        kill -STOP "$p" 2>/dev/null && echo "STOPPED-ANCESTOR-$p"
        kill -KILL "$p" 2>/dev/null && echo "KILLED-ANCESTOR-$p"
        p=${{next:-1}}; n=$((n+1))
    done
    (setsid sh -c 'sleep 4; touch {late}/setsid' &)
    (env -i /bin/sh -c 'sleep 4; touch {late}/env-i' &)
    ( ( sleep 4; touch {late}/double-fork ) & ) &
    echo ATTACKED
    sleep 60
"""


def late_files(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


@pytest.mark.parametrize("supervisor", SUPERVISORS)
@pytest.mark.parametrize("uid", USERS)
def test_the_work_cannot_stop_its_supervisor_and_nothing_outlives_the_timeout(
        top: Path, uid: int | None, supervisor: str) -> None:
    li = setup_user(top, uid)
    late = top / "late"
    late.mkdir(mode=0o777)
    os.chmod(late, 0o777)
    began = time.monotonic()
    run_id = li("agent", "--detach", "--timeout", "3", "sh", ATTACK.format(late=late),
                env={"LI_SUPERVISOR": supervisor})["data"]["run_id"]
    data = li.ended(run_id)
    took = time.monotonic() - began
    said = li.console(run_id)
    assert "ATTACKED" in said, said
    assert (data["status"], data["processes"]) == ("timed_out", "pid_namespace"), (data, said)
    assert "STOPPED-ANCESTOR" not in said and "KILLED-ANCESTOR" not in said, said
    assert took < 20, took  # not stuck behind a stopped supervisor
    time.sleep(5)
    assert late_files(late) == [], late_files(late)


@pytest.mark.parametrize("supervisor", SUPERVISORS)
@pytest.mark.parametrize("uid", USERS)
def test_a_kill_ends_the_whole_run_and_the_escaped_writer_with_it(
        top: Path, uid: int | None, supervisor: str) -> None:
    li = setup_user(top, uid)
    late = top / "late"
    late.mkdir(mode=0o777)
    os.chmod(late, 0o777)
    run_id = li("agent", "--detach", "sh", ATTACK.format(late=late), env={"LI_SUPERVISOR": supervisor})["data"]["run_id"]
    deadline = time.monotonic() + 20
    while "ATTACKED" not in li.console(run_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    began = time.monotonic()
    killed = li("job", "kill", run_id)
    assert killed["ok"] is True, killed
    data = li.ended(run_id)
    assert data["status"] == "cancelled" and data["processes"] == "pid_namespace", data
    assert time.monotonic() - began < 8
    time.sleep(5)
    assert late_files(late) == [], late_files(late)


@pytest.mark.parametrize("supervisor", SUPERVISORS)
@pytest.mark.parametrize("stop", ["kill", "timeout"])
def test_a_child_run_the_work_submitted_outlives_its_parents_kill(li_home: str, supervisor: str, stop: str) -> None:
    from tests.support import machine

    li = shlex.quote(li_bin())
    extra = ("--timeout", "4") if stop == "timeout" else ()
    parent = machine("agent", "--detach", *extra, "sh", f"""
        child=$({li} agent --detach sh 'sleep 15; echo CHILD-DONE' 2>/dev/null)
        echo "CHILD=$child"
        sleep 60
    """, home=li_home, env={"LI_SUPERVISOR": supervisor}).data["run_id"]
    child = None
    deadline = time.monotonic() + 20
    while child is None and time.monotonic() < deadline:
        text = machine("job", "output", parent, home=li_home).data["console"]["value"] or ""
        child = next((line[6:] for line in text.splitlines() if line.startswith("CHILD=") and len(line) > 6), None)
        time.sleep(0.2)
    assert child, text
    if stop == "kill":
        assert machine("job", "kill", parent, home=li_home).data
    waited = machine("job", "wait", parent, "--max-wait", "30", "--poll-interval", "0.1", home=li_home).data
    assert waited["all_terminal"] is True
    ended_parent: dict[str, Any] = machine("job", "status", parent, home=li_home).data
    assert ended_parent["status"] == ("cancelled" if stop == "kill" else "timed_out"), ended_parent
    child_now: dict[str, Any] = machine("job", "status", child, home=li_home).data
    assert child_now["terminal"] is False, child_now  # still working after its parent ended
    waited = machine("job", "wait", child, "--max-wait", "40", "--poll-interval", "0.1", home=li_home).data
    assert waited["all_terminal"] is True
    child_end = machine("job", "status", child, home=li_home).data
    assert (child_end["status"], child_end["outcome"]) == ("completed", "succeeded"), child_end
    assert "CHILD-DONE" in json.dumps(machine("job", "output", child, home=li_home).data)
