"""`li job reply RUN_ID PROMPT`: continue a run's agent conversation in a new run (issue 28)."""

from __future__ import annotations

import os
from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import run_id_arg, this


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
    from lionrun.entrypoints.verbs.agent import add_idempotency_option

    add_idempotency_option(parser)
    from lionrun.entrypoints.verbs._order import add_order_options

    add_order_options(parser)
    parser.add_argument("--raw", action="store_true", help="show the console's raw event stream, not the transcript")
    parser.set_defaults(verb=this(__name__))


def replied_request(args: Namespace) -> Any:
    """The reply's request: the run's own (model, options, cwd, label), the new prompt, the session
    to resume, the worktree to continue in; refused with the reason when the run cannot be replied to."""
    from msgspec.structs import replace

    from lionrun.domain.request import check_prompt, invalid
    from lionrun.domain.worktree import WorktreePlan, check_session_id, reply_refusal
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.verbs.agent import read_prompt_file

    run_id = run_id_arg(args, args.run_id)
    reads = get_container().reads.reads()
    observed = reads.observe(run_id)
    run = observed.run
    request = reads.recorded_request(run_id)
    provider = request.legs[0].model.provider if len(request.legs) == 1 else None
    refusal = reply_refusal(run.kind, provider, run.session_id, observed.derivation.terminal)
    if refusal is not None:
        raise invalid(f"{run_id} cannot be replied to: {refusal}", run_id=run_id)
    if args.prompt is not None and (args.prompt_file is not None or args.words):
        raise invalid("give the prompt once: as a positional, --prompt or --prompt-file")
    given = args.prompt if args.prompt is not None else read_prompt_file(args.prompt_file)
    prompt = check_prompt(given if given is not None else " ".join(args.words))
    plan = None
    if run.worktree is not None:
        if not os.path.isdir(run.worktree.path):
            raise invalid(f"{run_id} cannot be replied to: its worktree {run.worktree.path} is gone", run_id=run_id)
        common = request.worktree.common_dir if request.worktree is not None else run.worktree.repository
        plan = WorktreePlan(repository=run.worktree.repository, common_dir=common,
                            base_commit=run.worktree.base_commit, reuse=run.worktree)
    elif not os.path.isdir(request.cwd):
        raise invalid(f"the working directory of {run_id} ({request.cwd}) is not a directory any more",
                      run_id=run_id, cwd=request.cwd)
    extra = {k: v for k, v in request.extra.items() if k != "retry_of"}
    return replace(request, instruction=prompt, resume_session=check_session_id(run.session_id), worktree=plan,
                   extra={**extra, "continues": run_id})


def run(args: Namespace) -> dict[str, Any]:
    """Under --machine the answer is the new run's submit handle, as `li agent` gives."""
    from lionrun.entrypoints.verbs.agent import submit

    return submit(replied_request(args), args).to_wire()


def human(args: Namespace) -> int:
    from lionrun.entrypoints.verbs.agent import submit_for_person

    return submit_for_person(replied_request(args), args)
