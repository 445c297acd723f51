"""The one composition root: the sides' containers composed, configured from the environment.

Each side is a container in its own module under `entrypoints/wiring/` (dependency-injector's
multiple-containers layout), all composed with `providers.Container`. The waits, submit, notices and
upkeep sides build their services through typed functions that import the service's module when
first called, so `li job status` loads the read side's classes and nothing else.

An outside test swaps one adapter in one line, e.g.
`container.core.store.override(providers.Object(MemoryRunStore()))`.
"""

from __future__ import annotations

from entrypoints._di import containers, providers
from entrypoints.settings import DEFAULTS, from_environment
from entrypoints.wiring.core import Core
from entrypoints.wiring.notices import NoticesSide
from entrypoints.wiring.reads import Reads
from entrypoints.wiring.submit import SubmitSide
from entrypoints.wiring.upkeep import Upkeep
from entrypoints.wiring.waits import Waits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from domain.run import Run


def on_first_use(notices: Callable[[], NoticesSide]) -> Callable[[Run], None]:
    """The reap hook: the notices are built only when a reap actually publishes.

    Every status, list and wait composes an Observer; almost none of them reap.
    """

    def send(run: Run) -> None:
        notices().reap_notices().send(run)

    return send


class Container(containers.DeclarativeContainer):
    config = providers.Configuration(default=dict(DEFAULTS))

    core = providers.Container(Core, config=config)
    notices = providers.Container(NoticesSide, config=config, core=core)
    reads = providers.Container(
        Reads, config=config, core=core, on_reaped=providers.Callable(on_first_use, notices.provider),
    )
    waits = providers.Container(Waits, core=core, reads=reads)
    submit = providers.Container(SubmitSide, config=config, core=core)
    upkeep = providers.Container(Upkeep, core=core, reads=reads)


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
