"""No verb imports another verb: what verbs share lives in a private helper module of entrypoints/verbs
(`_common`, `_submit`, `_order`, `_approvals`, `_views`) or in application/ (request assembly)."""

from __future__ import annotations

import ast
import pathlib

VERBS = pathlib.Path(__file__).resolve().parents[2] / "entrypoints" / "verbs"
PACKAGE = "lionrun.entrypoints.verbs"


def is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imported_verbs(tree: ast.AST) -> set[str]:
    """Verb modules (no leading underscore) this module imports at run time; mypy's TYPE_CHECKING
    blocks (the tables that hold each verb to the Verb protocol) are not imports."""
    found: set[str] = set()
    skipped = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If) and is_type_checking(node)
               for stmt in node.body for inner in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            module = node.module if node.level == 0 else f"{PACKAGE}.{node.module}"
            names = [module] + ([f"{module}.{alias.name}" for alias in node.names] if module == PACKAGE else [])
        else:
            continue
        for name in names:
            if name.startswith(PACKAGE + "."):
                verb = name[len(PACKAGE) + 1:].split(".")[0]
                if not verb.startswith("_"):
                    found.add(verb)
    return found


def test_no_module_of_the_verbs_imports_a_verb_module() -> None:
    modules = sorted(p for p in VERBS.glob("*.py") if p.name != "__init__.py")  # __init__ is the verb table
    assert len(modules) > 20, "too few verb modules found; the check would prove nothing"
    offences = {path.name: sorted(imported_verbs(ast.parse(path.read_text()))) for path in modules}
    assert {name: verbs for name, verbs in offences.items() if verbs} == {}


def test_the_check_sees_a_verb_importing_a_verb() -> None:
    # The converse, so the test above cannot pass merely because no import is recognised.
    tree = ast.parse("from lionrun.entrypoints.verbs.job_wait import selected_ids\n"
                     "def f():\n    from lionrun.entrypoints.verbs import agent, _common\n"
                     "import lionrun.entrypoints.verbs.job_status\n"
                     "if TYPE_CHECKING:\n    from lionrun.entrypoints.verbs import job_list\n")
    assert imported_verbs(tree) == {"job_wait", "agent", "job_status"}
