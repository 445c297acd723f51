"""`li agent [MODEL] PROMPT`: submit one agent run (D5)."""

from __future__ import annotations

import os
import sys
from argparse import Namespace
from typing import TYPE_CHECKING, Any

from lionrun.entrypoints.verb_table import summary
from lionrun.entrypoints.verbs._common import this

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
    """Issue 42: the run's work tried again, under the same run id, on a vendor's passing trouble."""
    parser.add_argument("--retry", metavar="N",
                        help="try the work again up to N more times when it ends with a --retry-on reason")
    parser.add_argument("--retry-on", metavar="REASONS",
                        help="comma-separated reason codes retried (default: provider_rate_limited,"
                             "provider_overloaded,provider_unreachable)")
    parser.add_argument("--retry-backoff", metavar="SECONDS",
                        help="wait before the second attempt, doubled for each later one, capped at 300, "
                             "jittered; a vendor's reset time wins (default 5)")


def retry_option(args: Namespace) -> dict[str, Any]:
    """`--retry N [--retry-on REASONS] [--retry-backoff SECONDS]` (issue 42)."""
    count, on, backoff = (getattr(args, name, None) for name in ("retry", "retry_on", "retry_backoff"))
    if count is None:
        if on is not None or backoff is not None:
            from lionrun.domain.request import invalid

            raise invalid("--retry-on and --retry-backoff apply to --retry N", argument="--retry")
        return {}
    from lionrun.domain.retry import (
        DEFAULT_BACKOFF,
        DEFAULT_ON,
        RetryPolicy,
        parse_backoff,
        parse_retries,
        parse_retry_on,
    )

    return {"retry": RetryPolicy(retries=parse_retries(count), on=DEFAULT_ON if on is None else parse_retry_on(on),
                                 backoff=DEFAULT_BACKOFF if backoff is None else parse_backoff(backoff))}


def add_budget_options(parser: Any) -> None:
    """Issue 42: what a run may spend, counted from its agent CLIs' streams as they arrive."""
    parser.add_argument("--max-tokens", metavar="N",
                        help="stop the run (failed, budget_exceeded) once its agents reported N tokens")
    parser.add_argument("--max-cost", metavar="USD",
                        help="stop the run (failed, budget_exceeded) once its agents reported this cost in US "
                             "dollars (claude only: the others report no price; passed on as --max-budget-usd)")


def budget_option(args: Namespace) -> dict[str, Any]:
    """`--max-tokens N`, `--max-cost USD` (issue 42); checked against the providers at submit."""
    tokens, cost = getattr(args, "max_tokens", None), getattr(args, "max_cost", None)
    if tokens is None and cost is None:
        return {}
    from lionrun.domain.budget import Budget, parse_max_cost, parse_max_tokens

    return {"budget": Budget(max_tokens=None if tokens is None else parse_max_tokens(tokens),
                             max_cost_usd=None if cost is None else parse_max_cost(cost))}


# -- issue 39: an idempotent submit, in one place for every submit verb (agent, orchestrate, job
# retry, job reply): the flag, its check, and `submit`'s use of it.

def add_idempotency_option(parser: Any) -> None:
    parser.add_argument("--idempotency-key", metavar="KEY",
                        help="submit at most once per KEY: while the run KEY started is in the store, the same "
                             "submit answers that run (nothing new starts); another request with KEY is refused")


def idempotency_key(args: Namespace) -> str | None:
    """`--idempotency-key KEY`, checked (1-256 characters, no control character), else None."""
    value = getattr(args, "idempotency_key", None)
    if value is None:
        return None
    from lionrun.domain.idempotency import check_key

    return check_key(value)


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("agent", help=summary("agent"))
    parser.add_argument("words", nargs="*", metavar="[MODEL] PROMPT",
                        help="model spec (sh, claude, claude/opus, codex, gemini) and the prompt")
    parser.add_argument("--prompt", help="the prompt text (instead of the positional)")
    parser.add_argument("--prompt-file", help="read the prompt from PATH, or stdin with -")
    add_submit_options(parser)
    add_view_options(parser)
    parser.set_defaults(verb=this(__name__))


def add_view_options(parser: Any) -> None:
    """How a foreground run is shown to a person."""
    parser.add_argument("--raw", action="store_true", help="show the console's raw event stream, not the transcript")


def run(args: Namespace) -> dict[str, Any]:
    """Under --machine a submit always answers with the handle, detached or not."""
    return submit(agent_request(args), args).to_wire()


