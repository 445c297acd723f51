"""What a submit asks for, validated purely: model specs, prompt and exec limits, numbers."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from msgspec import Struct, to_builtins
from msgspec import field as msgspec_field

from lionrun.domain.agent_options import AgentRunOptions
from lionrun.domain.agents import NAMES as AGENT_NAMES
from lionrun.domain.agents import agent, is_agent
from lionrun.domain.agents import agents as every_agent
from lionrun.domain.budget import Budget
from lionrun.domain.contract import ContractError
from lionrun.domain.contract import (
    invalid as invalid,  # its importers name it here (one home: contract)
)
from lionrun.domain.notify import render
from lionrun.domain.retry import RetryPolicy
from lionrun.domain.vocabulary import PermissionMode
from lionrun.domain.worktree import WorktreePlan

PROVIDERS = ("sh", *AGENT_NAMES)
AGENT_PROVIDERS = AGENT_NAMES  # the CLIs that take a permission mode and --provider-arg (domain/agents/)
DEFAULT_PROVIDER = "sh"
PROMPT_LIMIT = 256 * 1024  # bytes of UTF-8
MAX_ARG_STRLEN = 128 * 1024  # one argument or environment string, its NUL included (Linux's cap)
POINTER_BYTES = 8  # each argument and environment string also costs a pointer on the new stack
RUN_ID_SHAPE = "00000000T000000-000000"  # as long as every run id
LEG_ID_RESERVE = 64  # the longest leg id (a flow step id), for LI_LEG_ID
_NOTIFY_WORD_RESERVE = 64  # room for a status, outcome or reason code rendered into a notify argument
MAX_LEGS = 32
MAX_TIMEOUT = 7 * 24 * 3600.0
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$")


class ModelSpec(Struct, frozen=True):
    """`provider[/model]`: which CLI does the work and which model it asks for."""

    provider: str
    model: str | None = None

    @property
    def text(self) -> str:
        return self.provider if self.model is None else f"{self.provider}/{self.model}"


def refused_as_root(agents: dict[str, AgentRunOptions], env: Mapping[str, str]) -> None:
    """A CLI that will not run as root the way this run asks (Claude Code skipping its permission
    checks unless told it is sandboxed: its `root_refusal`) is refused at submit, before anything
    is written, with what to do instead. The caller is root; `env` is the environment
    the run will have."""
    for name, options in sorted(agents.items()):
        why = agent(name).root_refusal(options.arguments(name), env) if is_agent(name) else None
        if why is not None:
            raise invalid(why, provider=name, permission_mode=options.permission_mode or "full",
                          reason_code="provider_refused")


# --- the executor ---------------------------------------------------------------------

EXECUTOR_NAMES = ("local", "slurm")
MAX_SLURM_ARGS = 64
_PARTITION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.,-]{0,127}$")
# sbatch options li sets itself (the job's identity, its output, no requeue) or that would make the
# runner run more than once or somewhere else: refused in --slurm-arg.
_SLURM_OWN = ("--requeue", "--no-requeue", "--wrap", "--job-name", "-J", "--parsable", "--array", "-a",
              "--output", "-o", "--error", "-e", "--chdir", "-D", "--export", "--open-mode", "--wait",
              "-W", "--test-only", "--hold", "-H", "--clusters", "-M", "--partition", "-p")


def parse_executor(value: object, where: str = "--executor") -> str:
    """`local` (the default: a detached child here) or `slurm` (a batch job)."""
    if value is None:
        return "local"
    if not isinstance(value, str) or value not in EXECUTOR_NAMES:
        raise invalid(f"{where} must be one of {', '.join(EXECUTOR_NAMES)}, not {value!r}", executor=str(value)[:64])
    return value


def parse_partition(value: object, where: str = "--partition") -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _PARTITION.fullmatch(value):
        raise invalid(f"{where} must be a Slurm partition name, not {str(value)[:64]!r}")
    return value


def parse_slurm_args(values: object, where: str = "--slurm-arg") -> tuple[str, ...]:
    """sbatch options passed as they are (never through a shell): options only, at most 64, none li sets."""
    if values is None:
        return ()
    if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
        raise invalid(f"{where} must be a list of strings")
    if len(values) > MAX_SLURM_ARGS:
        raise invalid(f"{where} is given more than {MAX_SLURM_ARGS} times")
    for value in values:
        if "\0" in value or "\n" in value or not value.startswith("-"):
            raise invalid(f"{where} takes sbatch options (write --slurm-arg=--time=10), not {value[:64]!r}")
        name = value.split("=", 1)[0]
        if name in _SLURM_OWN or (len(name) > 2 and not name.startswith("--") and name[:2] in _SLURM_OWN):
            raise invalid(f"{where} {value[:64]!r}: li sets {name} itself (or it would run the runner "
                          "more than once)", option=name)
    return tuple(values)


def cannot_ask(names: list[str]) -> ContractError:
    """The refusal of `--permission-mode ask` for CLIs that cannot ask, in the registry's words."""
    routes = "; ".join(f"{cli.name}: {cli.prompts}" for cli in every_agent() if cli.asks)
    verb = "has" if len(names) == 1 else "have"
    return invalid(f"--permission-mode ask needs a CLI that hands its permission prompts to a tool ({routes}); "
                   f"{', '.join(names)} {verb} no headless route to ask a person "
                   f"({'; '.join(agent(name).prompts for name in names)})",
                   argument="--permission-mode", providers=names, reason_code="provider_refused")


