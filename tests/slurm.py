"""The Slurm cluster the executor tests use: `LI_TEST_SLURM` names its slurm.conf (`.ci/run` starts a
single-node cluster with `tools/slurm_local.sh`). Without it a Slurm test is skipped locally and fails
in CI, never silently passing.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterable, Iterator

import pytest

# Slurm job states in which the job's processes may still run (the ADR's "alive" evidence).
LIVE_STATES = frozenset({"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "RESIZING",
                         "SIGNALING", "STAGE_OUT", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
                         "RESV_DEL_HOLD", "STOPPED"})


def cluster_conf() -> str:
    conf = os.environ.get("LI_TEST_SLURM", "")
    if not conf:
        if os.environ.get("CI"):
            pytest.fail("LI_TEST_SLURM is not set: .ci/run starts Slurm with tools/slurm_local.sh")
        pytest.skip("no Slurm cluster: start one with `tools/slurm_local.sh up /tmp/li-slurm` and set "
                    "LI_TEST_SLURM to the slurm.conf it names")
    if not os.path.isfile(conf):
        pytest.fail(f"LI_TEST_SLURM names {conf!r}, which is not a slurm.conf")
    return conf


@pytest.fixture
def slurm_conf(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The slurm.conf of the test cluster; `SLURM_CONF` names it for this test and its children.

    One test at a time uses the cluster (a lock file beside the conf, held for the whole test): it
    has one small node, and a test that fills it would queue another worker's jobs.
    """
    from filelock import FileLock

    conf = cluster_conf()
    monkeypatch.setenv("SLURM_CONF", conf)
    with FileLock(os.path.join(os.path.dirname(conf), "tests.lock"), timeout=600):
        yield conf


def slurm(conf: str, *argv: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """One Slurm client command against the test cluster (no stdin, bounded in time)."""
    env = {**os.environ, "SLURM_CONF": conf}
    result = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {result.returncode}: {result.stderr.strip()}")
    return result


def job_fields(conf: str, job_id: str) -> dict[str, str]:
    """`scontrol show job -o JOB` as a dict of its KEY=VALUE words (values here hold no spaces)."""
    line = slurm(conf, "scontrol", "show", "job", "-o", job_id).stdout.strip()
    return dict(word.split("=", 1) for word in line.split() if "=" in word)


def wait_state(conf: str, job_id: str, states: Iterable[str], timeout: float = 30) -> dict[str, str]:
    """Poll until the job's state is one of `states`; its scontrol fields then."""
    wanted = frozenset(states)
    deadline = time.monotonic() + timeout
    fields: dict[str, str] = {}
    while time.monotonic() < deadline:
        fields = job_fields(conf, job_id)
        if fields.get("JobState") in wanted:
            return fields
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} not in {sorted(wanted)} after {timeout} s: {fields.get('JobState')}")
