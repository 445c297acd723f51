"""Write the published JSON Schema (`contract/v1/*.json`) from the wire Structs in `domain.wire`.

pydantic is imported here (and in tests) only: `li` serialises the same classes with msgspec
(`domain.serialise.to_wire`). pydantic reads dataclasses, not msgspec Structs, so each Struct is
mirrored as the frozen dataclass it was declared as before (same name, docstring, fields in the
same order, types, defaults and `__pydantic_config__`): the schema stays byte-identical, which
tests/contract/test_schema_committed.py holds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "contract", "v1")
SCHEMA_BASE = "https://lionrun.invalid/contract/v1/"


def mirrored(tp: Any, memo: dict[type[Any], type[Any]]) -> Any:
    """`tp` with every msgspec Struct in it replaced by its dataclass mirror."""
    import types
    import typing

    import msgspec

    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return dataclass_of(tp, memo)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return typing.Annotated[(mirrored(args[0], memo), *tp.__metadata__)]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(mirrored(arg, memo) for arg in args)]  # noqa: UP007 - built from a tuple
    if origin in (list, dict) and args:
        return origin[tuple(mirrored(arg, memo) for arg in args)]
    return tp


def dataclass_of(cls: type[Any], memo: dict[type[Any], type[Any]]) -> type[Any]:
    """The frozen, keyword-only dataclass mirror of one wire Struct (memoised: one per Struct)."""
    import dataclasses
    import typing

    import msgspec

    if cls not in memo:
        hints = typing.get_type_hints(cls, include_extras=True)
        namespace: dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                     "__doc__": cls.__dict__.get("__doc__"), "__annotations__": {},
                                     "__pydantic_config__": cls.__pydantic_config__}
        mirror = type(cls.__name__, (), namespace)
        memo[cls] = mirror
        for field in msgspec.structs.fields(cls):
            namespace["__annotations__"][field.name] = mirrored(hints[field.name], memo)
            if field.default is not msgspec.NODEFAULT:
                setattr(mirror, field.name, field.default)
        mirror.__annotations__ = namespace["__annotations__"]
        memo[cls] = dataclasses.dataclass(frozen=True, kw_only=True)(mirror)
    return memo[cls]


def schema_of(cls: type[Any], name: str) -> dict[str, Any]:
    """The JSON Schema of one wire class, with a stable `$id` and title."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(dataclass_of(cls, {})).json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"{SCHEMA_BASE}{name}.json", **schema}


def all_schemas() -> dict[str, dict[str, Any]]:
    """Every published schema by file stem: the envelope and one per verb's data."""
    sys.path.insert(0, REPO)
    from lionrun.domain.wire import VERBS, Envelope

    schemas = {"envelope": schema_of(Envelope, "envelope")}
    schemas.update({name: schema_of(cls, name) for name, cls in VERBS.items()})
    return schemas


def render(schema: dict[str, Any]) -> str:
    """The committed text of one schema: stable key order, trailing newline."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def expected() -> dict[str, str]:
    """File name -> committed text, as the wire classes say it must be."""
    return {f"{name}.json": render(schema) for name, schema in all_schemas().items()}


def stale(folder: str = OUT) -> list[str]:
    """Files that differ from the wire classes, are missing, or are left over."""
    want = expected()
    present = {n for n in os.listdir(folder) if n.endswith(".json")} if os.path.isdir(folder) else set()
    problems = [f"extra: {n}" for n in sorted(present - set(want))]
    for name, text in sorted(want.items()):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            problems.append(f"missing: {name}")
        elif _read(path) != text:
            problems.append(f"differs: {name}")
    return problems


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def write(folder: str = OUT) -> list[str]:
    os.makedirs(folder, exist_ok=True)
    want = expected()
    for name in os.listdir(folder):
        if name.endswith(".json") and name not in want:
            os.unlink(os.path.join(folder, name))
    for name, text in want.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    return sorted(want)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed schema is stale")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale()
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    for name in write():
        print(f"wrote contract/v1/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
