"""The agent CLIs li runs, one module each, behind one small interface (`AgentCli`).

Everything li knows of one CLI lives in its module (`claude.py`, `codex.py`, `gemini.py`, `opencode.py`): the
headless argv, the permission flags, how it resumes a session, what refuses it here, how its
stream reads for people (`beats`), for its provider (`outcome`) and for a budget (`spend`), what
its exit statuses mean, and the doctor's check of it (as data). The rest of li asks this registry (`agent`, `agents`)
instead of branching per CLI, so adding one is a new module, its line in `MODULES`, and its
recorded streams under tests/fixtures/transcripts/ (`opencode.py` was added so).

A module is imported on first use only: a read (`li job status`) that needs none of them pays
for none.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:
    from lionrun.domain.agents.spend import Report
    from lionrun.domain.agents.stream import Beat, Outcome

# The registry: each agent CLI's name (its provider name in a model spec) to its module.
MODULES: Final = {
    "claude": "lionrun.domain.agents.claude",
    "codex": "lionrun.domain.agents.codex",
    "gemini": "lionrun.domain.agents.gemini",
    "opencode": "lionrun.domain.agents.opencode",
}
NAMES: Final = tuple(MODULES)


class DoctorProbe(NamedTuple):
    """What `li doctor` checks of a CLI: that `executable` is on PATH, else a warning and `fix`."""

    executable: str
    fix: str


def _no_exit_reason(found: Outcome, exit_code: int) -> str | None:
    return None


def _no_root_refusal(arguments: Sequence[str], env: Mapping[str, str]) -> str | None:
    return None


def _no_spend(event: dict[str, Any]) -> Report | None:
    return None


def _no_ask_arguments(servers: Mapping[str, Any]) -> list[str]:
    return []


class AgentCli(NamedTuple):
    """One agent CLI as li drives it. Pure: functions of plain values, no I/O."""

    name: str  # the provider name in a model spec (`claude/opus`)
    executable: str  # what is looked up on the run's PATH
    arguments: Callable[[str | None, Sequence[str]], list[str]]  # headless argv after the executable (model, extra)
    permission_flags: Mapping[str, tuple[str, ...]]  # --permission-mode's value to the CLI's own flag
    resume: tuple[str, ...]  # the argv before a session id that resumes it (a reply)
    owns: Callable[[dict[str, Any]], bool]  # whether a stream event (a JSON object with `type`) is this CLI's
    beats: Callable[[dict[str, Any]], list[Beat]]  # what one of its events shows a person
    outcome: Callable[[list[dict[str, Any]]], Outcome]  # what its whole stream means to its provider
    doctor: DoctorProbe
    asks: bool = False  # its permission prompts can be put to a person through li (`--permission-mode ask`)
    # How it meets a permission prompt headless, in a refusal's words: the route li hands it when it
    # `asks` (`--permission-prompt-tool`), else what it does instead of asking.
    prompts: str = "it has no prompt li can answer"
    # the argv that hands it li's permission-prompt tool: `servers` is MCP's `mcpServers` table
    ask_arguments: Callable[[Mapping[str, Any]], list[str]] = _no_ask_arguments
    exit_reason: Callable[[Outcome, int], str | None] = _no_exit_reason  # a reason some exit statuses name
    root_refusal: Callable[[Sequence[str], Mapping[str, str]], str | None] = _no_root_refusal  # why it will not run as root
    # Budgets (`domain.budget`): whether its stream reports its tokens and a price, the flag of
    # its own dollar cap (the value in US dollars), and the spend one of its events reports.
    reports_tokens: bool = False
    reports_cost: bool = False
    cost_flag: str | None = None
    spend: Callable[[dict[str, Any]], Report | None] = _no_spend


def agent(name: str) -> AgentCli:
    """The CLI named `name` (a KeyError for a name that is none: `is_agent` first)."""
    module = importlib.import_module(MODULES[name])
    cli: AgentCli = module.CLI
    return cli


def is_agent(name: str) -> bool:
    return name in MODULES


def agents() -> tuple[AgentCli, ...]:
    """Every CLI, in registry order (each module imported, once)."""
    if not _ALL:
        _ALL.extend(agent(name) for name in NAMES)
    return tuple(_ALL)


_ALL: list[AgentCli] = []


def owner(event: dict[str, Any]) -> str | None:
    """Which CLI speaks this event, or None when none of them does. The newest CLI is asked first:
    where kinds are shared (`error`, `result`, `tool_use`), a later CLI's events are told by
    fields the earlier ones never carry (OpenCode's `sessionID`)."""
    for cli in agents()[::-1]:
        if cli.owns(event):
            return cli.name
    return None
