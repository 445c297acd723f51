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
_slot: Held | None = None  # the queue slot this runner holds (issue 29), kept open until it exits


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
        ended = work.finish_supervised(run_id, Workspace(console=sys.stdout, env={}, li_log=sys.stderr), finishing)
        _after_end_in_queue(ended)
        return exit_code_of(ended.status) if ended is not None else 70
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


def _slurm_stop_cause(job_id: str) -> Any:
    """Asked when the work ended cancelled in a Slurm job: whether Slurm stopped the job (its time
    limit, an outside scancel, a preemption) and what it said (issue 40 item 5). Slurm gives the
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
    console, carries the work's bytes alone (issue 27). A li log that cannot be opened leaves
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
    """A `queued` run waits here, its runner alive, until its queue gives it a slot (issue 29);
    True when a kill (SIGTERM, or a request recorded from another host) came first. The slot's
    descriptor is inheritable: the lean supervisor and the finisher exec'd in this process's
    place keep holding it, and the kernel lets go of it when the last of them exits or dies."""
    global _slot

    from lionrun.application.ports import RunNotFound, StoreBusy, StoreRefused
    from lionrun.application.queueing import QueueService
    from lionrun.domain.queue import QUEUED
    from lionrun.domain.run import RecordUnusable, iso

    try:
        run = store.read(run_id)
    except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
        run = None  # the work's own start meets the same fault and records it
    from lionrun.entrypoints.container import get_container

    queues = get_container().core.queues()
    if run is None or run.status != QUEUED or not run.queue or queues is None:
        if waiting is not None:
            os.close(waiting)
        return False
    clock = get_container().core.clock()
    if waiting is None:  # a store whose runner takes its own place (PostgreSQL), or started by hand
        try:
            waiting = queues.claim(run.queue, run_id, run.priority or 0).place
        except (StoreRefused, OSError) as exc:
            _say(f"no place in the queue {run.queue}: {exc}; the work starts now")
            return False
    stopped = _kill_asker(store, run_id)

    def say(why: str) -> None:
        _say(f"queued in {run.queue}: {why}")

    def record_start() -> None:
        started = iso(clock.now())

        def change(current: Any) -> Any:
            return None if current.end_recorded else current.evolve(status="running", started_at=started)

        for _ in range(6):
            try:
                store.update(run_id, change)
                return
            except StoreBusy:
                continue
            except (RunNotFound, RecordUnusable, StoreRefused, OSError):
                return

    from lionrun.application.outage import Outage

    outage = Outage(clock, float(get_container().config.store_outage()), _say)
    turn = QueueService(queues, clock).wait_turn(run_id, run.queue, waiting, stopped, say, record_start, outage)
    if turn.stopped:
        return True
    _slot = turn.slot
    _say(f"{run.queue} gave a slot; the work starts")
    return False


def _kill_asker(store: Any, run_id: str) -> Any:
    """`stopped()` for a runner that waits before its work (a queue's slot, other runs' ends): a
    SIGTERM came, or the record says a kill was asked (read at most every 0.5 s; a record that
    cannot be read asks nothing)."""
    import time

    from lionrun.application.ports import RunNotFound, StoreBusy, StoreRefused
    from lionrun.domain.run import RecordUnusable

    looked = [0.0]

    def stopped() -> bool:
        if _early_term:
            return True
        now = time.monotonic()
        if now - looked[0] < 0.5:
            return False
        looked[0] = now
        try:
            return bool(store.read(run_id).kill_requested_at is not None)
        except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
            return False

    return stopped


def _wait_for_dependencies(store: Any, run_id: str, work: Any) -> int | None:
    """A `waiting` run (issue 43) waits here, its runner alive, until the runs it was submitted
    --after end. Then its work starts (the record says `queued` when a kept queue's line is next,
    else `running`: None is returned), or, when one ended otherwise than asked, or a kill came
    first, the run ends `cancelled` without its work ever starting: the runner's exit status
    is returned. A runner killed here leaves the record `waiting`: the next observer on this
    host starts a new one (application/dependencies.Restarter)."""

    from lionrun.application.ports import RunNotFound, StoreBusy, StoreRefused
    from lionrun.domain.run import RecordUnusable
    from lionrun.domain.vocabulary import WAITING

    try:
        run = store.read(run_id)
    except (RunNotFound, RecordUnusable, StoreBusy, StoreRefused, OSError):
        return None  # the work's own start meets the same fault and records it
    if run.status != WAITING or not run.after:
        return None
    from lionrun.application.dependencies import DependencyWait, mark_started
    from lionrun.application.work import Workspace
    from lionrun.domain.dependencies import DEPENDENCY_FAILED, FAILED, describe_failure
    from lionrun.domain.lifecycle import exit_code_of
    from lionrun.domain.queue import QUEUED
    from lionrun.domain.run import iso
    from lionrun.entrypoints.container import get_container

    clock = get_container().core.clock()
    stopped = _kill_asker(store, run_id)

    observer = get_container().reads.observer()
    verdict = DependencyWait(observer, clock).wait(run, stopped, _say)
    workspace = Workspace(console=sys.stdout, env={}, li_log=sys.stderr)
    if verdict is None:
        _say("killed while it waited for other runs; the work never started")
        ended = work.end_unstarted(run_id, workspace, "cancelled")
        return exit_code_of(ended.status) if ended is not None else 70
    failed = verdict.failed_by
    if verdict.action == FAILED and failed is not None:
        _say(f"not starting the work: {describe_failure(failed)}")
        ended = work.end_unstarted(run_id, workspace, DEPENDENCY_FAILED, {"failed_dependency": {
            "run_id": failed.run_id, "condition": failed.condition, "status": failed.status,
            "outcome": failed.outcome}})
        return exit_code_of(ended.status) if ended is not None else 70
    queues = get_container().core.queues()
    try:
        kept = queues is not None and bool(run.queue) and queues.settings(run.queue) is not None
    except (StoreRefused, OSError):
        kept = False
    mark_started(store, run_id, QUEUED if kept else "running", iso(clock.now()))
    _say(f"the runs it waited for ended as asked; {'it enters the queue ' + str(run.queue) if kept else 'the work starts'}")
    return None


def _after_end_in_queue(ended: Any) -> None:
    """A run that ended rate limited pauses its queue until the vendor's reset (issue 29)."""
    from lionrun.domain.queue import RATE_LIMITED

    spent = isinstance(getattr(ended, "extra", None), dict) and ended.extra.get("tokens")  # issue 42
    if ended is None or not getattr(ended, "queue", None) or (
            getattr(ended, "reason_code", None) != RATE_LIMITED and not spent):
        return
    from lionrun.application.ports import StoreRefused
    from lionrun.application.queueing import QueueService
    from lionrun.entrypoints.container import get_container

    queues = get_container().core.queues()
    if queues is None:
        return
    try:
        paused = QueueService(queues, get_container().core.clock()).after_end(ended)
    except (StoreRefused, OSError) as exc:
        _say(f"the queue could not be paused after the rate limit, or its budget counted: {exc}")
        return
    if paused is not None and paused.paused_until and (ended.reason_code == RATE_LIMITED
                                                       or paused.paused_by == ended.run_id):
        why = "rate limited" if ended.reason_code == RATE_LIMITED else "its token budget for the window is spent"
        _say(f"queue {paused.name} paused until {paused.paused_until} ({why})")


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