def agent_options(providers: set[str], mode: PermissionMode | None, args: tuple[str, ...] | None,
                  defaults: Mapping[str, AgentRunOptions]) -> dict[str, AgentRunOptions]:
    """Each agent CLI's options for a run: the command line's, else the provider's configured default.

    `mode`/`args` None means not given; a given value replaces the configured default. `sh` runs
    its script as the user, so it takes neither: a run with no agent leg that asks for one is
    refused, and `--provider-arg` (verbatim argv for one CLI) is refused when legs use two CLIs.
    """
    agents = sorted(p for p in providers if p in AGENT_PROVIDERS)
    if not agents and (mode is not None or args is not None):
        what = "--permission-mode" if mode is not None else "--provider-arg"
        raise invalid(f"{what} applies to agent CLIs ({', '.join(AGENT_PROVIDERS)}); sh runs its script as you, "
                      "with no permission mode or provider arguments", option=what)
    asking = [name for name in agents if not agent(name).asks
              and (mode == "ask" or (mode is None and defaults.get(name, AgentRunOptions()).permission_mode == "ask"))]
    if asking:
        raise cannot_ask(asking)
    if args is not None and len(agents) > 1:
        raise invalid(f"--provider-arg is passed verbatim to one CLI, but this run uses {', '.join(agents)}; "
                      "set per-provider args in config.toml instead", providers=agents)
    options = {}
    for name in agents:
        default = defaults.get(name, AgentRunOptions())
        options[name] = AgentRunOptions(mode if mode is not None else default.permission_mode,
                                     args if args is not None else default.provider_args)
    _refuse_unhonoured(options)
    return options


def _refuse_unhonoured(options: Mapping[str, AgentRunOptions]) -> None:
    """A permission mode a CLI has no flag for is refused, never silently left to the CLI's own
    default (OpenCode: only `full`; its headless default and its plan agent both run the shell)."""
    for name, chosen in sorted(options.items()):
        flags = agent(name).permission_flags
        if chosen.permission_mode is not None and chosen.permission_mode not in flags:
            raise invalid(f"--permission-mode {chosen.permission_mode}: {name} has no headless flag that keeps "
                          f"to it (it takes {', '.join(flags) or 'none'})", argument="--permission-mode",
                          providers=[name], reason_code="provider_refused")


def looks_like_model(text: str) -> bool:
    """True when `text` names a known provider (with or without a model)."""
    return text.split("/", 1)[0] in PROVIDERS


def parse_model(text: str) -> ModelSpec:
    """`sh`, `claude`, `claude/opus`, `codex/o3`, `gemini/gemini-2.5-pro`; anything else is refused."""
    provider, _, model = text.partition("/")
    if provider not in PROVIDERS:
        from lionrun.domain.suggest import did_you_mean

        raise invalid(f"unknown model {text!r}{did_you_mean(provider, PROVIDERS)} (known providers: "
                      f"{', '.join(PROVIDERS)})", model=text)
    if not _:
        return ModelSpec(provider)
    if provider == "sh":
        raise invalid("the sh provider takes no model name", model=text)
    if not _MODEL_NAME.match(model):
        raise invalid(f"malformed model name in {text!r}", model=text)
    return ModelSpec(provider, model)


def split_words(words: Sequence[str], prompt_given: bool) -> tuple[str | None, str | None]:
    """`[MODEL] PROMPT` positionals into (model text, prompt text)."""
    if prompt_given:
        if len(words) > 1:
            raise invalid("give the prompt once: as a positional, --prompt or --prompt-file")
        return (words[0] if words else None), None
    if not words:
        return None, None
    if len(words) == 1:
        return (words[0], None) if looks_like_model(words[0]) else (None, words[0])
    return words[0], " ".join(words[1:])


