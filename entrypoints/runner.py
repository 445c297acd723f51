"""`python -m lionrun.entrypoints.runner RUN_ID`: the detached child that does a run's work and records its end."""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lionrun.application.ports import Held

_early_term = False
_slot: Held | None = None  # the queue slot this runner holds, kept open until it exits


def _remember_term(signum: int, frame: FrameType | None) -> None:
    global _early_term
    _early_term = True


def provider_environment(run_id: str, artifacts: str) -> dict[str, str]:
    """What every leg sees: this environment less what is li's own (the shared store's URL, which
    may carry a password: an agent that could reach the store could rewrite other hosts' runs),
    plus the run's id and artifacts folder."""
    from lionrun.domain.run import RUN_TAG, the_works_environment

    env = the_works_environment(os.environ)
    env.update({RUN_TAG: run_id, "LI_ARTIFACTS_DIR": artifacts})
    return env


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _remember_term)  # a SIGTERM before the work exists still cancels it
    from lionrun.adapters.proctree import become_subreaper

    become_subreaper()  # what the work starts stays the run's (kept across the lean supervisor's exec)
    args = sys.argv[1:] if argv is None else argv
    waiting = _place_in_line()
    from lionrun.adapters.proctree import name_process
    from lionrun.domain.run import is_run_id

    if args[:1] == ["--finish"]:
        if len(args) > 1 and is_run_id(args[1]):
            name_process("end", args[1])
        finishing = _finishing(args[1:])
        if finishing is None:
            print("usage: python -m lionrun.entrypoints.runner --finish RUN_ID CAPTURE_FD EXIT TIMED_OUT CANCELLED "
                  "BEGAN LEG_BEGAN", file=sys.stderr)
            return 2
        return perform(args[1], finishing)
    if len(args) != 1 or not is_run_id(args[0]):
        print("usage: python -m lionrun.entrypoints.runner RUN_ID", file=sys.stderr)
        return 2
    name_process("run", args[0])
    return perform(args[0], waiting=waiting)


def _place_in_line() -> Held | None:
    """The descriptor the submitter handed over that holds this run's place in its queue's line,
    taken out of the environment before the work (or the supervisor's exec) could inherit the name."""
    from lionrun.application.ports import Held
    from lionrun.domain.queue import QUEUE_FD

    raw = os.environ.pop(QUEUE_FD, None)
    if raw is None or not raw.isdigit():
        return None
    fd = int(raw)
    try:
        os.set_inheritable(fd, False)  # the place is this runner's alone, never the work's
    except OSError:
        return None
    return Held(fd)


def _finishing(args: list[str]) -> Any:
    """What the lean supervisor hands the finisher (`adapters/supervisor.py` writes this argv):
    the run, the descriptor of the leg's captured stdout, its exit code (`-` when it never
    started), 0/1 timed out (`idle`: by the idle watchdog), 0/1 cancelled, and the runner's and the leg's monotonic start."""
    from lionrun.adapters.supervision import captured_lines
    from lionrun.application.work import SupervisedEnd
    from lionrun.domain.run import is_run_id

    try:
        run_id, capture, code, timed_out, cancelled, began, leg_began = args
        exit_code = None if code == "-" else int(code)
        times = float(began), float(leg_began)
        if not is_run_id(run_id):
            return None
        lines = captured_lines(int(capture))
    except (ValueError, OSError):
        return None
    return SupervisedEnd(lines=lines, exit_code=exit_code, timed_out=timed_out in ("1", "idle"),
                         cancelled=cancelled == "1", began=times[0], leg_began=times[1], idle=timed_out == "idle")


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


