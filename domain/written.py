"""What a person or an agent writes and li reads off the hot path, checked by pydantic models, each
refusal one line in li's words (`invalid_input`).

Imported only inside the handlers that read such input (`li orchestrate flow`'s spec, `li mcp`'s
tool arguments): never by a read or an `li agent` submit, which would pay for pydantic.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from lionrun.domain.contract import ContractError, ErrorKind

MAX_STEPS = 64
STEP_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"

# pydantic's error types in li's words; anything else keeps pydantic's own message.
WORDS = {
    "missing": "is missing",
    "extra_forbidden": "is not a key li knows",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "model_type": "must be a mapping",
    "dict_type": "must be a mapping",
    "int_type": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_pattern_mismatch": "must be letters, digits, _ and - (at most 64, not starting with _ or -)",
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "less_than_equal": "must be at most {le}",
    "too_short": "must not be empty",
    "too_long": "has at most {max_length} items",
    "finite_number": "must be a finite number",
}


def _one_or_many(value: object) -> object:
    """`depends_on: a` means `[a]`; None means none."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else value


class StepSpec(BaseModel):
    """One step of a flow: an id, a prompt, and optionally a model and the steps it depends on."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: Annotated[str, Field(pattern=STEP_ID_PATTERN)]
    prompt: str
    model: str | None = None
    depends_on: Annotated[list[str], BeforeValidator(_one_or_many)] = []


class FlowSpec(BaseModel):
    """A flow spec as decoded from YAML or JSON; `name` and `description` are free (only shown)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: Any = None
    description: Any = None
    model: str | None = None
    steps: Annotated[list[StepSpec], Field(min_length=1, max_length=MAX_STEPS)]


def where(loc: Sequence[int | str], top: str) -> str:
    """A pydantic location in a writer's words: "step 2 `prompt`", "`steps`"."""
    words: list[str] = []
    parts = list(loc)
    if len(parts) >= 2 and parts[0] == "steps" and isinstance(parts[1], int):
        words.append(f"step {parts[1] + 1}")
        parts = parts[2:]
    for part in parts:
        words.append(f"item {part + 1}" if isinstance(part, int) else f"`{part}`")
    return " ".join(words) or top


def one_line(error: ValidationError, top: str) -> ContractError:
    """pydantic's first complaint as one `invalid_input` line naming where and what, with how many
    more there are; the detail names the field and pydantic's error type."""
    found = sorted(error.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
    first = found[0]  # a key li does not know first: `stepz` says more than "`steps` is missing"
    loc = tuple(first["loc"])
    context = first.get("ctx") or {}
    what = WORDS.get(first["type"]) or _said_by_pydantic(str(first["msg"]))
    with suppress(KeyError, IndexError, ValueError):  # a message whose context lacks a name stays as it is
        what = what.format(**context)
    more = f" (and {len(found) - 1} more problem{'s' if len(found) > 2 else ''})" if len(found) > 1 else ""
    field = ".".join(str(p) for p in loc)
    return ContractError(ErrorKind.INVALID_INPUT, f"{top}: {where(loc, 'the whole')} {what}{more}",
                         {"field": field or None, "problem": first["type"]})


def _said_by_pydantic(message: str) -> str:
    """pydantic's own words for a type WORDS does not name: "Input should be X" as "must be X"."""
    message = message.rstrip(".")
    head = "Input should be "
    return "must be " + message[len(head):] if message.startswith(head) else message[:1].lower() + message[1:]


def flow_spec(spec: object) -> FlowSpec:
    """The spec as a FlowSpec, or one `invalid_input` line."""
    if not isinstance(spec, dict):
        raise ContractError(ErrorKind.INVALID_INPUT, "the flow spec must be a mapping with a `steps` list")
    try:
        return FlowSpec.model_validate(spec)
    except ValidationError as exc:
        raise one_line(exc, "flow spec") from None
