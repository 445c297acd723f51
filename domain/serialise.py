"""How a wire class becomes JSON-ready data: msgspec Structs, encoded by msgspec without a Python walk.

Every answer `li` gives is a frozen Struct deriving from `Wire` (domain/wire.py); `to_wire`
turns it into plain dicts and lists in field order. The published JSON Schema is generated from
the very same classes by tools/gen_schema.py (pydantic is imported there and in tests, never here):
`__pydantic_config__` is a plain dict pydantic reads, and `Minimum` is a marker whose schema hook
pydantic calls (msgspec ignores an `Annotated` marker it does not know), so nothing at run time
needs pydantic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from msgspec import Struct, to_builtins


class Wire(Struct, frozen=True, kw_only=True):
    """Base of every wire class. Consumers must tolerate fields they do not know (D2): extras allowed.

    A subclass says `kw_only=True` again (msgspec applies it to the fields a class declares)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "allow"}

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict of this answer, fields in declaration order."""
        data: dict[str, Any] = to_builtins(self)
        return data


def to_wire(value: Any) -> Any:
    """Structs (and dataclasses) become dicts in field order, tuples and lists lists, dicts are copied."""
    return to_builtins(value)


class Minimum:
    """`Annotated[int, Minimum(1)]`: the schema says `minimum` (read by pydantic in gen_schema only)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound

    def __get_pydantic_json_schema__(self, core: Any, handler: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        schema = handler(core)
        schema["minimum"] = self.bound
        return schema


class Open:
    """`Annotated[str, Open(values)]`: an open vocabulary. The schema accepts any string
    and lists the values in use only as `examples`, never as an `enum`: a later value is no contract
    break, so a consumer that validates against the schema must not break on one (D2)."""

    def __init__(self, values: tuple[str, ...]) -> None:
        self.values = tuple(values)

    def __get_pydantic_json_schema__(self, core: Any, handler: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        schema = handler(core)
        schema["examples"] = list(self.values)
        return schema