def human(args: Namespace) -> int:
    if not args.words and args.prompt is None and args.prompt_file is None:  # bare `li agent`: its help
        from lionrun.entrypoints.verbs._common import print_help

        if print_help(args, "agent") == 0:
            return 0
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

    common = common_options(args)
    model_text, prompt = prompt_and_model(args, split_words)
    refuse_command_as_model(model_text, args.words, "li agent")
    model = parse_model(model_text or DEFAULT_PROVIDER)
    instruction = check_prompt(prompt)
    return with_agent_options(RunRequest(kind="agent", instruction=instruction, legs=(Leg("main", model),),
                                         **common), args)


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


def with_agent_options(request: RunRequest, args: Namespace) -> RunRequest:
    """The request with each agent CLI's permission mode and provider args: the flags, else config.toml."""
    from msgspec.structs import replace

    from lionrun.domain.request import agent_options, parse_permission_mode, parse_provider_args

    mode = parse_permission_mode(getattr(args, "permission_mode", None))
    given = getattr(args, "provider_arg", None)
    provider_args = parse_provider_args(given) if given is not None else None
    agents = agent_options(request.providers, mode, provider_args, config_agent_defaults(request.providers))
    if os.geteuid() == 0:
        from lionrun.domain.request import refused_as_root

        refused_as_root(agents, os.environ)
    return replace(request, agents=agents, idle_timeout=idle_timeout(request.providers, args),
                   **approval_option(request, agents, args))


def approval_option(request: RunRequest, agents: dict[str, Any], args: Namespace) -> dict[str, Any]:
    """Issue 42: `--approval-timeout SECONDS` for a run under --permission-mode ask (default 600)."""
    from lionrun.domain.approval import DEFAULT_TIMEOUT, parse_timeout
    from lionrun.domain.request import invalid

    flag = getattr(args, "approval_timeout", None)
    asks = any(o.permission_mode == "ask" for o in agents.values())
    if not asks:
        if flag is not None:
            raise invalid("--approval-timeout applies to --permission-mode ask", argument="--approval-timeout")
        return {}
    return {"approval_timeout": DEFAULT_TIMEOUT if flag is None else parse_timeout(flag)}


def idle_timeout(providers: set[str], args: Namespace) -> float | None:
    """The idle watchdog of a run with an agent leg: --idle-timeout, else config.toml's
    `idle_timeout`, else DEFAULT_IDLE_TIMEOUT; 0 turns it off. Shell work has none."""
    from lionrun.domain.request import (
        AGENT_PROVIDERS,
        DEFAULT_IDLE_TIMEOUT,
        invalid,
        parse_idle_timeout,
    )

    flag = parse_idle_timeout(getattr(args, "idle_timeout", None))
    if not providers & set(AGENT_PROVIDERS):
        if flag is not None:
            raise invalid("--idle-timeout applies to agent runs (claude, codex, gemini), not to shell work",
                          argument="--idle-timeout")
        return None
    seconds = flag
    if seconds is None:
        from lionrun.entrypoints.home import default_home
        from lionrun.entrypoints.settings import config_mentions

        if config_mentions(default_home(), (b"idle_timeout",)):
            seconds = parse_idle_timeout(config_table().get("idle_timeout"), "config.toml idle_timeout")
    if seconds is None:
        seconds = DEFAULT_IDLE_TIMEOUT
    return seconds or None


def config_agent_defaults(providers: set[str]) -> dict[str, Any]:
    """`[providers.NAME]` tables of config.toml: `permission_mode` and `provider_args` per agent CLI."""
    from lionrun.domain.request import (
        AGENT_PROVIDERS,
        AgentOptions,
        invalid,
        parse_permission_mode,
        parse_provider_args,
    )

    if not providers & set(AGENT_PROVIDERS):
        return {}
    table = config_table().get("providers", {})
    if not isinstance(table, dict):
        raise invalid("config.toml: `providers` must be a table of [providers.NAME] tables")
    defaults = {}
    for name in sorted(providers & set(AGENT_PROVIDERS)):
        entry = table.get(name, {})
        if not isinstance(entry, dict):
            raise invalid(f"config.toml: [providers.{name}] must be a table")
        unknown = sorted(set(entry) - {"permission_mode", "provider_args"})
        if unknown:
            raise invalid(f"config.toml: [providers.{name}] has unknown keys: {', '.join(unknown)}")
        where = f"config.toml [providers.{name}]"
        defaults[name] = AgentOptions(parse_permission_mode(entry.get("permission_mode"), f"{where} permission_mode"),
                                      parse_provider_args(entry.get("provider_args"), f"{where} provider_args"))
    return defaults


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
    """Checks shared by every submit verb: numbers, working directory, notification."""
    from lionrun.domain.request import parse_timeout

    notify, source = resolve_notify(args.notify)
    cwd = resolve_cwd(args.cwd)
    options = {"cwd": cwd, "label": args.label, "timeout": parse_timeout(args.timeout),
               "notify": notify, "notify_source": source, **executor_options(args)}
    return {**options, **queue_option(args, options.get("executor")), **confine_option(args),
            **worktree_options(args, cwd), **budget_option(args), **retry_option(args)}


