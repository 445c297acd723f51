"""D10: the four-way partition of observed ids, disjoint and exhaustive."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct

from lionrun.domain.lifecycle import Derivation

TERMINAL = "terminal"
PENDING = "pending"
STOPPED_WITHOUT_END = "stopped_without_end"
UNRESOLVED_SPAWN = "unresolved_spawn"
BUCKETS = (TERMINAL, PENDING, STOPPED_WITHOUT_END, UNRESOLVED_SPAWN)


def bucket_of(derivation: Derivation) -> str:
    """Which of the four buckets one observed run belongs to.

    A recorded end wins over everything; a record the producer marked preparing is
    never "stopped" (there is no process to prove absent), only fresh or aged.
    """
    if derivation.terminal:
        return TERMINAL
    if derivation.aged_preparing:
        return UNRESOLVED_SPAWN
    if derivation.stopped:
        return STOPPED_WITHOUT_END
    return PENDING


class Partition(Struct, frozen=True):
    """Every observed id in exactly one bucket; ids that could not be observed are in `errored`, no bucket."""

    terminal: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    stopped_without_end: tuple[str, ...] = ()
    unresolved_spawn: tuple[str, ...] = ()
    errored: tuple[str, ...] = ()

    @property
    def all_terminal(self) -> bool:
        """True only when at least one id was asked about and every one was observed terminal."""
        unresolved = self.pending or self.stopped_without_end or self.unresolved_spawn or self.errored
        return bool(self.terminal) and not unresolved

    @property
    def settled(self) -> bool:
        """Nothing left that waiting could resolve: only pending ids hold the window open."""
        return not self.pending

    @property
    def needs_floor(self) -> bool:
        """Either special list is non-empty: an immediate answer would invite a hot loop."""
        return bool(self.stopped_without_end or self.unresolved_spawn)

    def bucket(self, run_id: str) -> str | None:
        """The bucket holding `run_id`, or None when it errored or was never observed."""
        for name in BUCKETS:
            if run_id in getattr(self, name):
                return name
        return None


def partition(observed: Sequence[tuple[str, Derivation | None]]) -> Partition:
    """Place every observed id in exactly one bucket, in first-seen order; None marks a per-id error.

    An id listed twice is placed once, by its first observation (a caller observes
    each distinct id once per pass, so both positions carry the same answer).
    """
    lists: dict[str, list[str]] = {name: [] for name in (*BUCKETS, "errored")}
    seen: set[str] = set()
    for run_id, derivation in observed:
        if run_id in seen:
            continue
        seen.add(run_id)
        lists["errored" if derivation is None else bucket_of(derivation)].append(run_id)
    return Partition(**{name: tuple(ids) for name, ids in lists.items()})
