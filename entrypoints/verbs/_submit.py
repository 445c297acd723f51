"""What every submit verb shares (li agent, li orchestrate, li job retry and reply) and li serve
uses: the options, the prompt, the machine's part of a request (working folder, root, what exec
can start), and the submit itself. The request is assembled in `application.requests`."""

from __future__ import annotations

import os
import sys
from argparse import Namespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lionrun.application.submit import Handle
    from lionrun.domain.request import RunRequest

FOLLOW_POLL = 0.1  # seconds between a foreground follow's observations


def add_submit_options(parser: Any) -> None:
    """Options every submit verb shares."""
    parser.add_argument("--detach", action="store_true", help="return at once with the run id")
    parser.add_argument("--label", help="a free-form label shown beside the run")
    parser.add_argument("--cwd", help="working directory of the run (default: here)")
    parser.add_argument("--timeout", help="seconds after which the work is stopped (status timed_out)")
    parser.add_argument("--idle-timeout", metavar="SECONDS",
                        help="an agent CLI that writes no event for this long is stopped (timed_out, "
                             "idle_timeout; default: `idle_timeout` in config.toml, else 900; 0: off)")
    parser.add_argument("--notify", help="argv template run when the run ends (no shell)")
    parser.add_argument("--permission-mode", metavar="MODE",
                        help="what agent CLIs may do: read-only, edits, full, or ask (claude: each tool use put to a person; default: each CLI's own)")
    parser.add_argument("--provider-arg", action="append", metavar="ARG",
                        help="an argument passed verbatim to the agent CLI (repeatable; write --provider-arg=--flag)")
    parser.add_argument("--executor", choices=None, metavar="local|slurm",
                        help="where the runner runs: local (default; `executor` in config.toml) or slurm")
    parser.add_argument("--queue", metavar="NAME",
                        help="the queue the run waits in for a slot (default: `default`, or the model's in "
                             "config.toml [queues]); not with --executor slurm")
    parser.add_argument("--confine", metavar="auto|required|off",
                        help="hide the store from the work: auto (default; `confine` in config.toml) hides it "
                             "where the kernel allows and says when it cannot, required refuses to run "
                             "unconfined, off lets the work reach the store")
    parser.add_argument("--partition", help="the Slurm partition (with --executor slurm)")
    parser.add_argument("--slurm-arg", action="append", metavar="ARG",
                        help="an sbatch option passed as is (repeatable; write --slurm-arg=--time=10)")
    parser.add_argument("--worktree", action="store_true", default=None,
                        help="work in a new git worktree on branch li/RUN_ID (one per leg, li/RUN_ID.LEG, for a run of several "
                             "legs; `worktree = true` in config.toml)")
    parser.add_argument("--no-worktree", action="store_false", dest="worktree",
                        help="work in --cwd itself, whatever config.toml says")
    parser.add_argument("--base", metavar="REF", help="the commit the worktree starts from (default: HEAD)")
    parser.add_argument("--setup", metavar="CMD",
                        help="a shell command run in the new worktree before the work (`worktree_setup` in config.toml)")
    add_idempotency_option(parser)
    from lionrun.entrypoints.verbs._order import add_order_options

    add_order_options(parser)
    add_budget_options(parser)
    add_retry_options(parser)
    parser.add_argument("--approval-timeout", metavar="SECONDS",
                        help="with --permission-mode ask: a request nobody answers is denied after this long "
                             "(default 600)")


def add_retry_options(parser: Any) -> None:
    """The run's work tried again, under the same run id, on a vendor's passing trouble."""
    parser.add_argument("--retry", metavar="N",
                        help="try the work again up to N more times when it ends with a --retry-on reason")
    parser.add_argument("--retry-on", metavar="REASONS",
                        help="comma-separated reason codes retried (default: provider_rate_limited,"
                             "provider_overloaded,provider_unreachable)")
    parser.add_argument("--retry-backoff", metavar="SECONDS",
                        help="wait before the second attempt, doubled for each later one, capped at 300, "
                             "jittered; a vendor's reset time wins (default 5)")


def add_budget_options(parser: Any) -> None:
    """What a run may spend, counted from its agent CLIs' streams as they arrive."""
    parser.add_argument("--max-tokens", metavar="N",
                        help="stop the run (failed, budget_exceeded) once its agents reported N tokens")
    parser.add_argument("--max-cost", metavar="USD",
                        help="stop the run (failed, budget_exceeded) once its agents reported this cost in US "
                             "dollars (claude only: the others report no price; passed on as --max-budget-usd)")


def add_idempotency_option(parser: Any) -> None:
    parser.add_argument("--idempotency-key", metavar="KEY",
                        help="submit at most once per KEY: while the run KEY started is in the store, the same "
                             "submit answers that run (nothing new starts); another request with KEY is refused")


