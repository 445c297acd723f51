"""The envelope (D3), the closed error kinds, and the contract version (D2).

Every answer passes through `success`/`failure`, so this module stays off `dataclasses` (which
loads `inspect`, `ast` and `dis`: about a quarter of `li handshake`): the envelope, handshake,
version and help shapes are declared once in domain/wire.py, and tests/unit/test_wire.py holds
the dicts built here to those classes field for field.
"""

from __future__ import annotations

from enum import StrEnum

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it
if TYPE_CHECKING:
    from typing import Any

CONTRACT_VERSION = 1
MIN_SUPPORTED_VERSION = 1
IMPLEMENTATION = "lionrun"
EXIT_CONFIG = 78  # EX_CONFIG: a required module could not be imported (D8)
EXIT_IOERR = 74  # EX_IOERR: stdout refused the envelope (D8 transport fault: never parsed)


class ErrorKind(StrEnum):
    """The closed set of refusal kinds; a new kind costs a contract version."""

    NOT_FOUND = "not_found"
    INVALID_INPUT = "invalid_input"
    CONFLICT = "conflict"
    UNAVAILABLE = "unavailable"
    INTERNAL = "internal"


# The enum spells domain.vocabulary.ErrorKindName; tests/unit/test_contract.py holds them equal.
ERROR_KINDS: frozenset[str] = frozenset(kind.value for kind in ErrorKind)


class ContractError(Exception):
    """A refusal the dispatcher turns into an `ok: false` envelope."""

    def __init__(self, kind: ErrorKind, message: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail


def invalid(message: str, **detail: Any) -> ContractError:
    """An `invalid_input` refusal with an optional detail object."""
    return ContractError(ErrorKind.INVALID_INPUT, message, detail or None)


def success(data: dict[str, Any]) -> dict[str, Any]:
    """An `ok: true` envelope carrying `data`."""
    return {"ok": True, "contract_version": CONTRACT_VERSION, "data": data, "error": None}


def failure(kind: ErrorKind, message: str, detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """An `ok: false` envelope; `message` is for people and never parsed."""
    error = {"kind": ErrorKind(kind).value, "message": message, "detail": detail}
    return {"ok": False, "contract_version": CONTRACT_VERSION, "data": None, "error": error}


def is_well_formed(envelope: object) -> bool:
    """True when `envelope` has the D3 shape: version, `ok`, exactly one of data/error."""
    if not isinstance(envelope, dict):
        return False
    if not isinstance(envelope.get("ok"), bool) or type(envelope.get("contract_version")) is not int:
        return False
    data, error = envelope.get("data"), envelope.get("error")
    if (data is None) == (error is None):
        return False
    if error is not None:
        return isinstance(error, dict) and error.get("kind") in ERROR_KINDS and not envelope["ok"]
    return bool(envelope["ok"])
