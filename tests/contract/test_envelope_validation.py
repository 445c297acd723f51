"""The validator used on every `machine()` envelope accepts the ADR's examples and rejects broken ones."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from tests.contract.validate import check_envelope, problems, verb_of
from tests.support import ENVELOPE_HOOKS, li_bin, machine

ADR_STATUS = {
    "run_id": "20260725T175010-97f334", "kind": "agent", "label": "example",
    "status": "completed_empty", "terminal": True, "outcome": "failed", "reason_code": "no_artifacts",
    "alive": False, "pid": 41234, "submitted_at": "2026-07-25T17:50:10.412331+00:00",
    "finished_at": "2026-07-25T17:51:28.636751+00:00", "possibly_orphaned": False,
    "spawn_state": "started", "age_seconds": 78.2,
    "delivery": {"available": True, "value": {"attempted": False}, "reason_code": None, "detail": None},
    "manifest": {"available": False, "value": None, "reason_code": "missing", "detail": "not yet"},
    "usage": {"available": False, "value": None, "reason_code": "missing", "detail": "no manifest"},
}
ADR_SUBMIT = {"run_id": "20260725T175010-97f334", "pid": 41234, "status": "running",
              "terminal": False, "outcome": None, "log": "/abs/path/to/console.log"}


def ok(data: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "contract_version": 1, "data": data, "error": None}


def refusal(kind: str) -> dict[str, Any]:
    return {"ok": False, "contract_version": 1, "data": None,
            "error": {"kind": kind, "message": "no job with id ...", "detail": None}}


def test_the_adrs_own_examples_conform() -> None:
    assert problems(ok(ADR_STATUS), ["job", "status", "x"]) == []
    assert problems(ok(ADR_SUBMIT), ["agent", "--detach", "sh", "true"]) == []
    assert problems(refusal("not_found"), ["job", "status", "x"]) == []


@pytest.mark.parametrize("broken", [
    {"ok": True, "contract_version": 1, "data": None, "error": None},
    {"ok": False, "contract_version": 1, "data": {}, "error": {"kind": "internal", "message": "m"}},
    {"ok": True, "contract_version": 1, "data": {}, "error": {"kind": "internal", "message": "m"}},
    {"ok": "true", "contract_version": 1, "data": {}, "error": None},
    {"ok": True, "contract_version": "1", "data": {}, "error": None},
    {"ok": True, "data": {}, "error": None},
    refusal("timeout"),
    [],
])
def test_a_malformed_envelope_is_rejected(broken: Any) -> None:
    assert problems(broken, ["handshake"])


def test_an_outcome_outside_the_closed_set_is_rejected() -> None:
    assert problems(ok({**ADR_STATUS, "outcome": "success"}), ["job", "status", "x"])


def test_a_status_outside_the_v1_list_is_accepted_because_status_is_open() -> None:
    assert problems(ok({**ADR_STATUS, "status": "quarantined"}), ["job", "status", "x"]) == []


def test_a_status_bearing_answer_without_terminal_is_rejected() -> None:
    data = dict(ADR_STATUS)
    del data["terminal"]
    assert problems(ok(data), ["job", "status", "x"])


def test_unknown_fields_pass_the_published_schema_and_fail_the_strict_check() -> None:
    envelope = ok({**ADR_SUBMIT, "surprise": 1})
    assert problems(envelope, ["agent", "sh", "true"]) == []
    assert problems(envelope, ["agent", "sh", "true"], strict=True)


@pytest.mark.parametrize(("argv", "verb"), [
    (["handshake"], "handshake"),
    (["--version"], "version"),
    (["job", "status", "--help"], "help"),
    (["agent", "--detach", "sh", "true"], "submit"),
    (["orchestrate", "fanout", "sh", "x"], "submit"),
    (["job", "--limit", "3", "list"], "list"),
    (["job", "wait", "a", "b", "--max-wait", "0"], "wait"),
    (["agent", "sh", "--", "--help"], "submit"),
    (["bogus"], None),
])
def test_the_verb_of_an_argv_names_its_schema(argv: list[str], verb: str | None) -> None:
    assert verb_of(argv) == verb


def test_a_real_handshake_conforms_strictly(li_home: str) -> None:
    envelope = machine("handshake", home=li_home).envelope
    check_envelope(("handshake",), envelope, strict=True)


def test_a_real_refusal_conforms(li_home: str) -> None:
    envelope = machine("no-such-verb", home=li_home).envelope
    assert envelope["error"]["kind"] == "invalid_input"
    check_envelope(("no-such-verb",), envelope, strict=True)


def test_machine_runs_the_schema_hook_on_every_envelope(li_home: str) -> None:
    seen: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    ENVELOPE_HOOKS.append(lambda argv, envelope: seen.append((argv, envelope)))
    try:
        machine("handshake", home=li_home)
    finally:
        ENVELOPE_HOOKS.pop()
    assert [argv for argv, _ in seen] == [("handshake", "--machine")]


def test_the_schema_hook_fails_a_test_whose_envelope_breaks_the_schema() -> None:
    with pytest.raises(AssertionError, match="breaks the published schema"):
        check_envelope(("job", "status", "x"), ok({**ADR_STATUS, "terminal": "yes"}))


@pytest.mark.parametrize("argv", [["handshake"], ["--help"], ["--version"]])
def test_pydantic_is_never_imported_on_the_hot_path(argv: list[str], li_home: str) -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", li_bin(), *argv, "--machine"],
                          capture_output=True, text=True, env={**os.environ, "LI_HOME": li_home})
    assert done.returncode == 0, done.stderr
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert not any(name == "pydantic" or name.startswith("pydantic.") for name in imported)
    assert "jsonschema" not in imported


def test_the_wire_model_serialises_without_pydantic() -> None:
    """lionrun.domain.wire is what every answer is built from at run time; the schema alone needs pydantic."""
    probe = ("import sys, lionrun.domain.wire, lionrun.domain.contract; "
             "lionrun.domain.contract.success(lionrun.domain.wire.HelpData(help='x').to_wire()); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_no_verb_module_imports_pydantic() -> None:
    import ast
    import glob

    from tests.support import REPO

    modules = glob.glob(os.path.join(REPO, "entrypoints", "verbs", "*.py"))
    modules += [os.path.join(REPO, "entrypoints", f) for f in ("bootstrap.py", "cli.py", "dispatch.py")]
    offenders = []
    for path in modules:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{os.path.basename(path)}: {n}" for n in names
                          if n.split(".")[0] == "pydantic"]
    assert offenders == []
