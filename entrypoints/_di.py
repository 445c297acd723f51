"""dependency-injector, imported without the optional integrations it probes for (start-up cost)."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING


def _import_dependency_injector() -> tuple[ModuleType, ModuleType]:
    """Import dependency-injector without the optional integrations it probes for at import time.

    It tries starlette (wiring), yaml and pydantic-settings (Configuration loaders), none of
    which this container uses; hiding them while it loads halves its import cost, and `li` may
    be called on every poll. They are importable again as soon as this returns.
    """
    hidden = [name for name in ("starlette", "yaml", "pydantic_settings") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        from dependency_injector import containers, providers
    finally:
        for name in hidden:
            sys.modules.pop(name, None)
    return containers, providers


if TYPE_CHECKING:
    from dependency_injector import containers, providers
else:
    containers, providers = _import_dependency_injector()

__all__ = ["containers", "providers"]