def check_prompt(text: str | None, what: str = "prompt") -> str:
    """A non-blank prompt of at most 256 KiB."""
    if text is None or not text.strip():
        raise invalid(f"the {what} is empty")
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > PROMPT_LIMIT:
        raise invalid(f"the {what} is {size} bytes; the limit is {PROMPT_LIMIT}", size=size, limit=PROMPT_LIMIT)
    return text


ExecCommand = tuple[str, Sequence[str]]  # (what it is, for the message; its argv)


def exec_size(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Bytes one exec of `argv` with `env` takes of the kernel's ARG_MAX budget.

    Every argument and `NAME=value` string with its NUL, a pointer for each, the NULs ending
    both arrays, and the executable's path, which the kernel copies onto the new stack as well.
    """
    strings = [*argv, *(f"{name}={value}" for name, value in env.items())]
    return (sum(_c_size(s) for s in strings) + (len(strings) + 2) * POINTER_BYTES
            + (_c_size(argv[0]) if argv else 0))


def check_exec(commands: Sequence[ExecCommand], env: Mapping[str, str], arg_max: int) -> int:
    """Refuse what exec would refuse (E2BIG) for any command a run will start; the largest size.

    One string over MAX_ARG_STRLEN (with its NUL), or one command's arguments and environment
    together over `arg_max` (the system's ARG_MAX), could never start, so the submit is refused
    before anything is written rather than failing inside the run.
    """
    for name, value in env.items():
        size = _c_size(f"{name}={value}")
        if size > MAX_ARG_STRLEN:
            raise invalid(f"the environment variable {name} is {size} bytes; one exec string is limited to "
                          f"{MAX_ARG_STRLEN}", variable=name, size=size, limit=MAX_ARG_STRLEN)
    largest = 0
    for what, argv in commands:
        for argument in argv:
            size = _c_size(argument)
            if size > MAX_ARG_STRLEN:
                raise invalid(f"the {what} would be given an argument of {size} bytes; one argument is "
                              f"limited to {MAX_ARG_STRLEN}", command=what, size=size, limit=MAX_ARG_STRLEN)
        total = exec_size(argv, env)
        if total > arg_max:
            raise invalid(f"the {what}'s arguments and environment are {total} bytes; this system's limit "
                          f"is {arg_max}", command=what, size=total, limit=arg_max)
        largest = max(largest, total)
    return largest


def exec_plan(request: RunRequest, runner: Sequence[str],
              provider_command: Callable[[ModelSpec], Sequence[str]]) -> list[ExecCommand]:
    """Every argv a run of `request` will exec: never a prompt, which reaches its work another way.

    The runner (`runner` plus the run id), each model's provider (`provider_command`, which knows
    the CLI's flags, this request's permission flag and provider args among them) and the notify command as delivery renders it: its placeholders filled with
    this request's label and kind, and room for the longest run id, status, outcome and reason code.
    """
    commands: list[ExecCommand] = [("runner", [*runner, RUN_ID_SHAPE])]
    commands.extend((f"{spec.text} provider", provider_command(spec)) for spec in request.models)
    if request.notify:
        word = "x" * _NOTIFY_WORD_RESERVE
        body = {"run_id": RUN_ID_SHAPE, "kind": request.kind, "label": request.label, "status": word,
                "terminal": True, "outcome": word, "reason_code": word,
                "finished_at": "0000-00-00T00:00:00.000000+00:00"}
        commands.append(("notify command", render(request.notify, body)))
    return commands


def _c_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape")) + 1


def parse_timeout(text: str | None) -> float | None:
    """Seconds, finite and positive, at most a week; None when not given."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise invalid(f"--timeout must be a number of seconds, not {text!r}", timeout=text) from None
    if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT:
        raise invalid(f"--timeout must be more than 0 and at most {MAX_TIMEOUT:.0f} seconds", timeout=text)
    return value


DEFAULT_IDLE_TIMEOUT = 900.0  # seconds an agent CLI may write no event before its run is stopped


def parse_idle_timeout(value: object, where: str = "--idle-timeout") -> float | None:
    """Seconds, finite, at most a week; 0 turns the watchdog off (None); None when not given."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise invalid(f"{where} must be a number of seconds", idle_timeout=str(value))
    try:
        seconds = float(value)
    except ValueError:
        raise invalid(f"{where} must be a number of seconds, not {value!r}", idle_timeout=str(value)) from None
    if not math.isfinite(seconds) or seconds < 0 or seconds > MAX_TIMEOUT:
        raise invalid(f"{where} must be between 0 (off) and {MAX_TIMEOUT:.0f} seconds", idle_timeout=str(value))
    return seconds


def parse_legs(text: str | None, default: int = 2) -> int:
    """A whole number of legs from 1 to 32."""
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise invalid(f"--legs must be a whole number, not {text!r}", legs=text) from None
    if not 1 <= value <= MAX_LEGS:
        raise invalid(f"--legs must be between 1 and {MAX_LEGS}", legs=text)
    return value


def parse_models(text: str) -> list[ModelSpec]:
    """`--models a,b,c`: one leg per model."""
    names = [n.strip() for n in text.split(",")]
    if not names or any(not n for n in names):
        raise invalid(f"--models must be a comma-separated list of models, not {text!r}", models=text)
    if len(names) > MAX_LEGS:
        raise invalid(f"--models names more than {MAX_LEGS} legs", models=text)
    return [parse_model(n) for n in names]


class Leg(Struct, frozen=True):
    """One unit of agent work inside a run; a `None` prompt means the run's instruction.txt."""

    id: str
    model: ModelSpec
    prompt: str | None = None
    depends_on: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "model": self.model.text, "prompt": self.prompt,
                "depends_on": list(self.depends_on)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Leg:
        prompt = data.get("prompt")
        return cls(str(data["id"]), parse_model(str(data["model"])),
                   None if prompt is None else str(prompt),
                   tuple(str(d) for d in data.get("depends_on", ())))


class RunRequest(Struct, frozen=True):
    """A validated submit: everything the runner needs, persisted as `request.json`."""

    kind: str
    instruction: str
    legs: tuple[Leg, ...]
    cwd: str
    label: str | None = None
    timeout: float | None = None
    # An agent leg whose CLI writes no event for this long is stopped (timed_out,
    # idle_timeout); None: no watchdog (shell work, or turned off with 0).
    idle_timeout: float | None = None
    synthesize: ModelSpec | None = None
    notify: tuple[str, ...] | None = None
    notify_source: str | None = None
    agents: dict[str, AgentRunOptions] = msgspec_field(default_factory=dict)
    extra: dict[str, Any] = msgspec_field(default_factory=dict)
    # Where the runner runs: `local`, or `slurm` with an optional partition and sbatch options.
    executor: str = "local"
    partition: str | None = None
    slurm_args: tuple[str, ...] = ()
    # The queue the run waits in for a slot: None for the default (`default`, or the
    # model's queue in config.toml, resolved before the submit).
    queue: str | None = None
    # How the work is confined: `auto` (the store hidden where the kernel allows it,
    # else unconfined and said), `required` (never started unconfined) or `off`.
    confine: str = "auto"
    # The run's own git worktree (None: it works in `cwd`), and the agent session a
    # reply resumes (its CLI's own id).
    worktree: WorktreePlan | None = None
    resume_session: str | None = None
    # What the run may spend (tokens, US dollars), counted from its CLIs' streams; None: no cap.
    budget: Budget | None = None
    # The run's work tried again on a vendor's passing trouble; None: one attempt.
    retry: RetryPolicy | None = None
    # Seconds a permission request waits for a person before it is denied (ask mode only).
    approval_timeout: float | None = None

    @property
    def asks(self) -> bool:
        """Whether a leg's CLI puts its permission prompts to a person through li."""
        return any(o.permission_mode == "ask" for o in self.agents.values())

    def arguments_for(self, provider: str) -> list[str]:
        """The argv a leg of `provider` adds to its command: permission flag, provider args, and the
        session a reply resumes (last: Codex's `resume ID` subcommand comes after exec's flags)."""
        from lionrun.domain.worktree import resume_arguments

        options = self.agents.get(provider)
        own = options.arguments(provider) if options is not None else []
        capped = self.budget.provider_arguments(provider) if self.budget is not None else []
        return [*own, *capped, *resume_arguments(provider, self.resume_session)]

    @property
    def providers(self) -> set[str]:
        names = {leg.model.provider for leg in self.legs}
        return names | ({self.synthesize.provider} if self.synthesize else set())

    @property
    def models(self) -> tuple[ModelSpec, ...]:
        """Every model a leg of this run may use, the synthesis leg's included, each once."""
        specs = [leg.model for leg in self.legs] + ([self.synthesize] if self.synthesize else [])
        return tuple(dict.fromkeys(specs))

    @property
    def model_text(self) -> str:
        return ",".join(dict.fromkeys(leg.model.text for leg in self.legs))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = to_builtins(self)
        del data["instruction"]  # lives in instruction.txt, written before the spawn
        data.update(schema_version=1, legs=[leg.to_dict() for leg in self.legs],
                    agents={name: options.to_dict() for name, options in sorted(self.agents.items())},
                    synthesize=self.synthesize.text if self.synthesize else None,
                    worktree=self.worktree.to_dict() if self.worktree is not None else None,
                    budget=self.budget.to_dict() if self.budget is not None else None,
                    retry=self.retry.to_dict() if self.retry is not None else None,
                    notify=list(self.notify) if self.notify is not None else None)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], instruction: str) -> RunRequest:
        """Read `request.json` back; raises ContractError(invalid_input) on anything malformed."""
        try:
            synth = data.get("synthesize")
            notify = data.get("notify")
            return cls(
                kind=str(data["kind"]), instruction=instruction,
                legs=tuple(Leg.from_dict(leg) for leg in data["legs"]), cwd=str(data["cwd"]),
                label=data.get("label"), timeout=data.get("timeout"),
                idle_timeout=_seconds(data.get("idle_timeout")),
                synthesize=parse_model(synth) if synth else None,
                notify=tuple(notify) if notify is not None else None,
                notify_source=data.get("notify_source"), extra=dict(data.get("extra") or {}),
                agents={str(k): AgentRunOptions.from_dict(v) for k, v in dict(data.get("agents") or {}).items()},
                executor=parse_executor(data.get("executor"), "request.json executor"),
                partition=parse_partition(data.get("partition"), "request.json partition"),
                slurm_args=parse_slurm_args(data.get("slurm_args"), "request.json slurm_args"),
                queue=_queue_named(data.get("queue")),
                confine=parse_confine(data.get("confine", "auto"), "request.json confine"),
                worktree=_worktree_plan(data.get("worktree")),
                resume_session=_session(data.get("resume_session")),
                budget=Budget.from_dict(data.get("budget")),
                retry=RetryPolicy.from_dict(data.get("retry")),
                approval_timeout=_seconds(data.get("approval_timeout")),
            )
        except (KeyError, TypeError, ValueError, AttributeError, ContractError) as exc:
            raise invalid(f"request.json is malformed: {exc}") from exc