def confine_option(args: Namespace) -> dict[str, Any]:
    """`--confine MODE`, else `confine` in config.toml, else auto (issue 25)."""
    from lionrun.domain.request import parse_confine
    from lionrun.entrypoints.home import default_home
    from lionrun.entrypoints.settings import config_mentions

    flag = getattr(args, "confine", None)
    if flag is not None:
        return {"confine": parse_confine(flag)}
    if not config_mentions(default_home(), (b"confine",)):
        return {}
    return {"confine": parse_confine(config_table().get("confine"), "config.toml confine")}


def queue_option(args: Namespace, executor: str | None) -> dict[str, Any]:
    """`--queue NAME` (issue 29); refused beside --executor slurm: Slurm keeps its own queue."""
    flag = getattr(args, "queue", None)
    if flag is None:
        return {}
    from lionrun.domain.queue import check_queue_name
    from lionrun.domain.request import invalid

    queue = check_queue_name(flag)
    if executor == "slurm":
        raise invalid("--queue does not apply to --executor slurm: Slurm keeps its own queue (choose a --partition)",
                      argument="--queue")
    return {"queue": queue}


def with_queue(request: RunRequest) -> RunRequest:
    """The run's queue when --queue named none: the model's in config.toml's `[queues]` table
    (`claude = "claude"`, or a whole spec such as `"claude/opus" = "opus"`), else the default."""
    from lionrun.entrypoints.home import default_home
    from lionrun.entrypoints.settings import config_mentions

    if request.queue is not None or request.executor == "slurm" or not config_mentions(default_home(), (b"queues",)):
        return request
    from msgspec.structs import replace

    from lionrun.domain.queue import check_queue_name
    from lionrun.domain.request import invalid

    table = config_table().get("queues", {})
    if not isinstance(table, dict):
        raise invalid('config.toml: `queues` must be a table of MODEL = "QUEUE"')
    for model in request.models:
        value = table.get(model.text, table.get(model.provider))
        if value is not None:
            return replace(request, queue=check_queue_name(value, f"config.toml [queues] {model.provider}"))
    return request


def worktree_options(args: Namespace, cwd: str) -> dict[str, Any]:
    """`--worktree`, `--base REF`, `--setup CMD`, else config.toml's `worktree` and `worktree_setup`
    (issue 28): the repository found and the base resolved now, before anything is written.
    `--worktree` outside a repository is refused; `worktree = true` there is no worktree."""
    from lionrun.domain.request import invalid
    from lionrun.domain.worktree import WorktreePlan, check_base_ref, check_setup

    flag, base, setup = getattr(args, "worktree", None), getattr(args, "base", None), getattr(args, "setup", None)
    table: dict[str, Any] = {}
    if flag is not False and (flag is None or setup is None) and config_may_name_worktree():
        table = config_table()
    wanted = flag if flag is not None else table.get("worktree", False)
    if not isinstance(wanted, bool):
        raise invalid("config.toml: `worktree` must be true or false")
    if not wanted:
        if base is not None or setup is not None:
            raise invalid("--base and --setup apply to --worktree", option="--base" if base is not None else "--setup")
        return {}
    ref = check_base_ref(base) if base is not None else "HEAD"
    setup = check_setup(setup) if setup is not None else check_setup(table.get("worktree_setup"),
                                                                     "config.toml worktree_setup")
    from lionrun.application.ports import GitRefused
    from lionrun.entrypoints.container import get_container

    git = get_container().core.git()
    try:
        repository = git.locate(cwd)
        if repository is None:
            if flag is None:
                return {}  # config's default applies where there is a repository
            raise invalid(f"--worktree needs a git repository, and {cwd} is not inside one", cwd=cwd)
        commit = git.resolve(repository.toplevel, ref)
    except GitRefused as exc:
        if "not installed" in exc.reason:
            from lionrun.domain.contract import ContractError, ErrorKind

            raise ContractError(ErrorKind.UNAVAILABLE, f"--worktree needs git: {exc.reason}", None) from None
        raise invalid(f"--worktree cannot start from {ref}: {exc.reason}", base=ref) from None
    return {"worktree": WorktreePlan(repository=repository.toplevel, common_dir=repository.common_dir,
                                     base_commit=commit, setup=setup)}


def config_may_name_worktree() -> bool:
    from lionrun.entrypoints.home import default_home
    from lionrun.entrypoints.settings import config_mentions

    return config_mentions(default_home(), (b"worktree",))


