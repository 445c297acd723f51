"""`li agent [MODEL] PROMPT`: submit one agent run (D5)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from entrypoints.verbs._common import this, unbuilt


def add_submit_options(parser: Any) -> None:
    """Options every submit verb shares."""
    parser.add_argument("--detach", action="store_true", help="return at once with the run id")
    parser.add_argument("--label", help="a free-form label shown beside the run")
    parser.add_argument("--cwd", help="working directory of the run (default: here)")
    parser.add_argument("--timeout", help="seconds after which the work is stopped (status timed_out)")
    parser.add_argument("--notify", help="argv template run when the run ends (no shell)")


def register(sub: Any) -> None:
    parser = sub.add_parser("agent", help="run one agent (sh, claude, codex, gemini)")
    parser.add_argument("words", nargs="*", metavar="[MODEL] PROMPT",
                        help="model spec (sh, claude, claude/opus, codex, gemini) and the prompt")
    parser.add_argument("--prompt", help="the prompt text (instead of the positional)")
    parser.add_argument("--prompt-file", help="read the prompt from PATH, or stdin with -")
    add_submit_options(parser)
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    unbuilt("li agent")