def perform(run_id: str, finishing: Any = None, waiting: Held | None = None) -> int:
    """Everything from the container: the work service, its hook, the store's run folder.

    A one-leg run on a store whose run folder this host holds is handed to the lean supervisor
    while its leg runs (`_hand_over`: this process exec's it), which exec's this module again
    with `--finish` to record the end (`finishing`)."""
    from lionrun.application.work import Workspace
    from lionrun.domain.lifecycle import exit_code_of
    from lionrun.entrypoints.container import get_container

    store = get_container().core.store()
    _li_log_on_stderr(store, run_id)
    if finishing is None and os.environ.get("SLURM_JOB_ID"):  # Slurm started this runner (or li ran in a job)
        refused = _attach_batch(store, run_id)
        if refused is not None:
            return refused
    work = get_container().submit.work(after_end=get_container().notices.notices().send)
    if os.environ.get("SLURM_JOB_ID"):
        work.stop_cause = _slurm_stop_cause(os.environ["SLURM_JOB_ID"])
    _cut_what_the_broker_started(finishing)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    if finishing is not None:
        return _finish(work, run_id, finishing)
    unstarted = _wait_for_dependencies(store, run_id, work)
    if unstarted is not None:
        return unstarted
    if _wait_for_slot(store, run_id, waiting):
        work.mark_cancelled()  # killed while queued: the end is recorded, the work never starts
    artifacts = _work_artifacts_dir(store, run_id)
    workspace = Workspace(console=sys.stdout, env=provider_environment(run_id, artifacts), li_log=sys.stderr)
    _hand_over(work, store, run_id, workspace)
    _cancel_on_sigterm(work)
    with store.forward_console(run_id):  # a shared store takes the console in as it comes
        ended = work.perform(run_id, workspace)
    _after_end_in_queue(ended)
    return exit_code_of(ended.status) if ended is not None else 70


def _finish(work: Any, run_id: str, finishing: Any) -> int:
    """The finisher: record the end of the leg the lean supervisor watched."""
    from lionrun.application.work import Workspace
    from lionrun.domain.lifecycle import exit_code_of

    ended = work.finish_supervised(run_id, Workspace(console=sys.stdout, env={}, li_log=sys.stderr), finishing)
    _after_end_in_queue(ended)
    return exit_code_of(ended.status) if ended is not None else 70


def _slurm_stop_cause(job_id: str) -> Any:
    """Asked when the work ended cancelled in a Slurm job: whether Slurm stopped the job (its time
    limit, an outside scancel, a preemption) and what it said. Slurm gives the
    runner `KillWait` seconds between its SIGTERM and its SIGKILL: the question is bounded."""

    def cause() -> Any:
        from lionrun.adapters.slurm import SlurmCluster
        from lionrun.domain.slurm import announced_stop

        return announced_stop(job_id, SlurmCluster().jobs(job_id, timeout=STOP_CAUSE_TIMEOUT))

    return cause


STOP_CAUSE_TIMEOUT = 2.0  # seconds the runner asks Slurm why it was stopped


def _cut_what_the_broker_started(finishing: Any) -> None:
    """The finisher a lean supervisor exec's stops what the work left running before the end, as
    the supervisor did: the children the run's broker started for the work are not among it
    (adapters/broker.py). The supervisor hands over their mark in LI_BROKER_CUT, taken out here."""
    cut = os.environ.pop("LI_BROKER_CUT", None)
    if finishing is not None and cut:
        from lionrun.entrypoints.container import get_container

        get_container().submit.child_groups().cut = cut.encode()


def _li_log_on_stderr(store: Any, run_id: str) -> None:
    """From here on this process's stderr (fd 2, kept by the lean supervisor and the finisher it
    exec's) is the run's li log: every line li says of the run goes there, and its stdout, the
    console, carries the work's bytes alone. A li log that cannot be opened leaves
    stderr as the submitter gave it (the console): a line said there beats a line lost."""
    from lionrun.application.ports import StoreRefused

    try:
        with store.li_log_sink(run_id) as li_log:
            sys.stderr.flush()
            os.dup2(li_log, 2)
    except (StoreRefused, OSError):
        return
    if hasattr(sys.stderr, "reconfigure"):
        sys.stderr.reconfigure(line_buffering=True)


def _say(text: str) -> None:
    """One of the runner's own lines, to the run's li log (its stderr)."""
    print(f"li runner: {text}", file=sys.stderr, flush=True)


def _wait_for_slot(store: Any, run_id: str, waiting: Held | None) -> bool:
    """A `queued` run waits for its queue's slot (application/queueing.wait_for_slot); True when
    a kill (SIGTERM, or a request recorded from another host) came first. The slot's descriptor
    is inheritable: the lean supervisor and the finisher exec'd in this process's place keep
    holding it, and the kernel lets go of it when the last of them exits or dies."""
    global _slot

    from lionrun.application.outage import Outage
    from lionrun.application.queueing import wait_for_slot
    from lionrun.entrypoints.container import get_container

    clock = get_container().core.clock()
    outage = Outage(clock, float(get_container().config.store_outage()), _say)
    turn = wait_for_slot(store, get_container().core.queues(), clock, run_id, waiting, _kill_asker(store, run_id), _say, outage)
    if turn is None:
        if waiting is not None:
            os.close(waiting)
        return False
    if turn.stopped:
        return True
    _slot = turn.slot
    return False


