"""`li agent [MODEL] PROMPT`: submit one agent run (D5)."""

from __future__ import annotations

from argparse import Namespace
from typing import TYPE_CHECKING, Any

from lionrun.entrypoints.verb_table import summary
from lionrun.entrypoints.verbs._common import this

if TYPE_CHECKING:
    from lionrun.domain.request import RunRequest


def register(sub: Any, words: list[str] | None = None) -> None:
    from lionrun.entrypoints.verbs._submit import add_submit_options, add_view_options

    parser = sub.add_parser("agent", help=summary("agent"))
    parser.add_argument("words", nargs="*", metavar="[MODEL] PROMPT",
                        help="model spec (sh, claude, claude/opus, codex, gemini) and the prompt")
    parser.add_argument("--prompt", help="the prompt text (instead of the positional)")
    parser.add_argument("--prompt-file", help="read the prompt from PATH, or stdin with -")
    add_submit_options(parser)
    add_view_options(parser)
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    """Under --machine a submit always answers with the handle, detached or not."""
    from lionrun.entrypoints.verbs._submit import submit

    return submit(agent_request(args), args).to_wire()


def human(args: Namespace) -> int:
    if not args.words and args.prompt is None and args.prompt_file is None:  # bare `li agent`: its help
        from lionrun.entrypoints.verbs._common import print_help

        if print_help(args, "agent") == 0:
            return 0
    from lionrun.entrypoints.verbs._submit import submit_for_person

    return submit_for_person(agent_request(args), args)


def agent_request(args: Namespace) -> RunRequest:
    """Validate `li agent`'s arguments into a RunRequest; nothing touches disk here."""
    from lionrun.domain.request import (
        DEFAULT_PROVIDER,
        Leg,
        RunRequest,
        check_prompt,
        parse_model,
        split_words,
    )
    from lionrun.entrypoints.verbs._submit import (
        common_options,
        prompt_and_model,
        refuse_command_as_model,
        with_agent_options,
    )

    common = common_options(args)
    model_text, prompt = prompt_and_model(args, split_words)
    refuse_command_as_model(model_text, args.words, "li agent")
    model = parse_model(model_text or DEFAULT_PROVIDER)
    instruction = check_prompt(prompt)
    return with_agent_options(RunRequest(kind="agent", instruction=instruction, legs=(Leg("main", model),),
                                         **common), args)
