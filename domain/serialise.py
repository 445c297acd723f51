"""How a wire class becomes JSON-ready data, with the standard library only (start-up time is a feature).

Every answer `li` gives is a frozen dataclass deriving from `Wire` (domain/wire.py); `to_wire`
turns it into plain dicts and lists in field order. The published JSON Schema is generated from
the very same classes by tools/gen_schema.py (pydantic is imported there and in tests, never here):
`__pydantic_config__` is a plain dict pydantic reads, and `Minimum` is a marker whose schema hook
pydantic calls, so nothing at run time needs pydantic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, ClassVar


@dataclass(frozen=True, kw_only=True)
class Wire:
    """Base of every wire class. Consumers must tolerate fields they do not know (D2): extras allowed."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "allow"}

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict of this answer, fields in declaration order."""
        data: dict[str, Any] = to_wire(self)
        return data


def to_wire(value: Any) -> Any:
    """Dataclasses become dicts (field order kept), tuples and lists become lists, dicts are copied."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_wire(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list | tuple):
        return [to_wire(item) for item in value]
    if isinstance(value, Mapping):
        return {key: to_wire(item) for key, item in value.items()}
    return value


class Minimum:
    """`Annotated[int, Minimum(1)]`: the schema says `minimum` (read by pydantic in gen_schema only)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound

    def __get_pydantic_json_schema__(self, core: Any, handler: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        schema = handler(core)
        schema["minimum"] = self.bound
        return schema
