"""The Slurm executor's adapter: `sbatch`, `scontrol`, `squeue`, `sacct` and `scancel`, run bounded (issue 17).

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

    def __init__(self, timeout: float = COMMAND_TIMEOUT, environ: Mapping[str, str] | None = None) -> None:
        self.timeout = timeout
        self.environ = dict(os.environ if environ is None else environ)

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

    def jobs(self, job_id: str) -> Sequence[SlurmJob] | None:
        """What scontrol (else squeue) and, when there is one, sacct say about the job; None when
        the controller could not be asked."""
        if not is_job_id(job_id):
            return ()
        rows = self._scontrol(job_id)
        if rows is None:
            rows = self._squeue(job_id)
        if rows is None:
            return None
        if not rows:  # the controller forgot it (MinJobAge): accounting may still know it
            rows = self._sacct(job_id)
        return rows

    def _scontrol(self, job_id: str) -> tuple[SlurmJob, ...] | None:
        result = self._query(["scontrol", "show", "job", "-o", job_id])
        if result is None:
            return None
        if result.returncode != 0:
            return () if _UNKNOWN_JOB in result.stderr else None
        return parse_scontrol(result.stdout)

    def _squeue(self, job_id: str) -> tuple[SlurmJob, ...] | None:
        result = self._query(["squeue", "--noheader", "-t", "all", "-j", job_id, f"--format={SQUEUE_FORMAT}"])
        if result is None:
            return None
        if result.returncode != 0:
            return () if _UNKNOWN_JOB in result.stderr else None
        return parse_squeue(result.stdout)

    def _sacct(self, job_id: str) -> tuple[SlurmJob, ...]:
        """Accounting's rows (none without slurmdbd: then the job is simply unknown)."""
        if shutil.which("sacct", path=self.environ.get("PATH")) is None:
            return ()
        result = self._query(["sacct", "--noheader", "--parsable2", "-X", "-j", job_id,
                              f"--format={SACCT_FIELDS}"])
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

    def _query(self, argv: list[str]) -> subprocess.CompletedProcess[str] | None:
        """A read or a cancel, with TZ=UTC; None when the tool is missing or did not answer in time."""
        try:
            return self._run(argv, env={**self.environ, "TZ": "UTC"})
        except (OSError, subprocess.TimeoutExpired):
            return None

    def _run(self, argv: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(argv, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True,
                                timeout=self.timeout, check=False, text=True, errors="replace")
        result.stdout = result.stdout[:MAX_TEXT_CHARS]
        return result


def _tail(text: str) -> str:
    """The last line of a tool's message, bounded and printable."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = lines[-1] if lines else "(no message)"
    return "".join(ch if ch.isprintable() else "?" for ch in last[-300:])
