"""Request assembly: a caller's options (CLI flags, a served form) and li's settings into the run's request.

One home for every submit (li agent, li orchestrate, li job retry/reply, li serve): the flags, else
config.toml's defaults (`Settings`, read once per process), else li's own. What needs the machine
(the working folder, git, the environment) is asked through the arguments, never looked up here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from lionrun.domain.config import usable

if TYPE_CHECKING:
    from lionrun.application.ports import GitWorktrees
    from lionrun.domain.config import Settings
    from lionrun.domain.dependencies import Order
    from lionrun.domain.request import RunRequest


class SubmitFlags(Struct, frozen=True):
    """What a caller gave for a submit, as given (text; None: not given); checked by `assemble_*`."""

    label: str | None = None
    timeout: str | None = None
    idle_timeout: str | None = None
    notify: str | None = None
    permission_mode: str | None = None
    provider_arg: list[str] | None = None
    executor: str | None = None
    queue: str | None = None
    confine: str | None = None
    partition: str | None = None
    slurm_arg: list[str] | None = None
    worktree: bool | None = None
    base: str | None = None
    setup: str | None = None
    max_tokens: str | None = None
    max_cost: str | None = None
    retry: str | None = None
    retry_on: str | None = None
    retry_backoff: str | None = None
    approval_timeout: str | None = None
    idempotency_key: str | None = None
    after: list[str] | None = None
    priority: str | None = None

    @classmethod
    def of(cls, given: object) -> SubmitFlags:
        """The flags an argparse namespace (or any object) carries; what it lacks is not given."""
        return cls(**{name: getattr(given, name, None) for name in cls.__struct_fields__})


def common_options(flags: SubmitFlags, settings: Settings, cwd: str,
                   git: Callable[[], GitWorktrees]) -> dict[str, Any]:
    """The fields every submit shares: label, timeout, notification, executor, queue, confinement,
    worktree, budget and retry. `cwd` is the resolved working folder; `git` is built if a worktree is wanted."""
    from lionrun.domain.request import parse_timeout

    notify, source = notify_option(flags.notify, settings)
    options = {"cwd": cwd, "label": flags.label, "timeout": parse_timeout(flags.timeout),
               "notify": notify, "notify_source": source, **executor_options(flags, settings)}
    return {**options, **queue_option(flags, options.get("executor")), **confine_option(flags, settings),
            **worktree_options(flags, settings, cwd, git), **budget_option(flags), **retry_option(flags)}


def notify_option(flag: str | None, settings: Settings) -> tuple[tuple[str, ...] | None, str | None]:
    """The delivery argv template: --notify, else $LI_NOTIFY_COMMAND, else `notify` in config.toml."""
    from lionrun.domain.notify import NotifyTemplateError, choose
    from lionrun.domain.request import invalid

    config = usable(settings.entries.notify) if flag is None and not settings.notify_command else None
    try:
        choice = choose(flag, settings.notify_command, config)
    except NotifyTemplateError as exc:
        raise invalid(f"the notify command cannot be used: {exc}") from None
    return (tuple(choice.template) if choice.template else None), choice.source


def executor_options(flags: SubmitFlags, settings: Settings) -> dict[str, Any]:
    """`--executor`, `--partition`, `--slurm-arg`, else config.toml's `executor` and `[slurm]` table
    (`partition`, `args`); `local` when nothing says otherwise."""
    from lionrun.domain.request import invalid, parse_executor, parse_partition, parse_slurm_args

    configured = settings.file.mentions(b"executor", b"slurm")  # else nothing to parse (start-up cost)
    if flags.executor is not None:
        executor = parse_executor(flags.executor)
    else:
        executor = usable(settings.entries.executor) if configured else "local"
    if executor != "slurm":
        if flags.partition is not None or flags.slurm_arg is not None:
            raise invalid("--partition and --slurm-arg apply to --executor slurm")
        return {}
    # Each flag wins over its own entry of [slurm], which is read only when its flag is not given.
    partition = (parse_partition(flags.partition) if flags.partition is not None
                 else usable(settings.entries.slurm_partition) if configured else None)
    extra = (parse_slurm_args(flags.slurm_arg) if flags.slurm_arg is not None
             else usable(settings.entries.slurm_args) if configured else ())
    return {"executor": executor, "partition": partition, "slurm_args": extra}


def queue_option(flags: SubmitFlags, executor: str | None) -> dict[str, Any]:
    """`--queue NAME`; refused beside --executor slurm: Slurm keeps its own queue."""
    if flags.queue is None:
        return {}
    from lionrun.domain.queue import check_queue_name
    from lionrun.domain.request import invalid

    queue = check_queue_name(flags.queue)
    if executor == "slurm":
        raise invalid("--queue does not apply to --executor slurm: Slurm keeps its own queue (choose a --partition)",
                      argument="--queue")
    return {"queue": queue}


def confine_option(flags: SubmitFlags, settings: Settings) -> dict[str, Any]:
    """`--confine MODE`, else `confine` in config.toml, else auto."""
    from lionrun.domain.request import parse_confine

    if flags.confine is not None:
        return {"confine": parse_confine(flags.confine)}
    configured = usable(settings.entries.confine) if settings.file.mentions(b"confine") else None
    return {} if configured is None else {"confine": configured}


def worktree_options(flags: SubmitFlags, settings: Settings, cwd: str,
                     git: Callable[[], GitWorktrees]) -> dict[str, Any]:
    """`--worktree`, `--base REF`, `--setup CMD`, else config.toml's `worktree` and `worktree_setup`
   : the repository found and the base resolved now, before anything is written.
    `--worktree` outside a repository is refused; `worktree = true` there is no worktree."""
    from lionrun.domain.request import invalid
    from lionrun.domain.worktree import check_base_ref, check_setup

    entries = settings.entries if flags.worktree is not False and settings.file.mentions(b"worktree") else None
    wanted = flags.worktree if flags.worktree is not None else (usable(entries.worktree) if entries else False)
    if not wanted:
        if flags.base is not None or flags.setup is not None:
            raise invalid("--base and --setup apply to --worktree",
                          option="--base" if flags.base is not None else "--setup")
        return {}
    ref = check_base_ref(flags.base) if flags.base is not None else "HEAD"
    setup = check_setup(flags.setup) if flags.setup is not None else (
        usable(entries.worktree_setup) if entries else None)
    return worktree_plan(git(), cwd, ref, setup, explicit=flags.worktree is not None)


def worktree_plan(git: GitWorktrees, cwd: str, ref: str, setup: str | None, explicit: bool) -> dict[str, Any]:
    """The worktree a run starts in: its repository found and its base resolved now."""
    from lionrun.application.ports import GitRefused
    from lionrun.domain.request import invalid
    from lionrun.domain.worktree import WorktreePlan

    try:
        repository = git.locate(cwd)
        if repository is None:
            if not explicit:
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


def budget_option(flags: SubmitFlags) -> dict[str, Any]:
    """`--max-tokens N`, `--max-cost USD`; checked against the providers at submit."""
    if flags.max_tokens is None and flags.max_cost is None:
        return {}
    from lionrun.domain.budget import Budget, parse_max_cost, parse_max_tokens

    return {"budget": Budget(max_tokens=None if flags.max_tokens is None else parse_max_tokens(flags.max_tokens),
                             max_cost_usd=None if flags.max_cost is None else parse_max_cost(flags.max_cost))}


def retry_option(flags: SubmitFlags) -> dict[str, Any]:
    """`--retry N [--retry-on REASONS] [--retry-backoff SECONDS]`."""
    if flags.retry is None:
        if flags.retry_on is not None or flags.retry_backoff is not None:
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

    on = DEFAULT_ON if flags.retry_on is None else parse_retry_on(flags.retry_on)
    backoff = DEFAULT_BACKOFF if flags.retry_backoff is None else parse_backoff(flags.retry_backoff)
    return {"retry": RetryPolicy(retries=parse_retries(flags.retry), on=on, backoff=backoff)}


def with_agent_options(request: RunRequest, flags: SubmitFlags, settings: Settings,
                       root_environ: Mapping[str, str] | None = None) -> RunRequest:
    """The request with each agent CLI's permission mode and provider args: the flags, else
    config.toml; its idle watchdog and approval timeout. `root_environ`: the environment, when li
    runs as root (some CLIs refuse to skip their checks there)."""
    from msgspec.structs import replace

    from lionrun.domain.agent_options import parse_permission_mode, parse_provider_args
    from lionrun.domain.request import agent_options, refused_as_root

    mode = parse_permission_mode(flags.permission_mode)
    provider_args = parse_provider_args(flags.provider_arg) if flags.provider_arg is not None else None
    agents = agent_options(request.providers, mode, provider_args, agent_defaults(request.providers, settings))
    if root_environ is not None:
        refused_as_root(agents, root_environ)
    return replace(request, agents=agents, idle_timeout=idle_timeout(request.providers, flags, settings),
                   **approval_option(agents, flags))


def approval_option(agents: Mapping[str, Any], flags: SubmitFlags) -> dict[str, Any]:
    """`--approval-timeout SECONDS` for a run under --permission-mode ask (default 600)."""
    from lionrun.domain.approval import DEFAULT_TIMEOUT, parse_timeout
    from lionrun.domain.request import invalid

    if not any(o.permission_mode == "ask" for o in agents.values()):
        if flags.approval_timeout is not None:
            raise invalid("--approval-timeout applies to --permission-mode ask", argument="--approval-timeout")
        return {}
    return {"approval_timeout": DEFAULT_TIMEOUT if flags.approval_timeout is None
            else parse_timeout(flags.approval_timeout)}


def idle_timeout(providers: set[str], flags: SubmitFlags, settings: Settings) -> float | None:
    """The idle watchdog of a run with an agent leg: --idle-timeout, else config.toml's
    `idle_timeout`, else DEFAULT_IDLE_TIMEOUT; 0 turns it off. Shell work has none."""
    from lionrun.domain.request import (
        AGENT_PROVIDERS,
        DEFAULT_IDLE_TIMEOUT,
        invalid,
        parse_idle_timeout,
    )

    flag = parse_idle_timeout(flags.idle_timeout)
    if not providers & set(AGENT_PROVIDERS):
        if flag is not None:
            raise invalid(f"--idle-timeout applies to agent runs ({', '.join(AGENT_PROVIDERS)}), not to shell work",
                          argument="--idle-timeout")
        return None
    seconds = flag
    if seconds is None and settings.file.mentions(b"idle_timeout"):
        seconds = usable(settings.entries.idle_timeout)
    if seconds is None:
        seconds = DEFAULT_IDLE_TIMEOUT
    return seconds or None


def agent_defaults(providers: set[str], settings: Settings) -> dict[str, Any]:
    """`[providers.NAME]` tables of config.toml: `permission_mode` and `provider_args` per agent CLI."""
    from lionrun.domain.agent_options import (
        AgentRunOptions,
        parse_permission_mode,
        parse_provider_args,
    )
    from lionrun.domain.request import AGENT_PROVIDERS, invalid

    if not providers & set(AGENT_PROVIDERS):
        return {}
    table = usable(settings.entries.providers)
    defaults = {}
    for name in sorted(providers & set(AGENT_PROVIDERS)):
        entry = table.get(name, {})
        if not isinstance(entry, dict):
            raise invalid(f"config.toml: [providers.{name}] must be a table")
        unknown = sorted(set(entry) - {"permission_mode", "provider_args"})
        if unknown:
            raise invalid(f"config.toml: [providers.{name}] has unknown keys: {', '.join(unknown)}")
        where = f"config.toml [providers.{name}]"
        defaults[name] = AgentRunOptions(
            parse_permission_mode(entry.get("permission_mode"), f"{where} permission_mode"),
            parse_provider_args(entry.get("provider_args"), f"{where} provider_args"))
    return defaults


def with_queue(request: RunRequest, settings: Settings) -> RunRequest:
    """The run's queue when --queue named none: the model's in config.toml's `[queues]` table
    (`claude = "claude"`, or a whole spec such as `"claude/opus" = "opus"`), else the default."""
    if request.queue is not None or request.executor == "slurm" or not settings.file.mentions(b"queues"):
        return request
    from msgspec.structs import replace

    from lionrun.domain.queue import check_queue_name

    table = usable(settings.entries.queues)
    for model in request.models:
        value = table.get(model.text, table.get(model.provider))
        if value is not None:
            return replace(request, queue=check_queue_name(value, f"config.toml [queues] {model.provider}"))
    return request


def order_option(flags: SubmitFlags, run_id_of: Callable[[str], str]) -> Order | None:
    """The run's place among others from `--after` and `--priority` (None: neither given);
    `run_id_of` names a run from what the caller wrote (a person's short id or @last)."""
    after = flags.after or []
    if not after and flags.priority is None:
        return None
    from lionrun.domain.dependencies import Order, check_priority, dependencies, split_after

    pairs = []
    for text in after:
        ref, condition = split_after(text)
        pairs.append((run_id_of(ref), condition))
    return Order(after=tuple(dependencies(pairs)),
                 priority=0 if flags.priority is None else check_priority(flags.priority))


def idempotency_key(flags: SubmitFlags) -> str | None:
    """`--idempotency-key KEY`, checked (1-256 characters, no control character), else None."""
    if flags.idempotency_key is None:
        return None
    from lionrun.domain.idempotency import check_key

    return check_key(flags.idempotency_key)
