"""A leg's timeout gives everything the leg started one grace period, in both supervisors: what
it started outside its process group (`setsid`, a session of its own) is SIGKILLed with the
group once the grace is over, not a second grace later."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lionrun.domain.evidence import KILL_GRACE
from tests.support import machine

# The leader notes its SIGTERM and goes on; the tool it left in a session of its own ignores
# SIGTERM and beats every 0.1 s until it is killed.
WORK = """
    trap 'date +%s.%N >> {terms}' TERM
    setsid sh -c 'trap "" TERM; while :; do date +%s.%N >> {beat}; sleep 0.1; done' &
    while :; do sleep 0.1; done
"""


@pytest.mark.parametrize("supervisor", ["lean", "full"])
def test_a_timeout_kills_the_legs_tool_outside_its_group_after_one_grace(
        li_home: str, tmp_path: Path, supervisor: str) -> None:
    terms, beat = tmp_path / "terms", tmp_path / "beat"
    run_id = machine("agent", "--detach", "--timeout", "2", "sh", WORK.format(terms=terms, beat=beat),
                     home=li_home, env={"LI_SUPERVISOR": supervisor}).data["run_id"]
    waited = machine("job", "wait", run_id, "--max-wait", "60", home=li_home).data
    assert waited["runs"][0]["status"] == "timed_out", waited
    first_term = float(terms.read_text().split()[0])
    beats = beat.read_text()
    time.sleep(1)
    assert beat.read_text() == beats, "the tool outlived the run"
    last = beats.split()[-1]  # a beat cut by the SIGKILL leaves no line
    # the tool's last beat: within one grace (and the settle, and the beat's 0.1 s) of the first
    # SIGTERM; a second grace for what left the group would put it two graces after
    assert float(last) - first_term < KILL_GRACE + 1.5, (first_term, last)
