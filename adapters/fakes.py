"""Fakes shipped in the package so other programs' tests can swap adapters through the container."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from application.ports import NoticeResult, SpawnFailed, SpawnRequest
from domain.evidence import HostFacts, ProcessObservation


class ScriptedProber:
    """Liveness as scripted: pids not listed are absent."""

    def __init__(self, host_id: str = "host-a", boot_id: str = "boot-1") -> None:
        self.facts = HostFacts(host_id, boot_id)
        self.processes: dict[int, ProcessObservation] = {}

    def host(self) -> HostFacts:
        return self.facts

    def observe(self, pid: int) -> ProcessObservation:
        return self.processes.get(pid, ProcessObservation(pid, exists=False))

    def start(self, pid: int, create_time: float = 1000.0) -> None:
        self.processes[pid] = ProcessObservation(pid, True, create_time)

    def kill(self, pid: int) -> None:
        self.processes.pop(pid, None)

    def zombify(self, pid: int) -> None:
        seen = self.processes[pid]
        self.processes[pid] = ProcessObservation(pid, True, seen.create_time, zombie=True)

    def deny(self, pid: int) -> None:
        self.processes[pid] = ProcessObservation(pid, True, access_denied=True)


class RecordingNotifier:
    """Remembers every notice; answers with a scripted result."""

    def __init__(self, result: NoticeResult | None = None) -> None:
        self.sent: list[tuple[list[str], dict[str, Any]]] = []
        self.result = result or NoticeResult(ok=True, exit_code=0)

    def deliver(self, argv: Sequence[str], payload: Mapping[str, Any]) -> NoticeResult:
        self.sent.append((list(argv), dict(payload)))
        return self.result


class RecordingSignaller:
    def __init__(self, prober: ScriptedProber | None = None) -> None:
        self.signals: list[tuple[int, int]] = []
        self.prober = prober

    def signal_group(self, pgid: int, signum: int) -> bool:
        self.signals.append((pgid, signum))
        return self.prober is None or pgid in self.prober.processes


class ScriptedSpawner:
    """Hands out pids without starting anything; can be told to fail."""

    def __init__(self, prober: ScriptedProber | None = None, first_pid: int = 40000) -> None:
        self.prober = prober
        self.next_pid = first_pid
        self.fail_with: str | None = None
        self.spawned: list[SpawnRequest] = []

    def spawn(self, request: SpawnRequest) -> int:
        if self.fail_with is not None:
            raise SpawnFailed(self.fail_with)
        self.spawned.append(request)
        self.next_pid += 1
        if self.prober is not None:
            self.prober.start(self.next_pid)
        return self.next_pid