def add_view_options(parser: Any) -> None:
    """How a foreground run is shown to a person."""
    parser.add_argument("--raw", action="store_true", help="show the console's raw event stream, not the transcript")


def refuse_command_as_model(model_text: str | None, words: list[str], verb: str) -> None:
    """`li agent echo hi`: a first word that is no model but a command on PATH is refused with the sh form."""
    import shlex
    import shutil

    from lionrun.domain.request import invalid, looks_like_model

    if model_text is None or looks_like_model(model_text) or "/" in model_text or not model_text.strip():
        return
    if shutil.which(model_text) is None:
        return
    hint = f"{verb} sh {shlex.quote(' '.join(words))}"
    raise invalid(f"unknown model {model_text!r}; it is a command on PATH — to run it in a shell: {hint}",
                  model=model_text, hint=hint)


def prompt_and_model(args: Namespace, split: Any) -> tuple[str | None, str | None]:
    """`[MODEL] PROMPT`, `--prompt` or `--prompt-file PATH|-`: exactly one source of prompt text."""
    from lionrun.domain.request import invalid

    if args.prompt is not None and args.prompt_file is not None:
        raise invalid("give either --prompt or --prompt-file, not both")
    given = args.prompt if args.prompt is not None else read_prompt_file(args.prompt_file)
    model, positional = split(args.words, given is not None)
    return model, given if given is not None else positional


def read_prompt_file(path: str | None, what: str = "prompt file") -> str | None:
    """The file's text (stdin for `-`), refused when unreadable or not UTF-8."""
    from lionrun.domain.request import PROMPT_LIMIT, invalid

    if path is None:
        return None
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(PROMPT_LIMIT + 1) if sys.stdin is not None else b""
        else:
            with open(path, "rb") as handle:
                raw = handle.read(PROMPT_LIMIT + 1)
    except OSError as exc:
        raise invalid(f"cannot read the {what} {path!r}: {exc.strerror or exc}", path=path) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid(f"the {what} {path!r} is not UTF-8 text", path=path) from None


def common_options(args: Namespace) -> dict[str, Any]:
    """Checks shared by every submit verb (application.requests.common_options), with the working
    folder resolved here and git built only when a worktree is wanted."""
    from lionrun.application.requests import SubmitFlags
    from lionrun.application.requests import common_options as assemble
    from lionrun.entrypoints.container import get_container

    return assemble(SubmitFlags.of(args), get_container().core.settings(), resolve_cwd(args.cwd), get_container().core.git)


def with_agent_options(request: RunRequest, args: Namespace) -> RunRequest:
    """The request with each agent CLI's options, its idle watchdog and approval timeout: the flags,
    else config.toml (application.requests.with_agent_options)."""
    from lionrun.application.requests import SubmitFlags
    from lionrun.application.requests import with_agent_options as assemble
    from lionrun.entrypoints.container import get_container

    return assemble(request, SubmitFlags.of(args), get_container().core.settings(), os.environ if os.geteuid() == 0 else None)


def check_executable(request: RunRequest) -> None:
    """Refuse (invalid_input) a run that would start something exec cannot (E2BIG), before any write.

    What a run execs: the runner (`python -m lionrun.entrypoints.runner RUN_ID`) with the runner's
    environment, each model's provider CLI (flags and model, never the prompt) and the notify
    command as delivery renders it, with that environment plus what the runner and each leg add.
    """
    from lionrun.adapters.providers import command_line
    from lionrun.domain.request import LEG_ID_RESERVE, RUN_ID_SHAPE, check_exec, exec_plan
    from lionrun.entrypoints.home import default_home
    from lionrun.entrypoints.settings import runner_command, runner_environment

    home = default_home()
    env = {**runner_environment(home), "LI_RUN_ID": RUN_ID_SHAPE,
           "LI_ARTIFACTS_DIR": os.path.join(home, "runs", RUN_ID_SHAPE, "artifacts"),
           "LI_LEG_ID": "x" * LEG_ID_RESERVE}
    plan = exec_plan(request, runner_command(),
                     lambda spec: command_line(spec.provider, spec.model, env, request.arguments_for(spec.provider)))
    check_exec(plan, env, exec_arg_max())


def exec_arg_max() -> int:
    """This system's bound on one exec's arguments plus environment.

    `sysconf(ARG_MAX)` (a quarter of the stack limit, at least 128 KiB), at most 6 MiB: Linux caps
    it there (three quarters of _STK_LIM) whatever the stack limit.
    """
    try:
        value = os.sysconf("SC_ARG_MAX")
    except (ValueError, OSError):
        value = -1
    return min(value if value > 0 else 128 * 1024, 6 * 1024 * 1024)


def resolve_cwd(cwd: str | None) -> str:
    from lionrun.domain.request import invalid

    try:
        path = os.path.abspath(cwd if cwd is not None else os.getcwd())
    except OSError as exc:
        raise invalid(f"the current directory cannot be used: {exc.strerror}") from None
    if not os.path.isdir(path):
        raise invalid(f"--cwd {cwd!r} is not an existing directory", cwd=cwd)
    return path


