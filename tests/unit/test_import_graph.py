"""No import circle between our modules: every module can be read (and imported) after what it imports.

Over the whole graph grimp builds for import-linter, function-local imports included; an
import-linter `acyclic_siblings` contract would miss a package importing its own submodule that
imports the package back.
"""

from __future__ import annotations

import grimp

PACKAGES = ("lionrun",)


def circles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(imports.get(module, ())):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return found


def test_the_check_finds_a_circle_when_there_is_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": set()}
    assert circles(graph) == [["a", "b", "c"]]


def test_there_is_no_import_circle_between_our_modules() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    ours = {module for module in graph.modules if module.split(".")[0] in PACKAGES}
    assert len(ours) > 50, "the graph holds too few of our modules to prove anything"
    imports = {module: graph.find_modules_directly_imported_by(module) & ours for module in ours}
    assert circles(imports) == []
