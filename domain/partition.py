"""D10: the four-way partition of observed ids, disjoint and exhaustive."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from domain.lifecycle import Derivation

TERMINAL = "terminal"
PENDING = "pending"
STOPPED_WITHOUT_END = "stopped_without_end"
UNRESOLVED_SPAWN = "unresolved_spawn"


def bucket_of(derivation: Derivation) -> str:
    """Which of the four buckets one observed run belongs to."""
    if derivation.terminal:
        return TERMINAL
    if derivation.aged_preparing:
        return UNRESOLVED_SPAWN
    if derivation.stopped:
        return STOPPED_WITHOUT_END
    return PENDING


@dataclass(frozen=True)
class Partition:
    terminal: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    stopped_without_end: list[str] = field(default_factory=list)
    unresolved_spawn: list[str] = field(default_factory=list)
    errored: list[str] = field(default_factory=list)

    @property
    def all_terminal(self) -> bool:
        """True only when every requested id was observed and is terminal."""
        return not (self.pending or self.stopped_without_end or self.unresolved_spawn or self.errored)

    @property
    def settled(self) -> bool:
        """Nothing left that waiting could resolve: re-observing is pointless."""
        return not self.pending

    @property
    def needs_floor(self) -> bool:
        return bool(self.stopped_without_end or self.unresolved_spawn)


def partition(observed: Sequence[tuple[str, Derivation | None]]) -> Partition:
    """Place every observed id in exactly one bucket; ids that could not be observed are `errored`."""
    result = Partition()
    seen: set[str] = set()
    for run_id, derivation in observed:
        if run_id in seen:
            continue
        seen.add(run_id)
        bucket = "errored" if derivation is None else bucket_of(derivation)
        getattr(result, bucket).append(run_id)
    return result
