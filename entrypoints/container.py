"""The one composition root: the sides' containers composed, configured from the environment.

Each side is a container in its own module under `entrypoints/wiring/`, importing its classes
normally (dependency-injector's multiple-containers layout). `core` and `reads` are composed with
`providers.Container`; the waits, submit, notices and upkeep sides with `Deferred`, the same composition
whose module is imported on first use, so `li job status` loads the read side and nothing else.

An outside test swaps one adapter in one line, e.g.
`container.core.store.override(providers.Object(MemoryRunStore()))`.
"""

from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy
from typing import Any

from entrypoints._di import containers, providers
from entrypoints.settings import DEFAULTS, from_environment
from entrypoints.wiring.core import Core
from entrypoints.wiring.reads import Reads


class Deferred(providers.Provider[Any]):
    """`providers.Container` of a container class imported on first use (start-up cost).

    `load` returns the class (it does the import); `dependencies` are handed to the container
    as `providers.Container` hands them. Attribute access reaches the container's providers.
    """

    __slots__ = ("_load", "_dependencies", "_composed")

    def __init__(self, load: Callable[[], type[containers.DeclarativeContainer]], **dependencies: Any) -> None:
        self._load = load
        self._dependencies = dependencies
        self._composed: Any = None
        super().__init__()

    def _container_provider(self) -> Any:
        if self._composed is None:
            self._composed = providers.Container(self._load(), **self._dependencies)
        return self._composed

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._container_provider(), name)

    def __deepcopy__(self, memo: dict[Any, Any] | None = None) -> Deferred:
        memo = {} if memo is None else memo
        copied: Deferred | None = memo.get(id(self))
        if copied is not None:
            return copied
        copied = type(self)(self._load, **deepcopy(self._dependencies, memo))
        memo[id(self)] = copied
        if self._composed is not None:
            copied._composed = deepcopy(self._composed, memo)
        self._copy_overridings(copied, memo)
        return copied

    def _provide(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self._container_provider()()


def submit_side() -> type[containers.DeclarativeContainer]:
    from entrypoints.wiring.submit import SubmitSide

    return SubmitSide


def notices_side() -> type[containers.DeclarativeContainer]:
    from entrypoints.wiring.notices import NoticesSide

    return NoticesSide


def waits_side() -> type[containers.DeclarativeContainer]:
    from entrypoints.wiring.waits import Waits

    return Waits


def upkeep_side() -> type[containers.DeclarativeContainer]:
    from entrypoints.wiring.upkeep import Upkeep

    return Upkeep


def on_first_use(notices: Any) -> Callable[[Any], None]:
    """The reap hook: the notices side is loaded only when a reap actually publishes.

    Every status, list and wait composes an Observer; almost none of them reap.
    """

    def send(run: Any) -> None:
        notices().reap_notices().send(run)

    return send


class Container(containers.DeclarativeContainer):
    config = providers.Configuration(default=dict(DEFAULTS))

    core = providers.Container(Core, config=config)
    notices = Deferred(notices_side, config=config, core=core)
    reads = providers.Container(
        Reads, config=config, core=core, on_reaped=providers.Callable(on_first_use, notices.provider),
    )
    waits = Deferred(waits_side, core=core, reads=reads)
    submit = Deferred(submit_side, config=config, core=core)
    upkeep = Deferred(upkeep_side, core=core, reads=reads)


_container: Container | None = None


def get_container() -> Container:
    """The process-wide container, configured from the environment on first use."""
    global _container
    if _container is None:
        _container = Container()
        _container.config.from_dict(from_environment())
    return _container


def set_container(container: Container | None) -> None:
    """Install a container (tests), or drop it so the next use builds a fresh one."""
    global _container
    _container = container