def _kill_asker(store: Any, run_id: str) -> Any:
    """`stopped()` for this runner while it waits before its work: its SIGTERM, or a recorded kill."""
    from lionrun.application.kill_asked import kill_asker
    from lionrun.entrypoints.container import get_container

    return kill_asker(store, get_container().core.clock(), run_id, lambda: _early_term)


def _wait_for_dependencies(store: Any, run_id: str, work: Any) -> int | None:
    """A `waiting` run waits for the runs it was submitted --after
    (application/dependencies.StartAfter): None when its work may go on, else the exit status."""
    from lionrun.application.dependencies import StartAfter
    from lionrun.application.work import Workspace
    from lionrun.entrypoints.container import get_container

    workspace = Workspace(console=sys.stdout, env={}, li_log=sys.stderr)
    start = StartAfter(store, get_container().reads.observer(), get_container().core.clock(), get_container().core.queues(), _say)
    return start.wait(run_id, _kill_asker(store, run_id),
                      lambda reason, noted: work.end_unstarted(run_id, workspace, reason, noted))


def _after_end_in_queue(ended: Any) -> None:
    """A run that ended rate limited pauses its queue; the tokens it spent count in its budget."""
    from lionrun.application.queueing import after_end_in_queue
    from lionrun.entrypoints.container import get_container

    if ended is not None and ended.queue:
        after_end_in_queue(get_container().core.queues(), get_container().core.clock(), ended, _say)


def _hand_over(work: Any, store: Any, run_id: str, workspace: Any) -> None:
    """Become the lean supervisor when the run allows it (returns only when it does not).

    SIGTERM is held back from the first look on: one that comes while the leg is prepared
    stays pending across the exec and reaches the supervisor, which then starts nothing; one
    that came before (its handler may run only a few calls later: `hand_over` asks again just
    before the exec) makes this process keep the run and cancel it. `LI_SUPERVISOR=full` keeps every run in
    the full runner; a store that takes the console in (PostgreSQL) always does.
    """
    watch = getattr(store, "watch_folder", None)
    if watch is None or os.environ.get("LI_SUPERVISOR", "lean") != "lean":
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    # a worktree's setup runs inside `supervise`: a SIGTERM held back meanwhile stops it at once
    work.stop_asked = lambda: _early_term or signal.SIGTERM in signal.sigpending()
    try:
        if _early_term:
            return
        supervision = work.supervise(run_id, workspace)
        if supervision is None:
            return
        from lionrun.adapters.supervision import hand_over
        from lionrun.application.ports import StoreRefused
        from lionrun.entrypoints.settings import runner_command

        try:
            folder = watch(run_id) if supervision.kill_watch else None
        except StoreRefused:
            folder = None  # no look at the record: a SIGTERM still stops the work
        hand_over(supervision, folder, runner_command(), lambda: _early_term, die_with_runner=_slot is not None)
        if folder is not None:
            os.close(folder)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _attach_batch(store: Any, run_id: str) -> int | None:
    """A run submitted to Slurm: take the console over as stdout (the job's own output goes nowhere), then
    attach this runner's incarnation by the fenced `preparing` → `started` write. Returns the exit
    status when the work must not run here (another attempt's, restarted, no longer preparing)."""
    from lionrun.adapters.slurm import batch_start
    from lionrun.application.batch import BatchAttach
    from lionrun.entrypoints.container import get_container

    attach = BatchAttach(store, get_container().core.prober(), get_container().core.clock())
    if not attach.is_batch(run_id):
        return None
    with store.console_sink(run_id) as console:
        sys.stdout.flush()
        os.dup2(console, 1)  # stderr is the li log already (`_li_log_on_stderr`)
    result = attach.attach(run_id, batch_start(os.environ), os.getpid(), os.getpgid(0))
    if result.refused is not None:
        _say(f"not running the work: {result.refused}")
        return 75
    return None


def _work_artifacts_dir(files: Any, run_id: str) -> str:
    """The run's artifacts folder, made private and never through a link; the work runs even when
    it cannot be made (its end, with artifacts unavailable, is still recorded)."""
    from lionrun.application.ports import WorkFolderRefused

    try:
        return str(files.work_artifacts_dir(run_id))
    except WorkFolderRefused as exc:
        _say(str(exc))
        return exc.where


if __name__ == "__main__":
    sys.exit(main())
