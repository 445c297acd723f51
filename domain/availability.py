"""D7: a value read from disk carries whether it could be established at all."""

from __future__ import annotations

from typing import Any, Generic, Self, TypeVar

from lionrun.domain.serialise import Wire

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


class Availability(Wire, Generic[T], frozen=True, kw_only=True):
    """`available: false` means the value could not be established — never "none"."""

    available: bool
    value: T | None
    reason_code: str | None
    detail: str | None

    @classmethod
    def of(cls, value: T) -> Self:
        return cls(available=True, value=value, reason_code=None, detail=None)

    @classmethod
    def unavailable(cls, reason_code: str, detail: str | None = None) -> Self:
        return cls(available=False, value=None, reason_code=reason_code, detail=detail)

    @classmethod
    def recast(cls, other: Availability[Any]) -> Self:
        """The same reading under a more specific wire class (the store's answer, as a verb publishes it)."""
        return cls(available=other.available, value=other.value, reason_code=other.reason_code,
                   detail=other.detail)


class ConsoleAvailability(Availability[str], frozen=True, kw_only=True):
    """The console tail; `truncated` says whether the tail is the whole log (null when unavailable)."""

    value: str | None
    truncated: bool | None

    @classmethod
    def tail(cls, text: str, truncated: bool) -> ConsoleAvailability:
        return cls(available=True, value=text, reason_code=None, detail=None, truncated=truncated)

    @classmethod
    def of(cls, value: str) -> Self:
        return cls(available=True, value=value, reason_code=None, detail=None, truncated=False)

    @classmethod
    def unavailable(cls, reason_code: str, detail: str | None = None) -> Self:
        return cls(available=False, value=None, reason_code=reason_code, detail=detail, truncated=None)


class ManifestAvailability(Availability[dict[str, Any]], frozen=True, kw_only=True):
    value: dict[str, Any] | None


class UsageAvailability(Availability[dict[str, Any]], frozen=True, kw_only=True):
    """Metering (deferred in the ADR, shaped by D7): an unreadable meter is unavailable, never zero."""

    value: dict[str, Any] | None