def executor_options(args: Namespace) -> dict[str, Any]:
    """`--executor`, `--partition`, `--slurm-arg`, else config.toml's `executor` and `[slurm]` table
    (`partition`, `args`); `local` when nothing says otherwise (issue 17)."""
    from lionrun.domain.request import invalid, parse_executor, parse_partition, parse_slurm_args

    flag = getattr(args, "executor", None)
    partition_flag = getattr(args, "partition", None)
    args_flag = getattr(args, "slurm_arg", None)
    table: dict[str, Any] = {}
    if flag is None or (flag == "slurm" and (partition_flag is None or args_flag is None)):
        table = config_table() if config_may_name_executor() else {}
    executor = parse_executor(flag) if flag is not None else parse_executor(table.get("executor"), "config.toml executor")
    slurm = table.get("slurm", {})
    if not isinstance(slurm, dict):
        raise invalid("config.toml: `slurm` must be a table ([slurm] partition, args)")
    partition = (parse_partition(partition_flag) if partition_flag is not None
                 else parse_partition(slurm.get("partition"), "config.toml [slurm] partition"))
    extra = (parse_slurm_args(args_flag) if args_flag is not None
             else parse_slurm_args(slurm.get("args"), "config.toml [slurm] args"))
    if executor != "slurm":
        if partition_flag is not None or args_flag is not None:
            raise invalid("--partition and --slurm-arg apply to --executor slurm")
        return {}
    return {"executor": executor, "partition": partition, "slurm_args": extra}


def config_may_name_executor() -> bool:
    """Parse config.toml only when it may say something about the executor (start-up cost)."""
    from lionrun.entrypoints.home import default_home
    from lionrun.entrypoints.settings import config_mentions

    return config_mentions(default_home(), (b"executor", b"slurm"))


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


def resolve_notify(flag: str | None) -> tuple[tuple[str, ...] | None, str | None]:
    """The delivery argv template: --notify, else $LI_NOTIFY_COMMAND, else `notify` in config.toml."""
    from lionrun.domain.notify import NotifyTemplateError, choose
    from lionrun.domain.request import invalid

    env = os.environ.get("LI_NOTIFY_COMMAND")
    config = config_notify_entry() if flag is None and not env else None
    try:
        choice = choose(flag, env, config)
    except NotifyTemplateError as exc:
        raise invalid(f"the notify command cannot be used: {exc}") from None
    return (tuple(choice.template) if choice.template else None), choice.source


def config_notify_entry() -> object:
    """The raw `notify` entry of `$LI_HOME/config.toml`, or None when there is none."""
    return config_table().get("notify")


def config_table() -> dict[str, Any]:
    """`$LI_HOME/config.toml` as a table (entrypoints/settings.py reads it); empty when there is none."""
    from lionrun.domain.request import invalid
    from lionrun.entrypoints.home import default_home
    from lionrun.entrypoints.settings import config_table as read

    home = default_home()
    path = os.path.join(home, "config.toml")
    try:
        return read(home)
    except OSError as exc:  # LI_HOME a file, or unreadable: the environment, not the request
        from lionrun.domain.contract import ContractError, ErrorKind

        raise ContractError(ErrorKind.UNAVAILABLE, f"{path} cannot be read: {exc.strerror or exc}",
                            {"path": path, "reason_code": "store_refused"}) from None
    except ValueError as exc:
        raise invalid(str(exc), path=path) from None


def submit(request: RunRequest, args: Namespace | None = None) -> Handle:
    """Refuse what could not be exec'd, then hand the request to the submit service (which checks
    providers, then writes and spawns), with the run's `--after` and `--priority` (issue 43) and,
    with `--idempotency-key`, at most once per key (issue 39)."""
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.verbs._order import order_option

    check_executable(request)
    order = order_option(args) if args is not None else None
    key = idempotency_key(args) if args is not None else None
    handle: Handle = get_container().submit.submitter().submit(with_queue(request), order, key)
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
    from lionrun.entrypoints.verbs.job_status import legs_of

    if status["outcome"] == "succeeded" or not status["terminal"]:
        return
    code = status.get("exit_code")
    said = f"run {status['run_id']} {status['status']}" + (f": exit code {code}" if code is not None else "")
    part = "step" if status["kind"] == "flow" else "leg"  # a flow has steps; a fanout has legs
    legs = [f"  {part} {leg} ({model}) {leg_status} {how}".rstrip()
            for leg, model, leg_status, how in legs_of(status["manifest"], status["kind"])
            if leg_status != "completed"]
    print("\n".join([said, *legs]), file=sys.stderr)
