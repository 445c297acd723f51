"""`python -m entrypoints.runner RUN_ID`: the detached child that does a run's work and records its end."""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

_early_term = False


def _remember_term(signum: int, frame: FrameType | None) -> None:
    global _early_term
    _early_term = True


def provider_environment(run_id: str, artifacts: str) -> dict[str, str]:
    """What every leg sees: this environment (less li's own store URL) plus the run's id and artifacts folder."""
    # The shared store's URL (it may carry a password) is li's, never the work's: an agent that
    # could reach the store could rewrite other hosts' runs.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "LI_STORE")}
    from domain.run import RUN_TAG

    env.update({RUN_TAG: run_id, "LI_ARTIFACTS_DIR": artifacts})
    return env


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _remember_term)  # a SIGTERM before the work exists still cancels it
    args = sys.argv[1:] if argv is None else argv
    from entrypoints.dataclass_code import install

    install()  # its dataclasses reuse compiled methods, as `li`'s do (issue 18)
    from domain.run import is_run_id

    if len(args) != 1 or not is_run_id(args[0]):
        print("usage: python -m entrypoints.runner RUN_ID", file=sys.stderr)
        return 2
    return perform(args[0])


def _cancel_on_sigterm(work: Any) -> None:
    """SIGTERM cancels the work. The handler only notes it: stopping legs starts threads and
    takes locks, which a handler interrupting the main thread inside `Thread.start` could
    deadlock on; a canceller thread does that part instead."""
    requested = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        work.mark_cancelled()  # before the main thread can go on to record an end
        requested.set()

    def canceller() -> None:
        requested.wait()
        work.cancel()

    threading.Thread(target=canceller, name="li-canceller", daemon=True).start()
    signal.signal(signal.SIGTERM, on_term)
    if _early_term:
        on_term(signal.SIGTERM, None)


def perform(run_id: str) -> int:
    """Everything from the container: the work service, its hook, the store's run folder."""
    from application.work import Workspace
    from domain.lifecycle import exit_code_of
    from entrypoints.container import get_container

    container = get_container()
    store = container.core.store()
    if os.environ.get("SLURM_JOB_ID"):  # Slurm started this runner (or li was run inside a Slurm job)
        refused = _attach_batch(container, store, run_id)
        if refused is not None:
            return refused
    work = container.submit.work(after_end=container.notices.notices().send)
    _cancel_on_sigterm(work)
    artifacts = _work_artifacts_dir(store, run_id)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    with store.forward_console(run_id):  # a shared store takes the console in as it comes
        ended = work.perform(run_id, Workspace(console=sys.stdout, env=provider_environment(run_id, artifacts)))
    return exit_code_of(ended.status) if ended is not None else 70


def _attach_batch(container: Any, store: Any, run_id: str) -> int | None:
    """A run submitted to Slurm: take the console over (the job's own output goes nowhere), then
    attach this runner's incarnation by the fenced `preparing` → `started` write. Returns the exit
    status when the work must not run here (another attempt's, restarted, no longer preparing)."""
    from application.batch import BatchAttach

    attach = BatchAttach(store, container.core.prober(), container.core.clock())
    if not attach.is_batch(run_id):
        return None
    with store.console_sink(run_id) as console:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(console, 1)
        os.dup2(console, 2)
    result = attach.attach(run_id, os.environ, os.getpid(), os.getpgid(0))
    if result.refused is not None:
        print(f"li runner: not running the work: {result.refused}", flush=True)
        return 75
    return None


def _work_artifacts_dir(files: Any, run_id: str) -> str:
    """The run's artifacts folder, made private and never through a link; the work runs even when
    it cannot be made (its end, with artifacts unavailable, is still recorded)."""
    from application.ports import WorkFolderRefused

    try:
        return str(files.work_artifacts_dir(run_id))
    except WorkFolderRefused as exc:
        print(f"li runner: {exc}", flush=True)
        return exc.where


if __name__ == "__main__":
    sys.exit(main())
