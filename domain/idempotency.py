"""An idempotent submit: `--idempotency-key KEY` names one run for as long as it is in the store.

A consumer that crashed between spawn and reading the envelope, or got exit 74 (stdout refused the
envelope), submits again with the same key and receives the first run's handle: same run id,
nothing new started. The same key with a different request is `conflict`. Pure: the key's checks,
the name a store files it under, and the request's fingerprint that "the same request" compares.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Final

from lionrun.domain.contract import ContractError, ErrorKind

if TYPE_CHECKING:
    from lionrun.domain.request import RunRequest

KEY_MAX_CHARS: Final = 256
FLAG: Final = "--idempotency-key"


def check_key(value: object, where: str = FLAG) -> str:
    """A key is 1-256 characters of text with no control character; anything else is invalid_input."""
    if not isinstance(value, str) or not value or len(value) > KEY_MAX_CHARS:
        raise ContractError(ErrorKind.INVALID_INPUT, f"{where} must be 1-{KEY_MAX_CHARS} characters",
                            {"argument": where})
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ContractError(ErrorKind.INVALID_INPUT, f"{where} must not hold control characters",
                            {"argument": where})
    return value


def key_name(key: str) -> str:
    """The name a store files a key under: its sha256 in hex (any text becomes one safe name)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def fingerprint(request: RunRequest) -> str:
    """What "the same request" means: the sha256 of the whole request as a run would record it
    (request.json) and its instruction, in canonical JSON."""
    canonical = json.dumps({"request": request.to_dict(), "instruction": request.instruction},
                           sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
