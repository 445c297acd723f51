"""D9: the terminal notice, pure: which template applies, its rendering, and the JSON payload."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from msgspec import Struct

from lionrun.domain.lifecycle import recorded_outcome
from lionrun.domain.run import Run
from lionrun.domain.vocabulary import FailureClass as FailureClass  # its one home

PLACEHOLDERS: Final = ("run_id", "status", "outcome", "reason_code", "label", "payload")

DEFAULT_TIMEOUT_SECONDS: Final = 30.0

# Where a run's template came from, recorded beside it at submit.
FROM_FLAG: Final = "flag"
FROM_ENV: Final = "env"
FROM_CONFIG: Final = "config"


class NotifyTemplateError(ValueError):
    """A configured template that cannot be an argv (bad quoting, empty, wrong type)."""


class NotifyChoice(Struct, frozen=True):
    """The template a run will use (None when nothing is configured) and where it came from."""

    template: list[str] | None
    source: str | None


def split_template(text: str) -> list[str]:
    """Split a `--notify` / `LI_NOTIFY_COMMAND` string into an argv with shlex; never a shell."""
    import shlex  # only a notify command is split: every read loads this module for its default timeout

    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise NotifyTemplateError(f"notify command cannot be split: {exc}") from exc
    if not argv:
        raise NotifyTemplateError("notify command is empty")
    return argv


def template_of(entry: object) -> list[str]:
    """A config-file `notify` entry: a string (split like the flag) or a list of strings."""
    if isinstance(entry, str):
        return split_template(entry)
    if isinstance(entry, list) and entry and all(isinstance(a, str) for a in entry):
        return list(entry)
    raise NotifyTemplateError("notify must be a command string or a non-empty list of strings")


def choose(flag: str | None, env_value: str | None, config_entry: object = None) -> NotifyChoice:
    """`--notify`, else `LI_NOTIFY_COMMAND`, else the config's `notify`; captured once, at submit."""
    if flag is not None:
        return NotifyChoice(split_template(flag), FROM_FLAG)
    if env_value:
        return NotifyChoice(split_template(env_value), FROM_ENV)
    if config_entry is not None:
        return NotifyChoice(template_of(config_entry), FROM_CONFIG)
    return NotifyChoice(None, None)


def payload(run: Run) -> dict[str, Any]:
    """The notice's JSON body: enough to decide to go and read the state, and nothing more."""
    return {
        "run_id": run.run_id,
        "kind": run.kind,
        "label": run.label,
        "status": run.status,
        "terminal": run.end_recorded,
        "outcome": recorded_outcome(run),
        "reason_code": run.reason_code,
        "finished_at": run.finished_at,
    }


def payload_text(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False, sort_keys=True)


def render(template: Sequence[str], body: dict[str, Any]) -> list[str]:
    """Fill the known placeholders in each argument; everything else is left exactly as written.

    Each argument stays one argument whatever a value contains (no shell, no re-splitting);
    `{payload}` is the whole JSON payload; a null value renders as the empty string.
    """
    values = {name: _text(body.get(name)) for name in PLACEHOLDERS if name != "payload"}
    values["payload"] = payload_text(body)
    return [_fill(argument, values) for argument in template]


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _fill(argument: str, values: dict[str, str]) -> str:
    out, i = [], 0
    while i < len(argument):
        name = _placeholder_at(argument, i)
        if name is None:
            out.append(argument[i])
            i += 1
        else:
            out.append(values[name])
            i += len(name) + 2
    return "".join(out)


def _placeholder_at(argument: str, i: int) -> str | None:
    if argument[i] != "{":
        return None
    for name in PLACEHOLDERS:
        if argument.startswith(name + "}", i + 1):
            return name
    return None
