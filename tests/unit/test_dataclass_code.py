"""The stored dataclass code (entrypoints/dataclass_code.py): current, the same functions, used by reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.support import REPO

GENERATOR = os.path.join(REPO, "tools", "gen_dataclass_code.py")
GENERATED = "_dataclass_code.py"
PACKAGES = ("domain", "application", "adapters", "entrypoints")

pytestmark = pytest.mark.skipif(sys.version_info[:2] != (3, 11),
                                reason="the stored code is generated for CPython 3.11's dataclasses")


def python(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=REPO, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120, check=False,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_stored_code_is_current() -> None:
    done = subprocess.run([sys.executable, GENERATOR, "--check"], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, (
        "entrypoints/_dataclass_code.py disagrees with the dataclasses (a class was added or its fields "
        f"changed): run `.venv/bin/python tools/gen_dataclass_code.py` and commit the result\n{done.stderr}")


# Every generated method of every lionrun dataclass, described by what makes it that function.
FINGERPRINTS = """
    import dataclasses, importlib, json, pkgutil, sys
    if sys.argv[1] == "patched":
        from entrypoints.dataclass_code import install
        install()
    import dataclasses

    def code(c):
        return [c.co_name, c.co_qualname, c.co_code.hex(), c.co_names, c.co_varnames, c.co_freevars,
                c.co_cellvars, c.co_argcount, c.co_kwonlyargcount, c.co_flags,
                [code(k) if hasattr(k, "co_code") else repr(k) for k in c.co_consts]]

    out, stored = {}, 0
    for package in ("domain", "application", "adapters", "entrypoints"):
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
            module = importlib.import_module(info.name)
            for name, cls in sorted(vars(module).items()):
                if not (isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == info.name):
                    continue
                for method in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
                    fn = cls.__dict__.get(method)
                    if fn is None or not hasattr(fn, "__code__"):
                        continue
                    fn = getattr(fn, "__wrapped__", fn)
                    stored += fn.__code__.co_filename.endswith("_dataclass_code.py")
                    cells = [repr(c.cell_contents) for c in (fn.__closure__ or ())]
                    out[f"{info.name}.{name}.{method}"] = [
                        code(fn.__code__), fn.__qualname__, fn.__module__, fn.__globals__ is vars(module),
                        repr(fn.__defaults__), repr(fn.__kwdefaults__), cells, repr(fn.__annotations__)]
    json.dump({"methods": out, "stored": stored}, sys.stdout)
"""


def test_a_class_made_from_stored_code_has_the_very_methods_dataclasses_compiles() -> None:
    plain = json.loads(python(FINGERPRINTS, "plain"))
    patched = json.loads(python(FINGERPRINTS, "patched"))
    assert plain["stored"] == 0
    assert patched["stored"] > 100, "the stored code was not used; the comparison would prove nothing"
    assert len(plain["methods"]) > 100
    assert patched["methods"] == plain["methods"]


# A read through the real entry point: which lionrun dataclasses had a method compiled at run time.
COMPILED_AT_RUN_TIME = """
    import json, sys
    import entrypoints.bootstrap as bootstrap
    code = bootstrap.main(sys.argv[1:])
    import dataclasses
    classes = [c for m in list(sys.modules.values()) for c in vars(m).values()
               if isinstance(c, type) and dataclasses.is_dataclass(c)
               and c.__module__.split(".")[0] in ("domain", "application", "adapters", "entrypoints")]
    by_source = {}
    for cls in classes:
        fn = cls.__dict__.get("__init__")
        if fn is not None and hasattr(fn, "__code__"):
            by_source.setdefault(fn.__code__.co_filename.rsplit("/", 1)[-1], []).append(cls.__qualname__)
    json.dump({"code": code, "by_source": by_source}, sys.stderr)
"""


@pytest.mark.parametrize("argv", [("job", "list", "--machine"), ("job", "status", "20260101T000000-000000", "--machine")],
                         ids=["list", "status"])
def test_a_read_compiles_no_method_of_a_lionrun_dataclass(argv: tuple[str, ...], li_home: str) -> None:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(COMPILED_AT_RUN_TIME), *argv], cwd=REPO,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60, check=False,
                          env={**os.environ, "LI_HOME": li_home})
    report = json.loads(done.stderr.strip().splitlines()[-1])
    by_source = report["by_source"]
    assert len(by_source.get(GENERATED, [])) > 20, by_source
    assert set(by_source) == {GENERATED}, (
        f"compiled at run time: {by_source.get('<string>')}; run `.venv/bin/python tools/gen_dataclass_code.py`")


# A class the stored code does not know (another package's, or one added since it was generated).
UNKNOWN_CLASS = """
    import sys
    if sys.argv[1] == "patched":
        from entrypoints.dataclass_code import install
        install()
    import dataclasses, json

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class NotStored:
        count: int
        names: "list[str] | None" = None

    init = NotStored.__init__
    json.dump({"flags": init.__code__.co_flags, "file": init.__code__.co_filename,
               "annotations": repr(init.__annotations__), "repr": repr(NotStored(count=1)),
               "patched": getattr(dataclasses, "exec", None) is not None}, sys.stdout)
"""


def test_a_class_the_stored_code_does_not_know_is_compiled_as_dataclasses_compiles_it() -> None:
    plain = json.loads(python(UNKNOWN_CLASS, "plain"))
    patched = json.loads(python(UNKNOWN_CLASS, "patched"))
    assert patched.pop("patched") and not plain.pop("patched"), "the hook was not in place"
    assert patched == plain  # the same compile flags (no postponed annotations), annotations, repr
