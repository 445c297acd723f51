"""entrypoints/startup/di_import.py keeps asyncio and pydantic out of every read by loading dependency-injector with
stand-ins, on the releases in its SHIMMED alone; that is only sound while no provider of the
composition root is async. These tests fail if one becomes async, if the stand-ins leak, or if an
async provider stopped working through them; on any other release, if the import is not plain."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from typing import Any

from dependency_injector import providers

from lionrun.entrypoints.container import Container
from tests.support import REPO

SIDES = ("core", "reads", "notices", "waits", "submit", "upkeep")


def every_provider(container: Any) -> list[Any]:
    """Every provider of the composition root, every side's included."""
    return list(container.traverse())


def test_the_walk_reaches_every_provider_of_every_side() -> None:
    container = Container()
    found = {id(p) for p in every_provider(container)}
    for name in SIDES:
        side = getattr(container, name)
        assert {id(p) for p in side.providers.values()} <= found, name


def is_async(provider: Any) -> bool:
    if isinstance(provider, providers.Coroutine | providers.Resource):
        return True  # a Resource may be async (an async generator or an AsyncResource)
    provides = getattr(provider, "provides", None)
    if provides is None:
        return False
    target = provides.__init__ if isinstance(provides, type) else provides
    return inspect.iscoroutinefunction(target) or inspect.isasyncgenfunction(target)


def test_no_provider_of_the_composition_root_is_async() -> None:
    found = every_provider(Container())
    assert len(found) > 20, "the traversal found too little; the check would prove nothing"
    assert [p for p in found if is_async(p)] == []


def test_the_check_sees_an_async_provider() -> None:
    async def fetch() -> int:
        return 1

    assert is_async(providers.Coroutine(fetch)) and is_async(providers.Factory(fetch))
    assert not is_async(providers.Factory(dict))


PROBE = textwrap.dedent("""
    import json, sys
    import lionrun.entrypoints.startup.di_import as di
    from dependency_injector import __version__
    after_import = sorted(n for n in ("asyncio", "pydantic", "pydantic_core", "ssl", "configparser",
                                      "fastapi", "werkzeug", "fast_depends", "dependency_injector.wiring",
                                      "dependency_injector._cwiring", "contextvars") if n in sys.modules)
    import asyncio, pydantic, tempfile, os
    with tempfile.TemporaryDirectory() as folder:
        ini = os.path.join(folder, "settings.ini")
        with open(ini, "w") as handle:
            handle.write("[section]\\nkey = value\\n")
        config = di.providers.Configuration()
        config.from_ini(ini, required=True)
        from_ini = config()
    import types
    class Wired(di.containers.DeclarativeContainer):
        value = di.providers.Object(7)
    module = types.ModuleType("probe_wired")
    module.Wired = Wired
    sys.modules["probe_wired"] = module
    exec("from dependency_injector.wiring import Provide, inject\\n"
         "@inject\\ndef read(value=Provide[Wired.value]):\\n    return value\\n", module.__dict__)
    container = Wired()
    container.wire(modules=[module])
    wired = module.read()
    container.unwire()
    local = di.providers.ContextLocalSingleton(dict, x=1)
    context_local = local() is local() and local() == {"x": 1}
    real = asyncio.__file__ is not None and hasattr(asyncio, "run") and pydantic.VERSION.startswith("2")

    async def add(x):
        return x + 1

    combined = di.providers.Factory(dict, x=di.providers.Coroutine(add, 1))

    async def main():
        return await combined()

    print(json.dumps({"shimmed": __version__ in di.SHIMMED, "after_import": after_import, "real": real, "from_ini": from_ini, "wired": wired,
                      "context_local": context_local,
                      "coroutine": asyncio.run(di.providers.Coroutine(add, 41)()),
                      "injected": asyncio.run(main())}))
""")


def test_dependency_injector_loads_without_asyncio_pydantic_configparser_or_wiring_and_they_still_work() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=60,
                         check=True).stdout
    import json

    answer = json.loads(out)
    if not answer.pop("shimmed"):  # a release the shim was not tested on: a plain import
        assert "asyncio" in answer.pop("after_import")
        answer["after_import"] = []
    assert answer == {"after_import": [], "real": True, "from_ini": {"section": {"key": "value"}}, "wired": 7,
                      "context_local": True,
                      "coroutine": 42, "injected": {"x": 2}}
