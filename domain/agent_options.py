"""How one agent CLI is run (its permission mode and extra argv) as a request records it.

Its own module so that a status, which reads these options back from a run's request.json,
does not import the request's parsers, budgets and retry policy (start-up).
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from lionrun.domain.contract import ContractError, invalid
from lionrun.domain.vocabulary import PERMISSION_MODES, PermissionMode

MAX_PROVIDER_ARGS = 64


class AgentRunOptions(Struct, frozen=True):
    """How one agent CLI is run: its permission mode (None: the CLI's own default) and extra argv."""

    permission_mode: PermissionMode | None = None
    provider_args: tuple[str, ...] = ()

    def arguments(self, provider: str) -> list[str]:
        """The argv this adds to the provider's command: the mode's documented flag, then the args verbatim."""
        from lionrun.domain.agents import agent, is_agent

        flags = agent(provider).permission_flags.get(self.permission_mode or "", ()) if is_agent(provider) else ()
        return [*flags, *self.provider_args]

    def to_dict(self) -> dict[str, Any]:
        return {"permission_mode": self.permission_mode, "provider_args": list(self.provider_args)}

    @classmethod
    def from_dict(cls, data: object) -> AgentRunOptions:
        if not isinstance(data, dict):
            raise TypeError("agent options must be an object")
        args = data.get("provider_args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise TypeError("provider_args must be a list of strings")
        return cls(parse_permission_mode(data.get("permission_mode")), tuple(args))


def agents_in(raw: bytes) -> dict[str, AgentRunOptions]:
    """The agent options a stored `request.json` records (none recorded: each CLI's own defaults).

    Raises `Untrusted` (with its reason code) for bytes that are not such a request.
    """
    from lionrun.domain.availability import MALFORMED
    from lionrun.domain.untrusted import Untrusted, parse_json

    data = parse_json(raw, "request.json")
    agents = data.get("agents") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(agents, dict | None):
        raise Untrusted(MALFORMED, "request.json records no agents object")
    try:
        return {str(name): AgentRunOptions.from_dict(value) for name, value in (agents or {}).items()}
    except (TypeError, ContractError) as exc:
        raise Untrusted(MALFORMED, f"request.json agents: {exc}") from None


def parse_permission_mode(text: object, where: str = "--permission-mode") -> PermissionMode | None:
    """`read-only`, `edits` or `full`; None when not given."""
    if text is None:
        return None
    for mode in PERMISSION_MODES:
        if text == mode:
            return mode
    raise invalid(f"{where} must be one of {', '.join(PERMISSION_MODES)}, not {text!r}",
                  permission_mode=str(text)[:100])


def parse_provider_args(values: object, where: str = "--provider-arg") -> tuple[str, ...]:
    """Extra arguments passed verbatim to an agent CLI: a list of strings, no NUL, at most 64."""
    if values is None:
        return ()
    if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
        raise invalid(f"{where} must be a list of strings")
    if len(values) > MAX_PROVIDER_ARGS:
        raise invalid(f"{where} is given more than {MAX_PROVIDER_ARGS} times")
    if any("\0" in v for v in values):
        raise invalid(f"{where} cannot carry a NUL character")
    return tuple(values)

