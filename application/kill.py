"""The kill use case: record the request, then signal the run's own process group, never another's (D6)."""

from __future__ import annotations

from typing import Any, Final

from application.observe import Observer
from application.ports import (
    PROBE,
    SIGKILL,
    SIGTERM,
    Clock,
    ProcessProber,
    RunNotFound,
    RunStore,
    Signaller,
    StoreBusy,
    StoreRefused,
)
from application.reads import check_run_id, not_found, observe_or_refuse, unusable
from domain.contract import ContractError, ErrorKind
from domain.evidence import ALIVE, PID_RECYCLED, judge
from domain.run import Incarnation, RecordUnusable, Run, iso

SIGNALLED: Final = "signalled"
ALREADY_TERMINAL: Final = "already_terminal"
NO_PROCESS: Final = "no_process"
KILL_GRACE_DEFAULT: Final = 3.0


class Killer:
    """`li job kill`: reports what it did as an ordinary answer; a recorded end is never relabelled."""

    def __init__(
        self,
        store: RunStore,
        observer: Observer,
        prober: ProcessProber,
        signaller: Signaller,
        clock: Clock,
        grace: float = KILL_GRACE_DEFAULT,
        poll: float = 0.05,
    ) -> None:
        self.store = store
        self.observer = observer
        self.prober = prober
        self.signaller = signaller
        self.clock = clock
        self.grace = grace
        self.poll = poll

    def kill(self, run_id: str) -> dict[str, Any]:
        """Record `kill_requested_at` (unless an end is recorded), signal the group, report the action."""
        check_run_id(run_id)
        action = self._act(run_id)
        d = observe_or_refuse(self.observer, run_id, probe_ended=False).derivation
        return {"run_id": run_id, "action": action, "status": d.status, "terminal": d.terminal, "outcome": d.outcome}

    def _act(self, run_id: str) -> str:
        run = self._read(run_id)
        if run.end_recorded:
            return ALREADY_TERMINAL
        if self._conclusively_gone(run):
            return NO_PROCESS  # it stopped on its own: a kill request now would misattribute its end
        if self._foreign(run):
            return NO_PROCESS  # another host's run: not ours to signal, nor to mark for its reaper
        run = self._record_request(run_id)
        return ALREADY_TERMINAL if run.end_recorded else self._signal(run)

    def _read(self, run_id: str) -> Run:
        try:
            return self.store.read(run_id)
        except RunNotFound as exc:
            raise not_found(run_id) from exc
        except RecordUnusable as exc:
            raise unusable(run_id, exc) from exc

    def _conclusively_gone(self, run: Run) -> bool:
        incarnation = run.incarnation
        if incarnation is None:
            return False
        host = self.prober.host()
        seen = self.prober.observe(incarnation.pid) if incarnation.host_id == host.host_id else None
        return judge(incarnation, incarnation.pid, seen, host).conclusive

    def _foreign(self, run: Run) -> bool:
        here = self.prober.host().host_id
        return run.incarnation is not None and None not in (run.incarnation.host_id, here) \
            and run.incarnation.host_id != here

    def _record_request(self, run_id: str) -> Run:
        """Under the lock: stamp the request on a run with no recorded end; return the record as it stands."""
        seen: list[Run] = []
        now = iso(self.clock.now())

        def change(current: Run) -> Run | None:
            seen.append(current)
            if current.end_recorded or current.kill_requested_at is not None:
                return None
            return current.evolve(kill_requested_at=now)

        try:
            written = self.store.update(run_id, change)
        except RunNotFound as exc:
            raise not_found(run_id) from exc
        except RecordUnusable as exc:
            raise unusable(run_id, exc) from exc
        except (StoreBusy, StoreRefused) as exc:
            raise ContractError(ErrorKind.UNAVAILABLE, f"the kill request could not be recorded: {exc}",
                                {"run_id": run_id}) from exc
        return written if written is not None else seen[-1]

    def _signal(self, run: Run) -> str:
        """SIGTERM the group, SIGKILL after the grace only if it still lives; refuse an unproven leader."""
        incarnation = run.incarnation
        if incarnation is None or not self._is_ours(incarnation):
            return NO_PROCESS
        pgid = incarnation.pgid if incarnation.pgid is not None else incarnation.pid
        if pgid != incarnation.pid or pgid <= 1:
            return NO_PROCESS  # a run leads its own group; any other recorded group is not its to signal
        if not self.signaller.signal_group(pgid, SIGTERM):
            return NO_PROCESS
        deadline = self.clock.monotonic() + self.grace
        while self._group_lives(pgid) and self.clock.monotonic() < deadline:
            self.clock.sleep(self.poll)
        if self._group_lives(pgid) and self._leader_not_replaced(incarnation):
            self.signaller.signal_group(pgid, SIGKILL)
        return SIGNALLED

    def _is_ours(self, incarnation: Incarnation) -> bool:
        """Only a leader whose host, boot and create time match the record is this run's process."""
        seen = self.prober.observe(incarnation.pid)
        return judge(incarnation, incarnation.pid, seen, self.prober.host()).code == ALIVE

    def _group_lives(self, pgid: int) -> bool:
        return self.signaller.signal_group(pgid, PROBE)

    def _leader_not_replaced(self, incarnation: Incarnation) -> bool:
        """The leader is ours or gone; a different process now holding its pid is never signalled."""
        seen = self.prober.observe(incarnation.pid)
        return judge(incarnation, incarnation.pid, seen, self.prober.host()).code != PID_RECYCLED
