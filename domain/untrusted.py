"""Bytes a run's work could have written, parsed the way a careful server parses a request.

Everything under a run folder is untrusted input: a record, a manifest or a request may be of
any size and nesting, or not UTF-8 at all. These pure functions bound and judge it, and fail
with a reason code per item, so one hostile file never fails a whole list, wait or prune.
"""

from __future__ import annotations

import json
from typing import Final

from lionrun.domain.availability import MALFORMED, TOO_DEEP, TOO_LARGE

MAX_JSON_DEPTH: Final = 32  # records and manifests nest a handful of levels; 32 is generous
RECORD_MAX_BYTES: Final = 1 << 20  # a record is a few KiB; 1 MiB is far beyond any real one
MANIFEST_MAX_BYTES: Final = 8 << 20  # one entry per leg: thousands of legs still fit
TEXT_MAX_BYTES: Final = 4 << 20  # instruction.txt and request.json (a prompt is at most 256 KiB)


class Untrusted(ValueError):
    """Untrusted bytes that cannot be used, with a machine-readable reason."""

    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


def check_size(size: int, limit: int, what: str) -> None:
    """Refuse `what` when it is larger than `limit` bytes."""
    if size > limit:
        raise Untrusted(TOO_LARGE, f"{what} is larger than {limit} bytes")


def parse_json(raw: bytes, what: str, max_depth: int = MAX_JSON_DEPTH) -> object:
    """UTF-8 JSON of bounded nesting; any other bytes raise `Untrusted` (never RecursionError)."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise Untrusted(TOO_DEEP, f"{what} nests deeper than {max_depth} levels") from None
    except UnicodeDecodeError as exc:
        raise Untrusted(MALFORMED, f"{what} is not UTF-8: {exc.reason} at byte {exc.start}") from None
    except ValueError as exc:
        raise Untrusted(MALFORMED, f"{what} is not valid JSON: {exc}") from None
    if depth_exceeds(value, max_depth):
        raise Untrusted(TOO_DEEP, f"{what} nests deeper than {max_depth} levels")
    return value


def depth_exceeds(value: object, max_depth: int) -> bool:
    """True when arrays and objects nest deeper than `max_depth`; iterative, so any depth is safe."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
