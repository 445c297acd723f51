"""The envelope (D3), the closed error kinds, and the contract version (D2)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, ClassVar, get_args

from domain.serialise import Minimum, Wire
from domain.vocabulary import ErrorKindName

CONTRACT_VERSION = 1
MIN_SUPPORTED_VERSION = 1
IMPLEMENTATION = "lionrun"
EXIT_CONFIG = 78  # EX_CONFIG: a required module could not be imported (D8)


class ErrorKind(StrEnum):
    """The closed set of refusal kinds; a new kind costs a contract version."""

    NOT_FOUND = "not_found"
    INVALID_INPUT = "invalid_input"
    CONFLICT = "conflict"
    UNAVAILABLE = "unavailable"
    INTERNAL = "internal"


ERROR_KINDS: frozenset[str] = frozenset(get_args(ErrorKindName))
if {k.value for k in ErrorKind} != ERROR_KINDS:  # the enum spells the one vocabulary; never let them drift
    raise ImportError("ErrorKind and domain.vocabulary.ErrorKindName disagree")


class ContractError(Exception):
    """A refusal the dispatcher turns into an `ok: false` envelope."""

    def __init__(self, kind: ErrorKind, message: str, detail: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail


@dataclass(frozen=True, kw_only=True)
class ErrorBody(Wire):
    """Why a request was refused. `message` is for a person; `detail` is not contractual."""

    kind: ErrorKindName
    message: str
    detail: dict[str, Any] | None = None


_ONE_OF_DATA_OR_ERROR: dict[str, Any] = {
    "oneOf": [
        {"properties": {"ok": {"const": True}, "data": {"type": "object"}, "error": {"type": "null"}}},
        {"properties": {"ok": {"const": False}, "data": {"type": "null"}, "error": {"type": "object"}}},
    ]
}


@dataclass(frozen=True, kw_only=True)
class Envelope(Wire):
    """The one JSON object `li ... --machine` writes to stdout; exactly one of data/error is set."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "allow", "json_schema_extra": _ONE_OF_DATA_OR_ERROR}

    ok: bool
    contract_version: Annotated[int, Minimum(1)]
    data: dict[str, Any] | None
    error: ErrorBody | None



# --- what every start-up may answer (D2) ------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HandshakeData(Wire):
    """`li handshake` (D2)."""

    contract_version: Annotated[int, Minimum(1)]
    min_supported_version: Annotated[int, Minimum(1)]
    implementation: str
    implementation_version: str
    module: str


@dataclass(frozen=True, kw_only=True)
class VersionData(Wire):
    """`li --version`."""

    version: str
    implementation: str


@dataclass(frozen=True, kw_only=True)
class HelpData(Wire):
    """`li ... --help`: the help text is the answer."""

    help: str



def success(data: dict[str, Any]) -> dict[str, Any]:
    """An `ok: true` envelope carrying `data`."""
    return Envelope(ok=True, contract_version=CONTRACT_VERSION, data=data, error=None).to_wire()


def failure(kind: ErrorKind, message: str, detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """An `ok: false` envelope; `message` is for people and never parsed."""
    error = ErrorBody(kind=ErrorKind(kind).value, message=message, detail=detail)
    return Envelope(ok=False, contract_version=CONTRACT_VERSION, data=None, error=error).to_wire()


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
