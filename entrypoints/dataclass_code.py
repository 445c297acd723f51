"""Lionrun's dataclasses load without compiling their generated methods (start-up time, issue 18).

On CPython 3.11 `@dataclass` writes each method it generates (`__init__`, `__repr__`, `__eq__`,
`__hash__`, and a frozen class's `__setattr__`/`__delattr__`) as source text and compiles it with
`exec`, one compile per method: about 1 ms per frozen class, 45-70 ms of CPU on every read (a
status read creates about 54 classes), more than the rest of its imports.

`entrypoints/_dataclass_code.py` is generated (`tools/gen_dataclass_code.py`) and byte-compiled at
install like any module: for each text that lionrun's own dataclasses make `dataclasses` compile,
it holds the code object compiled from exactly that text. While the hook is in place, the `exec`
that `dataclasses` calls looks the text up: on a hit the function is made from the stored code
with the globals `exec` would have used (the same code and the same globals: the same function,
only its `co_filename` names the generated file instead of `<string>`); on a miss (a class added
or changed since the file was generated, another Python, another package's dataclass) the text
is compiled as before. Correctness never depends on the file being current, only speed does
(tests/unit/test_dataclass_code.py fails when it is stale, with the command that regenerates it).

`dataclasses` itself is not imported here: `li handshake`, `--help` and `--version` never load it
(tests/e2e/test_startup_imports.py). `install()` patches it if it is already loaded, else puts a
finder on `sys.meta_path` that patches it right after its first import and then steps aside.
"""

# No `from __future__ import annotations` here: `exec` of a text compiles it with the future flags
# of the frame that calls it, so a text this module hands to the real `exec` would get postponed
# (string) annotations that `dataclasses` itself never gives (tests/unit/test_dataclass_code.py).
import builtins
import sys
from types import CodeType, FunctionType, ModuleType

# typing.TYPE_CHECKING without importing typing: a handshake never loads it (the annotations that
# name these are strings, as the module has no postponed annotations).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

_real_exec = builtins.exec


def _cached_exec(code: "Mapping[str, CodeType]") -> "Callable[..., None]":
    def cached_exec(source: "Any", globals: "Any" = None, locals: "Any" = None, /) -> None:
        compiled = code.get(source) if type(source) is str and type(locals) is dict else None
        if compiled is None or type(globals) is not dict or "__builtins__" not in globals:
            _real_exec(source, globals, locals)
            return
        # What `exec` of a text that only defines `__create_fn__` leaves in `locals`.
        locals["__create_fn__"] = FunctionType(compiled, globals)

    cached_exec.__lionrun_cached__ = True  # type: ignore[attr-defined]
    return cached_exec


def patch(dataclasses: ModuleType) -> bool:
    """Route `dataclasses`' compiles through the stored code; False when there is none to use."""
    if getattr(getattr(dataclasses, "exec", None), "__lionrun_cached__", False):
        return True
    try:
        from entrypoints._dataclass_code import CODE, PYTHON
    except ImportError:  # not generated (yet): every method is compiled as usual
        return False
    if tuple(PYTHON) != sys.version_info[:2]:
        return False  # texts of another version's dataclasses: none would be found
    dataclasses.exec = _cached_exec(CODE)  # type: ignore[attr-defined]
    return True


class _PatchOnImport:
    """A `sys.meta_path` finder for `dataclasses` alone: the real finder loads it, then it is patched."""

    @classmethod
    def find_spec(cls, name: str, path: "Any" = None, target: "Any" = None) -> "Any":
        if name != "dataclasses":
            return None
        cls.remove()
        spec = None
        for finder in sys.meta_path:  # the finders that would have found it
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _PatchAfter(spec.loader)
        return spec

    @classmethod
    def remove(cls) -> None:
        if cls in sys.meta_path:
            sys.meta_path.remove(cls)


class _PatchAfter:
    """The loader of `dataclasses`, which patches the module once it has run."""

    def __init__(self, loader: "Any") -> None:
        self._loader = loader

    def create_module(self, spec: "Any") -> "Any":
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        patch(module)

    def __getattr__(self, name: str) -> "Any":  # get_source, get_filename, ... as the real loader
        return getattr(self._loader, name)


def install() -> None:
    """Patch `dataclasses` now if it is loaded, else right after it is first imported."""
    loaded = sys.modules.get("dataclasses")
    if loaded is not None:
        patch(loaded)
    elif _PatchOnImport not in sys.meta_path:
        sys.meta_path.insert(0, _PatchOnImport)
