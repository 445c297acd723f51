"""D7: a value read from disk carries whether it could be established at all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# Reason codes used across read-derived fields.
MISSING = "missing"
UNREADABLE = "unreadable"
MALFORMED = "malformed"
NOT_YET_WRITTEN = "not_yet_written"
NOT_RECORDED = "not_recorded"
# What a run folder holds where a regular file or a folder belongs (the work may plant anything).
NOT_REGULAR_FILE = "not_regular_file"  # a link, FIFO, device, socket or folder
NOT_A_DIRECTORY = "not_a_directory"  # a link or a file where a folder belongs
TOO_LARGE = "too_large"
TOO_DEEP = "too_deep"
RUN_ID_MISMATCH = "run_id_mismatch"  # a record whose inner run_id names another run


@dataclass(frozen=True)
class Availability(Generic[T]):
    """`{available, value, reason_code, detail}`: `available: false` is never "none"."""

    available: bool
    value: T | None
    reason_code: str | None = None
    detail: str | None = None

    @classmethod
    def of(cls, value: T) -> Availability[T]:
        return cls(True, value, None, None)

    @classmethod
    def unavailable(cls, reason_code: str, detail: str | None = None) -> Availability[T]:
        return cls(False, None, reason_code, detail)

    def to_wire(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "value": self.value,
            "reason_code": self.reason_code,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class ConsoleText:
    """The console tail: an availability plus whether the tail is the whole log (D7)."""

    text: Availability[str]
    truncated: bool | None

    def to_wire(self) -> dict[str, Any]:
        wire = self.text.to_wire()
        wire["truncated"] = self.truncated
        return wire
