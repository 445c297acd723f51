"""Flow specs, parsed purely: steps with id, model, prompt and depends_on; no cycles, no unknowns."""

from __future__ import annotations

import re
from collections.abc import Mapping

from domain.request import DEFAULT_PROVIDER, Leg, check_prompt, invalid, parse_model

MAX_STEPS = 64
STEP_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
PLACEHOLDER = re.compile(r"\{\{\s*steps\.([A-Za-z0-9_-]+)\s*\}\}")
_TOP_KEYS = frozenset({"name", "description", "model", "steps"})
_STEP_KEYS = frozenset({"id", "model", "prompt", "depends_on"})


def parse_flow(spec: object) -> tuple[Leg, ...]:
    """A flow spec (already decoded from YAML/JSON) as legs in a dependency-respecting order."""
    if not isinstance(spec, Mapping):
        raise invalid("the flow spec must be a mapping with a `steps` list")
    unknown = sorted(str(k) for k in spec if k not in _TOP_KEYS)
    if unknown:
        raise invalid(f"unknown flow spec keys: {', '.join(unknown)}", keys=unknown)
    default = spec.get("model", DEFAULT_PROVIDER)
    if not isinstance(default, str):
        raise invalid("the flow's `model` must be a string")
    steps = spec.get("steps")
    if not isinstance(steps, list) or not steps:
        raise invalid("the flow spec needs a non-empty `steps` list")
    if len(steps) > MAX_STEPS:
        raise invalid(f"a flow has at most {MAX_STEPS} steps", steps=len(steps))
    legs = [_step(raw, index, default) for index, raw in enumerate(steps)]
    _check_ids(legs)
    ordered = topological(legs)
    _check_placeholders(ordered)
    return ordered


def _step(raw: object, index: int, default: str) -> Leg:
    where = f"step {index + 1}"
    if not isinstance(raw, Mapping):
        raise invalid(f"{where} must be a mapping with id, prompt, and optionally model, depends_on")
    unknown = sorted(str(k) for k in raw if k not in _STEP_KEYS)
    if unknown:
        raise invalid(f"{where} has unknown keys: {', '.join(unknown)}", keys=unknown)
    step_id = raw.get("id")
    if not isinstance(step_id, str) or not STEP_ID.match(step_id):
        raise invalid(f"{where} needs an `id` of letters, digits, _ and - (at most 64)", id=str(step_id))
    model = raw.get("model", default)
    prompt = raw.get("prompt")
    if not isinstance(model, str):
        raise invalid(f"step {step_id!r}: `model` must be a string")
    if not isinstance(prompt, str):
        raise invalid(f"step {step_id!r} needs a `prompt` string")
    check_prompt(prompt, f"prompt of step {step_id!r}")
    return Leg(step_id, parse_model(model), prompt, _depends(raw.get("depends_on"), step_id))


def _depends(value: object, step_id: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise invalid(f"step {step_id!r}: `depends_on` must be a step id or a list of them")
    return tuple(dict.fromkeys(value))


def _check_ids(legs: list[Leg]) -> None:
    ids = [leg.id for leg in legs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise invalid(f"duplicate step ids: {', '.join(duplicates)}", duplicates=duplicates)
    for leg in legs:
        missing = [d for d in leg.depends_on if d not in ids]
        if missing:
            raise invalid(f"step {leg.id!r} depends on unknown steps: {', '.join(missing)}",
                          step=leg.id, unknown=missing)


def topological(legs: list[Leg]) -> tuple[Leg, ...]:
    """Kahn's order (stable on input order); a cycle is refused, naming the steps on it."""
    pending = {leg.id: set(leg.depends_on) for leg in legs}
    order: list[Leg] = []
    while pending:
        ready = [leg for leg in legs if leg.id in pending and not pending[leg.id]]
        if not ready:
            cycle = sorted(pending)
            raise invalid(f"the flow has a dependency cycle among: {', '.join(cycle)}", cycle=cycle)
        for leg in ready:
            order.append(leg)
            del pending[leg.id]
        for needs in pending.values():
            needs.difference_update(leg.id for leg in ready)
    return tuple(order)


def ancestors(legs: tuple[Leg, ...], step_id: str) -> set[str]:
    """Every step upstream of `step_id`, transitively."""
    parents = {leg.id: leg.depends_on for leg in legs}
    seen: set[str] = set()
    stack = list(parents.get(step_id, ()))
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(parents.get(current, ()))
    return seen


def _check_placeholders(legs: tuple[Leg, ...]) -> None:
    for leg in legs:
        named = set(PLACEHOLDER.findall(leg.prompt or ""))
        outside = sorted(named - ancestors(legs, leg.id))
        if outside:
            raise invalid(f"step {leg.id!r} uses answers of steps that are not upstream of it: "
                          f"{', '.join(outside)}", step=leg.id, placeholders=outside)


def render(prompt: str, answers: Mapping[str, str | None]) -> str:
    """Put upstream answers into `{{steps.<id>}}` placeholders (an absent answer renders empty).

    Trailing newlines are dropped, as a shell's `$(...)` does, so `echo "got {{steps.a}}"`
    reads "got 42" rather than carrying the upstream's final newline into the middle of a line.
    """
    return PLACEHOLDER.sub(lambda m: (answers.get(m.group(1)) or "").rstrip("\r\n"), prompt)


def describe(spec: object) -> str | None:
    """The flow's name, when it has one."""
    name = spec.get("name") if isinstance(spec, Mapping) else None
    return name if isinstance(name, str) else None
