"""`li job reply RUN_ID PROMPT`: continue a run's agent conversation in a new run."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("reply", help="continue a run's agent conversation in a new run",
                            description="Start a new run that resumes the agent session RUN_ID's event stream "
                                        "carried (claude --resume, codex exec resume, gemini --resume), with "
                                        "PROMPT, in RUN_ID's worktree and branch when it had one. The new run "
                                        "records `continues`; `li job status` shows the chain.")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("words", nargs="*", metavar="PROMPT", help="the next prompt")
    parser.add_argument("--prompt", help="the prompt text (instead of the positional)")
    parser.add_argument("--prompt-file", help="read the prompt from PATH, or stdin with -")
    parser.add_argument("--detach", action="store_true", help="return at once with the new run id")
    from lionrun.entrypoints.verbs._submit import add_idempotency_option

    add_idempotency_option(parser)
    from lionrun.entrypoints.verbs._order import add_order_options

    add_order_options(parser)
    parser.add_argument("--raw", action="store_true", help="show the console's raw event stream, not the transcript")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    """Under --machine the answer is the new run's submit handle, as `li agent` gives."""
    from lionrun.entrypoints.verbs._submit import replied_request, submit

    return submit(replied_request(args), args).to_wire()


def human(args: Namespace) -> int:
    from lionrun.entrypoints.verbs._submit import replied_request, submit_for_person

    return submit_for_person(replied_request(args), args)
