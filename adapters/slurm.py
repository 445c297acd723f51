"""The Slurm executor's adapter: `sbatch`, `scontrol`, `squeue`, `sacct` and `scancel`, run bounded.

Every command runs without a shell (argv only), with stdin closed and a bounded time; the ones
whose answers hold times run with TZ=UTC, so a submit time read on one host matches the one read on
another. A missing tool, a command that does not answer in time or fails is the cluster being
unavailable: `jobs` answers None, `submit` raises SpawnFailed, `cancel` answers False. What the
commands print is parsed by `domain/slurm.py` (bounded; a job name cannot spoof a field).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Final

from lionrun.application.ports import BatchRequest, EngineHandle, SpawnFailed
from lionrun.domain.slurm import (
    MAX_TEXT_CHARS,
    SACCT_FIELDS,
    SQUEUE_FORMAT,
    BatchStart,
    SlurmJob,
    is_job_id,
    parse_sacct,
    parse_sbatch,
    parse_scontrol,
    parse_squeue,
)

COMMAND_TIMEOUT: Final = 20.0  # seconds any one Slurm command may take
# Seconds a question about a job may take when the caller names no window (status, list, kill):
# a controller that has not answered by then is `cluster_unreachable` (advisory), never a stall.
READ_TIMEOUT: Final = 1.5
TOOLS: Final = ("sbatch", "squeue", "scontrol", "scancel")
_UNKNOWN_JOB = "Invalid job id"


def batch_start(environ: Mapping[str, str]) -> BatchStart:
    """What Slurm told the runner it started, from the variables it sets (SLURM_JOB_ID,
    SLURM_RESTART_COUNT, SLURM_CLUSTER_NAME); a restart count that is no count is None."""
    text = environ.get("SLURM_RESTART_COUNT")
    return BatchStart(job_id=environ.get("SLURM_JOB_ID", ""), restart_count=_count(text), restart_text=text,
                      cluster=environ.get("SLURM_CLUSTER_NAME") or None)


def _count(text: str | None) -> int | None:
    if text is None or text == "":
        return 0
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= 0 else None


class SlurmCluster:
    """The cluster the Slurm client tools on PATH (and `SLURM_CONF`) name."""

    def __init__(self, timeout: float = COMMAND_TIMEOUT, environ: Mapping[str, str] | None = None,
                 read_timeout: float = READ_TIMEOUT) -> None:
        self.timeout = timeout
        self.read_timeout = read_timeout
        self.environ = dict(os.environ if environ is None else environ)
        # When the controller last failed to answer: until `read_timeout` later every question is
        # answered None at once, so one call over many runs waits for one silence, not one each.
        self._silent_until = 0.0

    # --- submit ---------------------------------------------------------------------------------

    def submit(self, request: BatchRequest) -> EngineHandle:
        """`sbatch --parsable --no-requeue --job-name=RUN_ID --wrap 'exec RUNNER…'` (each word quoted).

        The job's output goes nowhere: the runner writes its console into the store itself. The
        job inherits `request.env` (sbatch exports its own environment to the job).
        """
        argv = ["sbatch", "--parsable", "--no-requeue", f"--job-name={request.run_id}",
                f"--chdir={request.cwd}", "--output=/dev/null", "--error=/dev/null"]
        if request.partition:
            argv.append(f"--partition={request.partition}")
        argv.extend(request.options)
        argv.extend(["--wrap", "exec " + shlex.join(request.argv)])
        try:
            result = self._run(argv, env=dict(request.env))
        except OSError as exc:
            raise SpawnFailed(f"sbatch could not be run: {exc.strerror or exc}") from exc
        except subprocess.TimeoutExpired as exc:
            raise SpawnFailed(f"sbatch did not answer within {self.timeout:g} s") from exc
        if result.returncode != 0:
            raise SpawnFailed(f"sbatch exited {result.returncode}: {_tail(result.stderr)}")
        parsed = parse_sbatch(result.stdout)
        if parsed is None:
            raise SpawnFailed(f"sbatch answered no job id: {_tail(result.stdout)}")
        job_id, cluster = parsed
        return EngineHandle("slurm", job_id=job_id, cluster=cluster)

    # --- evidence -------------------------------------------------------------------------------

    def jobs(self, job_id: str, timeout: float | None = None) -> Sequence[SlurmJob] | None:
        """What scontrol and, when the controller no longer knows the job, sacct say about it;
        None when the controller could not be asked within `timeout` (default `read_timeout`).

        A controller that did not answer is not asked again through squeue (it is the same
        controller), and not for `read_timeout` seconds by this process."""
        if not is_job_id(job_id):
            return ()
        bound = self._bound(timeout)
        if bound is None:
            return None
        rows = self._scontrol(job_id, bound)
        if rows is None:
            return None
        if not rows:  # the controller forgot it (MinJobAge): accounting may still know it
            bound = self._bound(timeout)
            rows = () if bound is None else self._sacct(job_id, bound)
        return rows

    def all_jobs(self, timeout: float | None = None) -> Mapping[str, Sequence[SlurmJob]] | None:
        """Every job the controller knows (`squeue -t all`, one call), by job id; None when it could
        not be asked. What a listing judges all its rows by (one question a call)."""
        bound = self._bound(timeout)
        if bound is None:
            return None
        result = self._query(["squeue", "--noheader", "-t", "all", f"--format={SQUEUE_FORMAT}"], bound)
        if result is None or result.returncode != 0:
            return None
        table: dict[str, list[SlurmJob]] = {}
        for job in parse_squeue(result.stdout):
            table.setdefault(job.job_id, []).append(job)
        return table

    def _bound(self, timeout: float | None) -> float | None:
        """The time the next question may take: what is left of the caller's window, at most the
        read bound; None when there is none left or the controller was just found silent."""
        if time.monotonic() < self._silent_until:
            return None
        bound = self.read_timeout if timeout is None else min(timeout, self.timeout)
        return bound if bound > 0.05 else None

    def _scontrol(self, job_id: str, bound: float) -> tuple[SlurmJob, ...] | None:
        result = self._query(["scontrol", "show", "job", "-o", job_id], bound)
        if result is None:
            return None
        if result.returncode != 0:
            if _UNKNOWN_JOB in result.stderr:
                return ()
            self._silent_until = time.monotonic() + self.read_timeout  # e.g. "Unable to contact"
            return None
        return parse_scontrol(result.stdout)

    def _sacct(self, job_id: str, bound: float) -> tuple[SlurmJob, ...]:
        """Accounting's rows (none without slurmdbd: then the job is simply unknown)."""
        if shutil.which("sacct", path=self.environ.get("PATH")) is None:
            return ()
        result = self._query(["sacct", "--noheader", "--parsable2", "-X", "-j", job_id,
                              f"--format={SACCT_FIELDS}"], bound)
        if result is None or result.returncode != 0:
            return ()
        return parse_sacct(result.stdout)

    # --- kill -----------------------------------------------------------------------------------

    def cancel(self, job_id: str, terminate: bool) -> bool:
        if not is_job_id(job_id):
            return False
        argv = ["scancel", "--signal=TERM", "--full", job_id] if terminate else ["scancel", job_id]
        result = self._query(argv)
        return result is not None and result.returncode == 0

    # --- doctor ---------------------------------------------------------------------------------

    def name(self) -> str | None:
        result = self._query(["scontrol", "show", "config"])
        if result is None or result.returncode != 0:
            return None
        for line in result.stdout.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "ClusterName" and value.strip():
                return value.strip()[:64]
        return None

    def health(self) -> list[str]:
        missing = [tool for tool in TOOLS if shutil.which(tool, path=self.environ.get("PATH")) is None]
        if missing:
            return [f"the Slurm tools {', '.join(missing)} are not on PATH"]
        result = self._query(["squeue", "--noheader", "-j", "1", "-o", "%i"])
        if result is None:
            return [f"squeue did not answer within {self.timeout:g} s"]
        if result.returncode != 0 and _UNKNOWN_JOB not in result.stderr:
            return [f"squeue exited {result.returncode}: {_tail(result.stderr)}"]
        return []

    # --- running the tools ----------------------------------------------------------------------

    def _query(self, argv: list[str], timeout: float | None = None) -> subprocess.CompletedProcess[str] | None:
        """A read or a cancel, with TZ=UTC; None when the tool is missing or did not answer in time
        (then the controller counts as silent for `read_timeout` seconds)."""
        try:
            return self._run(argv, env={**self.environ, "TZ": "UTC"}, timeout=timeout)
        except OSError:
            return None
        except subprocess.TimeoutExpired:
            self._silent_until = time.monotonic() + self.read_timeout
            return None

    def _run(self, argv: list[str], env: Mapping[str, str],
             timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(argv, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True,
                                timeout=self.timeout if timeout is None else timeout, check=False, text=True,
                                errors="replace")
        result.stdout = result.stdout[:MAX_TEXT_CHARS]
        return result


def _tail(text: str) -> str:
    """The last line of a tool's message, bounded and printable."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else "(no message)"
    return "".join(ch if ch.isprintable() else "?" for ch in last[-300:])
