"""What a submit asks for, validated purely: model specs, prompt and exec limits, numbers."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from domain.contract import ContractError, ErrorKind
from domain.notify import render

PROVIDERS = ("sh", "claude", "codex", "gemini")
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


def invalid(message: str, **detail: Any) -> ContractError:
    """An `invalid_input` refusal with an optional detail object."""
    return ContractError(ErrorKind.INVALID_INPUT, message, detail or None)


@dataclass(frozen=True)
class ModelSpec:
    """`provider[/model]`: which CLI does the work and which model it asks for."""

    provider: str
    model: str | None = None

    @property
    def text(self) -> str:
        return self.provider if self.model is None else f"{self.provider}/{self.model}"


def looks_like_model(text: str) -> bool:
    """True when `text` names a known provider (with or without a model)."""
    return text.split("/", 1)[0] in PROVIDERS


def parse_model(text: str) -> ModelSpec:
    """`sh`, `claude`, `claude/opus`, `codex/o3`, `gemini/gemini-2.5-pro`; anything else is refused."""
    provider, _, model = text.partition("/")
    if provider not in PROVIDERS:
        raise invalid(f"unknown model {text!r}; known providers: {', '.join(PROVIDERS)}", model=text)
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
    the CLI's flags) and the notify command as delivery renders it: its placeholders filled with
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
        raise invalid(f"--timeout must be between 0 and {MAX_TIMEOUT:.0f} seconds", timeout=text)
    return value


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


@dataclass(frozen=True)
class Leg:
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


@dataclass(frozen=True)
class RunRequest:
    """A validated submit: everything the runner needs, persisted as `request.json`."""

    kind: str
    instruction: str
    legs: tuple[Leg, ...]
    cwd: str
    label: str | None = None
    timeout: float | None = None
    synthesize: ModelSpec | None = None
    notify: tuple[str, ...] | None = None
    notify_source: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

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
        data = asdict(self)
        del data["instruction"]  # lives in instruction.txt, written before the spawn
        data.update(schema_version=1, legs=[leg.to_dict() for leg in self.legs],
                    synthesize=self.synthesize.text if self.synthesize else None,
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
                synthesize=parse_model(synth) if synth else None,
                notify=tuple(notify) if notify is not None else None,
                notify_source=data.get("notify_source"), extra=dict(data.get("extra") or {}),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise invalid(f"request.json is malformed: {exc}") from exc