def submit(request: RunRequest, args: Namespace | None = None) -> Handle:
    """Refuse what could not be exec'd, then hand the request to the submit service (which checks
    providers, then writes and spawns), with the run's `--after` and `--priority` and,
    with `--idempotency-key`, at most once per key."""
    from lionrun.application.requests import SubmitFlags, idempotency_key, order_option, with_queue
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.verbs._common import run_id_arg

    check_executable(request)
    flags = SubmitFlags.of(args)
    order = order_option(flags, lambda ref: run_id_arg(args, ref))
    handle: Handle = get_container().submit.submitter().submit(with_queue(request, get_container().core.settings()), order, idempotency_key(flags))
    return handle


def submit_for_person(request: RunRequest, args: Namespace) -> int:
    """Human mode: --detach prints the id and how to follow; otherwise follow the run to its end."""
    handle = submit(request, args)
    if args.detach:
        from lionrun.domain.run import short_id

        short = short_id(handle.run_id)  # names the run for a person, and keeps the hint within 80 columns
        print(handle.run_id)
        print(f"li job status {short} · li job output {short} --follow · li job kill {short}\n"
              f"console: {handle.log}", file=sys.stderr)
        return 0
    print(f"run {handle.run_id}", file=sys.stderr, flush=True)  # before any of its output: the id to name it by
    from lionrun.entrypoints.console_view import rendered_for

    return follow(handle, rendered_for(request.providers, getattr(args, "raw", False)))


def follow(handle: Handle, rendered: bool = False) -> int:
    """Stream the console to the terminal until the run's end is recorded; exit with its code.

    The one follow loop (`application.follow`) shown through a ConsoleView: `rendered`, agent
    events as a transcript (text, tool calls, errors, the answer and usage), else the console's
    bytes as they are; the work's on stdout, li's own lines (the run's li log) on stderr. The terminal is only a
    view: ^C stops watching, never the run (which runs in its own session), says how to follow
    again and how to kill, and exits 130.
    """
    from lionrun.application.follow import FollowEnd, show
    from lionrun.entrypoints.console_view import ConsoleView
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.verbs._common import stopped_watching

    follower = get_container().reads.follower(poll_seconds=FOLLOW_POLL)
    view = ConsoleView(sys.stdout.buffer, sys.stderr.buffer, rendered)
    try:
        for event in follower.follow(handle.run_id, 0):
            if isinstance(event, FollowEnd):
                view.close()
                if event.detail:
                    print(f"li: {handle.run_id}: {event.detail}", file=sys.stderr)
                elif event.exit_code != 0:
                    say_failure(get_container().reads.reads().status(handle.run_id))
                return event.exit_code
            show(view, event)
    except KeyboardInterrupt:
        view.flush()
        return stopped_watching([handle.run_id], "li job output {} --follow")
    raise AssertionError("a follow always ends with a FollowEnd")  # pragma: no cover


def say_failure(status: dict[str, Any]) -> None:
    """An ended run that did not succeed says so on stderr: the work's exit code, and which leg failed."""
    from lionrun.entrypoints.verbs._views import legs_of

    if status["outcome"] == "succeeded" or not status["terminal"]:
        return
    code = status.get("exit_code")
    said = f"run {status['run_id']} {status['status']}" + (f": exit code {code}" if code is not None else "")
    part = "step" if status["kind"] == "flow" else "leg"  # a flow has steps; a fanout has legs
    legs = [f"  {part} {leg} ({model}) {leg_status} {how}".rstrip()
            for leg, model, leg_status, how in legs_of(status["manifest"], status["kind"])
            if leg_status != "completed"]
    print("\n".join([said, *legs]), file=sys.stderr)


def retried_request(args: Namespace) -> Any:
    """`li job retry`'s request: the run's recorded one, refused when its working folder is gone."""
    from lionrun.domain.request import invalid
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.verbs._common import run_id_arg

    run_id = run_id_arg(args, args.run_id)
    request = get_container().reads.reads().recorded_request(run_id)
    if not os.path.isdir(request.cwd):
        raise invalid(f"the working directory of {run_id} ({request.cwd}) is not a directory any more",
                      run_id=run_id, cwd=request.cwd)
    # Not at the top: every verb module is imported to build the parser.
    from msgspec.structs import replace

    return replace(request, extra={**request.extra, "retry_of": run_id})


def replied_request(args: Namespace) -> Any:
    """The reply's request: the run's own (model, options, cwd, label), the new prompt, the session
    to resume, the worktree to continue in; refused with the reason when the run cannot be replied to."""
    from msgspec.structs import replace

    from lionrun.domain.request import check_prompt, invalid
    from lionrun.domain.worktree import WorktreePlan, check_session_id, reply_refusal
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.verbs._common import run_id_arg

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
