"""dependency-injector, imported without what it probes for and this container never uses (start-up cost).

Only on the exact releases in SHIMMED, the ones tests/unit/test_di_import.py and `.ci/run` ran it
on; any other release (pyproject.toml allows a range CI installs release by release) is imported
plainly: correct, only slower. Nothing else in lionrun touches `sys.modules`; docs/performance.md
says what this saves and how it was measured.

`li` may be called on every poll, so what dependency-injector drags in at import time is paid by
every read. These are kept out while it loads (everything is importable again as soon as
this returns; nothing already imported is touched):

* Its optional integrations: starlette, fastapi, fast-depends and werkzeug (wiring), yaml and
  pydantic-settings (Configuration loaders); hidden, each is refused at once instead of being
  searched for along `sys.path`. Without pydantic-settings its providers module falls back to
  `import pydantic` (for the pydantic v1 `BaseSettings`) inside a try/except ImportError, so
  pydantic is kept out as well (a stand-in whose VERSION is not 1.x: a plain `import` in Cython does not refuse a None
  in sys.modules): pydantic on every read otherwise.
* asyncio (with ssl, logging, concurrent.futures). providers, containers and
  _cwiring do `from asyncio import Future, ensure_future, gather` at import time but call them
  only on the async paths: when a provider is a Coroutine/async Resource or an injected value is
  a future or a coroutine (told by duck typing and by `types.CoroutineType`/`collections.abc.
  Coroutine`, never by asyncio). This container has no async provider (tests/unit/
  test_di_import.py fails if one appears), so while it loads `asyncio` is a stand-in whose three
  names import the real asyncio when first called: an async provider added one day still works,
  it just pays for asyncio when it runs. `asyncio.coroutines` is hidden, so dependency-injector
  takes its own documented fallbacks (`_COROUTINE_TYPES` = (CoroutineType, Coroutine), the
  `_is_coroutine` marker of Coroutine providers = True, which only `asyncio.iscoroutinefunction`
  of a Coroutine provider would look at).
* configparser (its regexes are compiled at import) and contextvars. providers
  imports `ConfigParser` for `Configuration.from_ini` alone and `ContextVar` for the
  context-local providers alone, none of which this container uses; while it loads, each is a
  stand-in that imports the real module when first called, so they still work
  (tests/unit/test_di_import.py).
* Its wiring module (with pkgutil, _cwiring and the typing introspection of `@inject`). containers imports `wire` and `unwire` from it, and calls them only when a container
  is wired to modules or packages; this one never is (no `@inject` anywhere in lionrun). While
  it loads, `dependency_injector.wiring` is a stand-in whose two functions import the real
  module when first called; `from dependency_injector.wiring import inject` imports the real one.

The stand-ins are only in `sys.modules` during that one import, on the main thread at start-up.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

SHIMMED = frozenset({"4.49.1"})
HIDDEN = ("starlette", "fastapi", "fast_depends", "werkzeug", "yaml", "pydantic_settings", "asyncio.coroutines")
DEFERRED = {
    "asyncio": ("Future", "ensure_future", "gather", "iscoroutinefunction"),
    "configparser": ("ConfigParser",),
    "dependency_injector.wiring": ("wire", "unwire"),
    "contextvars": ("ContextVar",),
}


def _deferred(module: str, name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        import importlib  # the real module: only an async provider, `from_ini` or a wiring gets here

        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _stand_in(module: str) -> ModuleType:
    stand_in = ModuleType(module, "lionrun's stand-in while dependency-injector loads (entrypoints/startup/di_import.py)")
    for name in DEFERRED[module]:
        setattr(stand_in, name, _deferred(module, name))
    return stand_in


def _pydantic_stand_in() -> ModuleType:
    """Cython's plain `import pydantic` takes a module found in sys.modules as it is, even None, and
    reads `pydantic.VERSION`; a version that is not 1.x makes it skip the v1 settings loader."""
    stand_in = ModuleType("pydantic", "lionrun's stand-in while dependency-injector loads (entrypoints/startup/di_import.py)")
    stand_in.VERSION = "hidden"  # type: ignore[attr-defined]
    return stand_in


def _import_dependency_injector() -> tuple[ModuleType, ModuleType]:
    """Import dependency-injector's containers and providers, with HIDDEN hidden and DEFERRED deferred
    on a release in SHIMMED; plainly on any other."""
    from dependency_injector import __version__

    if __version__ not in SHIMMED or "dependency_injector.providers" in sys.modules:
        from dependency_injector import containers, providers

        return containers, providers
    placed: dict[str, ModuleType | None] = {name: None for name in HIDDEN if name not in sys.modules}
    if "pydantic" not in sys.modules:
        placed["pydantic"] = _pydantic_stand_in()
    for deferred in DEFERRED:
        if deferred not in sys.modules:
            placed[deferred] = _stand_in(deferred)
    for name, module in placed.items():
        sys.modules[name] = module  # type: ignore[assignment]
    try:
        from dependency_injector import containers, providers
    finally:
        for name, module in placed.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
    return containers, providers


if TYPE_CHECKING:
    from dependency_injector import containers, providers
else:
    containers, providers = _import_dependency_injector()

__all__ = ["containers", "providers"]