CONFINE_MODES = ("auto", "required", "off")


def parse_confine(value: object, where: str = "--confine") -> str:
    """`auto`, `required` or `off`; anything else is refused, naming where it came from."""
    if value is None:
        return "auto"
    if not isinstance(value, str) or value not in CONFINE_MODES:
        raise invalid(f"{where} must be one of {', '.join(CONFINE_MODES)}, not {str(value)[:80]!r}",
                      argument="--confine")
    return value


CWD_IN_STORE = "cwd_in_store"  # reason code: a run's working folder at or below the store


def refuse_cwd_in_store(real_cwd: str, real_home: str) -> None:
    """A run never works inside the store: its legs would read other runs' prompts and
    rewrite their records. Both paths are real (links resolved); refused when `real_cwd` is
    `real_home` or below it."""
    home = real_home.rstrip("/") or "/"
    cwd = real_cwd.rstrip("/") or "/"
    if cwd == home or cwd.startswith(home if home.endswith("/") else home + "/"):
        raise invalid(f"the working folder {real_cwd} is inside li's store ({real_home}); a run never works "
                      "there: give another --cwd", cwd=real_cwd, reason_code=CWD_IN_STORE)


def _queue_named(value: object) -> str | None:
    """request.json's queue: None, or a queue name (anything else is a malformed request)."""
    from lionrun.domain.queue import QUEUE_NAME_PATTERN

    if value is None:
        return None
    if not isinstance(value, str) or QUEUE_NAME_PATTERN.fullmatch(value) is None:
        raise ValueError(f"request.json queue {str(value)[:80]!r} is not a queue name")
    return value


def _seconds(value: object) -> float | None:
    """A positive number of seconds from request.json, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def _worktree_plan(data: object) -> WorktreePlan | None:
    return None if data is None else WorktreePlan.from_dict(data)


def _session(data: object) -> str | None:
    from lionrun.domain.worktree import check_session_id

    return None if data is None else check_session_id(data)
