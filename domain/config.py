"""li's settings: what `$LI_HOME/config.toml` says, with the environment variables that override it.

One `Settings` per process (entrypoints/settings.py reads the file once, when the composition root
is built); every reader takes its entries from it. The file's bytes are kept as read: a read needs
only `store`, found without parsing unless the file may name one; the submit defaults (`entries`)
are parsed and checked on first use, each entry on its own, so an entry that cannot be used is
refused only by a call that needs it (`usable`), with the message that names where it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any, TypeVar

from msgspec import Struct, field

from lionrun.domain.contract import ContractError, ErrorKind

T = TypeVar("T")
CONFIG_NAME = "config.toml"


class Unusable(Struct, frozen=True):
    """An entry of config.toml that cannot be used: the refusal a call that needs it answers."""

    kind: ErrorKind
    message: str
    detail: Mapping[str, Any] | None = None

    def error(self) -> ContractError:
        return ContractError(self.kind, self.message, dict(self.detail) if self.detail is not None else None)


def usable(entry: T | Unusable) -> T:
    """The entry's value; its refusal (a ContractError) when it cannot be used."""
    if isinstance(entry, Unusable):
        raise entry.error()
    return entry


class ConfigFile(Struct, frozen=True):
    """config.toml as read once: where it is, its bytes (None: there is none), or why it cannot be read."""

    path: str
    raw: bytes | None = None
    error: str | None = None

    def mentions(self, *words: bytes) -> bool:
        """Whether the file may say one of `words` (a file that cannot be read may: its reader says why)."""
        return self.error is not None or (self.raw is not None and any(word in self.raw for word in words))


class ConfigEntries(Struct, frozen=True):
    """config.toml's submit defaults, each checked: its value, or why it cannot be used."""

    executor: str | Unusable = "local"
    # `[slurm]`'s two entries, each checked on its own: a flag that gives one never needs the other
    slurm_partition: str | None | Unusable = None
    slurm_args: tuple[str, ...] | Unusable = ()
    confine: str | None | Unusable = None
    worktree: bool | Unusable = False
    worktree_setup: str | None | Unusable = None
    idle_timeout: float | None | Unusable = None
    notify: object = None  # the raw entry: the notify choice (domain/notify.py) checks it beside the flag and env
    queues: Mapping[str, object] | Unusable = field(default_factory=dict)
    providers: Mapping[str, object] | Unusable = field(default_factory=dict)


# dict=True: `entries` is a cached_property, kept in the instance dict
class Settings(Struct, frozen=True, dict=True):
    """Everything li reads from config.toml, and the environment variables that win over it."""

    home: str
    file: ConfigFile
    store: str = ""  # LI_STORE, else `store` in config.toml; "" for the filesystem store under `home`
    notify_command: str | None = None  # LI_NOTIFY_COMMAND, which wins over `notify` in config.toml

    @cached_property
    def entries(self) -> ConfigEntries:
        """The submit defaults, parsed from the bytes read (never read again) on first use."""
        if self.file.error is not None:
            return unreadable(Unusable(ErrorKind.UNAVAILABLE, f"{self.file.path} cannot be read: {self.file.error}",
                                       {"path": self.file.path, "reason_code": "store_refused"}))
        try:
            table = parse_table(self.file.raw, self.file.path)
        except ValueError as exc:
            return unreadable(Unusable(ErrorKind.INVALID_INPUT, str(exc), {"path": self.file.path}))
        return entries_of(table)


def parse_table(raw: bytes | None, path: str) -> dict[str, Any]:
    """The file's TOML table; ValueError naming the file when it is not UTF-8 TOML."""
    if raw is None:
        return {}
    import tomllib  # only when there is a file to parse (start-up cost)

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path} cannot be read: {exc}") from None


def store_of(raw: bytes | None, path: str) -> str:
    """`store` in the file's bytes; "" when it names none or cannot be parsed (the calls that need
    the file say why; the store stays the filesystem one). Parsed only when it may name one."""
    if raw is None or b"store" not in raw:
        return ""
    try:
        value = parse_table(raw, path).get("store", "")
    except ValueError:
        return ""
    return value if isinstance(value, str) else ""


def unreadable(why: Unusable) -> ConfigEntries:
    """Every entry refused with the file's own refusal."""
    return ConfigEntries(executor=why, slurm_partition=why, slurm_args=why, confine=why, worktree=why, worktree_setup=why, idle_timeout=why,
                         notify=why, queues=why, providers=why)


def entries_of(table: Mapping[str, Any]) -> ConfigEntries:
    """Each submit default of the table checked on its own (domain/request.py's parsers, naming config.toml)."""
    from lionrun.domain.request import invalid, parse_confine, parse_executor, parse_idle_timeout
    from lionrun.domain.worktree import check_setup

    def confine() -> str | None:
        return None if "confine" not in table else parse_confine(table["confine"], "config.toml confine")

    def worktree() -> bool:
        wanted = table.get("worktree", False)
        if not isinstance(wanted, bool):
            raise invalid("config.toml: `worktree` must be true or false")
        return wanted

    def queues() -> Mapping[str, object]:
        value = table.get("queues", {})
        if not isinstance(value, dict):
            raise invalid('config.toml: `queues` must be a table of MODEL = "QUEUE"')
        return value

    def providers() -> Mapping[str, object]:
        value = table.get("providers", {})
        if not isinstance(value, dict):
            raise invalid("config.toml: `providers` must be a table of [providers.NAME] tables")
        return value

    return ConfigEntries(
        executor=checked(lambda: parse_executor(table.get("executor"), "config.toml executor")),
        slurm_partition=checked(lambda: slurm_partition(table)), slurm_args=checked(lambda: slurm_args(table)),
        confine=checked(confine),
        worktree=checked(worktree),
        worktree_setup=checked(lambda: check_setup(table.get("worktree_setup"), "config.toml worktree_setup")),
        idle_timeout=checked(lambda: parse_idle_timeout(table.get("idle_timeout"), "config.toml idle_timeout")),
        notify=table.get("notify"), queues=checked(queues), providers=checked(providers))


def slurm_table(table: Mapping[str, Any]) -> Mapping[str, Any]:
    from lionrun.domain.request import invalid

    value = table.get("slurm", {})
    if not isinstance(value, dict):
        raise invalid("config.toml: `slurm` must be a table ([slurm] partition, args)")
    return value


def slurm_partition(table: Mapping[str, Any]) -> str | None:
    from lionrun.domain.request import parse_partition

    return parse_partition(slurm_table(table).get("partition"), "config.toml [slurm] partition")


def slurm_args(table: Mapping[str, Any]) -> tuple[str, ...]:
    from lionrun.domain.request import parse_slurm_args

    return parse_slurm_args(slurm_table(table).get("args"), "config.toml [slurm] args")


def checked(parse: Callable[[], T]) -> T | Unusable:
    """The parsed entry, or its refusal kept for the call that needs it."""
    try:
        return parse()
    except ContractError as exc:
        return Unusable(exc.kind, exc.message, exc.detail)
