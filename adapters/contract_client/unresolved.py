"""Obligation 8: the client's policy for runs a bounded wait does not resolve."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from lionrun.adapters.contract_client.envelope import Reply
from lionrun.adapters.contract_client.reading import RunView

PENDING, STOPPED, UNRESOLVED_SPAWN = "pending", "stopped_without_end", "unresolved_spawn"
TERMINAL, ERRORED = "terminal", "errored"


@dataclass(frozen=True)
class UnresolvedPolicy:
    """Give up on an id after `max_attempts` unresolved observations, backing off between them."""

    max_attempts: int = 5
    backoff_initial: float = 1.0
    backoff_factor: float = 2.0
    backoff_max: float = 60.0

    def backoff(self, attempts: int) -> float:
        """Seconds to leave before the next observation of an id seen unresolved `attempts` times."""
        if attempts <= 0:
            return 0.0
        return min(self.backoff_max, self.backoff_initial * self.backoff_factor ** (attempts - 1))


@dataclass
class _Entry:
    bucket: str
    attempts: int
    last_seen: float


@dataclass(frozen=True)
class Standing:
    """Where the ledger stands on one id after an observation."""

    bucket: str
    attempts: int
    abandoned: bool


#: Ids the ledger remembers at most; a long-lived `li mcp` must not grow without bound.
LEDGER_CAPACITY = 4096


class UnresolvedLedger:
    """The client's own store of unresolved ids: attempts, last observation, abandonment.

    An id leaves when it is seen ended or unknown. Past `capacity` the ledger forgets the
    least recently observed abandoned id first, so an id still being counted keeps its
    attempts (forgetting it would let it be retried for ever); only a ledger full of ids
    still being counted forgets the least recently observed of those.
    """

    def __init__(
        self,
        policy: UnresolvedPolicy,
        clock: Callable[[], float],
        capacity: int = LEDGER_CAPACITY,
    ) -> None:
        self.policy = policy
        self.capacity = max(1, capacity)
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def observe(self, run_id: str, bucket: str, window_expired: bool) -> Standing:
        """Record one observation; pending counts only when the window closed on it."""
        with self._lock:
            if bucket in (TERMINAL, ERRORED):
                self._entries.pop(run_id, None)
                return Standing(bucket, 0, False)
            entry = self._entries.setdefault(run_id, _Entry(bucket, 0, self._clock()))
            self._entries.move_to_end(run_id)
            if bucket != PENDING or window_expired:
                entry.attempts += 1
            entry.bucket, entry.last_seen = bucket, self._clock()
            self._evict()
            return self._standing(entry)

    def forget(self, run_id: str) -> None:
        """Drop an id some other read showed ended or unknown: nothing is left to count."""
        with self._lock:
            self._entries.pop(run_id, None)

    def _evict(self) -> None:
        """Trim to capacity: oldest abandoned ids first, then the oldest of the rest."""
        while len(self._entries) > self.capacity:
            limit = self.policy.max_attempts
            oldest = next((k for k, e in self._entries.items() if e.attempts >= limit), None)
            self._entries.pop(oldest if oldest is not None else next(iter(self._entries)))

    def _standing(self, entry: _Entry) -> Standing:
        return Standing(entry.bucket, entry.attempts, entry.attempts >= self.policy.max_attempts)

    def delay_before(self, run_ids: Sequence[str]) -> float:
        """Seconds to back off before observing these ids; 0 when any of them is worth a look now."""
        with self._lock:
            waits = [self._remaining(self._entries.get(run_id)) for run_id in run_ids]
        live = [w for w in waits if w is not None]
        if not live or any(w == 0.0 for w in live):
            return 0.0
        return min(live)

    def _remaining(self, entry: _Entry | None) -> float | None:
        """None for an abandoned id (it sets no pace); 0 for one that may be observed now."""
        if entry is None or entry.bucket == PENDING:
            return 0.0
        if entry.attempts >= self.policy.max_attempts:
            return None
        due = entry.last_seen + self.policy.backoff(entry.attempts)
        return max(0.0, due - self._clock())

    def abandoned(self) -> list[str]:
        with self._lock:
            return [k for k, e in self._entries.items() if e.attempts >= self.policy.max_attempts]


@dataclass(frozen=True)
class WaitReport:
    """One `li job wait`, classified: the producer's partition plus the client's policy on it."""

    reply: Reply
    runs: tuple[RunView, ...] = ()
    standings: Mapping[str, Standing] = field(default_factory=dict)
    errors: Mapping[str, Any] = field(default_factory=dict)

    @property
    def abandoned(self) -> list[str]:
        return [run_id for run_id, s in self.standings.items() if s.abandoned]

    @property
    def settled(self) -> bool:
        """Every id is a run that ended, or one abandoned under the policy (stop, tell a human).

        An id li answered with a per-id error (`not_found`, an unreadable record) is no run that
        ended: it is in `errors` and keeps the wait unsettled, though it is not waited on again
        (see `waiting_on`). An unknown id once made a wait read `settled: true`.
        """
        return (self.reply.ok and not self.errors
                and all(s.bucket == TERMINAL or s.abandoned for s in self.standings.values()))

    @property
    def waiting_on(self) -> list[str]:
        """Ids worth observing again: not ended, not abandoned, no per-id error."""
        return [run_id for run_id, s in self.standings.items() if not is_finished(s)]

    def to_wire(self) -> dict[str, Any]:
        return {
            **self.reply.to_wire(),
            "runs": [view.to_wire() for view in self.runs],
            "policy": {run_id: asdict(s) for run_id, s in self.standings.items()},
            "abandoned": self.abandoned,
            "errors": dict(self.errors),
            "waiting_on": self.waiting_on,
            "settled": self.settled,
        }


def is_finished(standing: Standing | None) -> bool:
    """Nothing more to observe of this id: it ended, errored (observing it again changes nothing),
    or was abandoned. Not the same as settled: an errored id is finished but never settled."""
    return standing is not None and (standing.bucket in (TERMINAL, ERRORED) or standing.abandoned)


def bucket_of(run_id: str, entry: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    """Which of the producer's disjoint buckets holds an id (its error channel first)."""
    if entry.get("error") is not None:
        return ERRORED
    for name in (STOPPED, UNRESOLVED_SPAWN, PENDING):
        listed = data.get(name)
        if isinstance(listed, list) and run_id in listed:
            return name
    return TERMINAL if entry.get("terminal") is True else PENDING
