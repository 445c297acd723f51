"""Flow specs, parsed purely: steps with id, model, prompt and depends_on; no cycles, no unknowns."""

from __future__ import annotations

import re
from collections.abc import Mapping

from lionrun.domain.request import DEFAULT_PROVIDER, Leg, check_prompt, invalid, parse_model

PLACEHOLDER = re.compile(r"\{\{\s*steps\.([A-Za-z0-9_-]+)\s*\}\}")


def parse_flow(spec: object) -> tuple[Leg, ...]:
    """A flow spec (already decoded from YAML/JSON) as legs in a dependency-respecting order.

    Its shape (keys, types, the id pattern, 1 to 64 steps) is checked by pydantic
    (`domain/written.py`, imported here so only a flow submit pays for it); what pydantic cannot
    say — a model li knows, a prompt li takes, ids unique, no cycle, placeholders upstream — here.
    """
    from lionrun.domain.written import flow_spec

    checked = flow_spec(spec)
    default = checked.model or DEFAULT_PROVIDER
    legs = []
    for step in checked.steps:
        check_prompt(step.prompt, f"prompt of step {step.id!r}")
        legs.append(Leg(step.id, parse_model(step.model or default), step.prompt,
                        tuple(dict.fromkeys(step.depends_on))))
    _check_ids(legs)
    ordered = topological(legs)
    _check_placeholders(ordered)
    return ordered


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
