"""Every vocabulary is open or closed as docs/wire-contract.md's table says, and the
published schemas agree — a consumer that validates real answers against `contract/v1` accepts
any new value of an open vocabulary and only the known values of a closed one.

The table is read from the doc (`schema:field` paths); the answers are real: `li` run over a
store holding an ended run, a killed one, a torn record, a queue.
"""

from __future__ import annotations

import copy
import json
import os
import re
from typing import Any

import pytest

from tests.contract.validate import SCHEMA_DIR, load
from tests.support import REPO, run_li
from tools.synthetic import write_run

NEW = "zz_a_value_no_li_has_sent_yet"
TORN_ID = "20260101T010000-0000ff"


def vocabulary_rows() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(vocabulary, open|closed, [(schema, field path)]) for each row of the doc's table."""
    with open(os.path.join(REPO, "docs", "wire-contract.md"), encoding="utf-8") as handle:
        text = handle.read()
    table = re.search(r"<!-- vocabularies -->\n(.*?)<!-- /vocabularies -->", text, re.S)
    assert table, "docs/wire-contract.md has no vocabularies table"
    rows = []
    for line in table.group(1).strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        kind = "closed" if cells[1] == "closed" else "open" if cells[1].startswith("open") else cells[1]
        paths = [tuple(p.split(":", 1)) for p in re.findall(r"`([a-z-]+:[^`]+)`", cells[2])]
        rows.append((cells[0], kind, paths))
    return rows


ROWS = vocabulary_rows()


def test_the_table_names_exactly_two_closed_vocabularies_and_every_row_says_which() -> None:
    assert {kind for _, kind, _ in ROWS} == {"open", "closed"}
    assert sorted(name for name, kind, _ in ROWS if kind == "closed") == ["`error.kind`", "`outcome`"]
    assert all(paths for _, _, paths in ROWS)


def test_the_schemas_enumerate_only_the_closed_vocabularies() -> None:
    """No `enum` outside `outcome` and `error.kind`; every field listing `examples` is in the table."""
    closed_fields = {path.split(".")[-1] for _, kind, paths in ROWS if kind == "closed" for _, path in paths}
    open_fields = {path.split(".")[-1] for _, kind, paths in ROWS if kind == "open" for _, path in paths}
    for name in os.listdir(SCHEMA_DIR):
        for field, node in properties(load(name[: -len(".json")])):
            if "enum" in node:
                assert field in closed_fields, f"{name}: {field} is enumerated but the table calls it open"
            if "examples" in node:
                assert field in open_fields, f"{name}: {field} lists examples but is not in the table"


def properties(schema: Any) -> list[tuple[str, dict[str, Any]]]:
    """(field name, schema node) of every property, the branches of an anyOf included."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(schema, dict):
        for field, node in (schema.get("properties") or {}).items():
            for branch in [node, *node.get("anyOf", [])]:
                found.append((field, branch))
        for value in schema.values():
            found += properties(value)
    elif isinstance(schema, list):
        for value in schema:
            found += properties(value)
    return found


# -- real answers ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """schema stem -> a real envelope `li` answered with that schema."""
    home = str(tmp_path_factory.mktemp("vocab") / "li-home")
    os.makedirs(home)

    def li(*argv: str) -> dict[str, Any]:
        result = run_li(*argv, "--machine", home=home, env={"LI_NOTIFY_COMMAND": ""})
        assert result.returncode == 0, (argv, result.stderr)
        envelope: dict[str, Any] = result.envelope
        return envelope

    got: dict[str, dict[str, Any]] = {"store": li("store", "init")}
    ended = li("agent", "--detach", "sh", 'echo x > "$LI_ARTIFACTS_DIR/a.txt"')
    running = li("agent", "--detach", "sh", "sleep 60")
    got["submit"] = ended
    ended_id, running_id = ended["data"]["run_id"], running["data"]["run_id"]
    li("job", "wait", ended_id, "--max-wait", "60")
    got["kill"] = li("job", "kill", running_id)
    li("job", "wait", running_id, "--max-wait", "60")
    with open(os.path.join(write_run(home, TORN_ID), "record.json"), "w", encoding="utf-8") as handle:
        handle.write("{ torn")
    got["status"] = li("job", "status", ended_id)
    got["output"] = li("job", "output", ended_id)
    got["list"] = li("job", "list")
    got["wait"] = li("job", "wait", ended_id, TORN_ID, "20991231T000000-abcdef", "--max-wait", "0")
    got["prune"] = li("job", "prune", "--dry-run", "--older-than", "1")
    got["doctor"] = li("doctor")
    got["completion"] = li("completion", "bash")
    got["queue"] = li("queue", "set", "q", "--parallel", "1")
    got["envelope"] = li("job", "status", "20991231T000000-abcdef")
    got["rm"] = li("job", "rm", ended_id)
    return got


# Where a real answer has no element to swap in (an empty list, an sh run's agents), one of its
# schema's shape is added first: the swap then tests the field, not the donor.
DONORS: dict[tuple[str, str], Any] = {
    ("rm", "kept"): {"run_id": TORN_ID, "reason": "busy", "detail": None},
    ("status", "agents.value.claude"): {"permission_mode": "edits", "provider_args": []},
}


def swapped(schema: str, envelope: dict[str, Any], path: str, value: object) -> tuple[dict[str, Any], int]:
    """A copy of `envelope` whose every `path` (under `data`, or the envelope's own for
    `envelope:`) holds `value`, and how many places were set."""
    out = copy.deepcopy(envelope)
    root = out if schema == "envelope" else out["data"]
    count = 0

    def walk(node: Any, parts: list[str], done: list[str]) -> None:
        nonlocal count
        head, rest = parts[0], parts[1:]
        many = head.endswith("[]")
        key = head[:-2] if many else head
        if not isinstance(node, dict):
            return
        if not rest:
            node[key] = value
            count += 1
            return
        here = ".".join([*done, key])
        if node.get(key) in (None, [], {}) and (schema, here) in DONORS:
            donor = copy.deepcopy(DONORS[(schema, here)])
            node[key] = [donor] if many else donor
        child = node.get(key)
        for item in (child if many and isinstance(child, list) else [child]):
            walk(item, rest, [*done, key])

    walk(root, path.split("."), [])
    return out, count


def schema_problems(schema: str, envelope: dict[str, Any]) -> list[str]:
    from jsonschema import Draft202012Validator

    errors = list(Draft202012Validator(load("envelope")).iter_errors(envelope))
    if schema != "envelope":
        errors += list(Draft202012Validator(load(schema)).iter_errors(envelope["data"]))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


OPEN = [(name, schema, path) for name, kind, paths in ROWS if kind == "open" for schema, path in paths]
CLOSED = [(name, schema, path) for name, kind, paths in ROWS if kind == "closed" for schema, path in paths]


def test_the_real_answers_follow_their_schemas(answers: dict[str, dict[str, Any]]) -> None:
    for schema, envelope in answers.items():
        assert schema_problems(schema, envelope) == [], schema


@pytest.mark.parametrize(("name", "schema", "path"), OPEN, ids=[f"{s}:{p}" for _, s, p in OPEN])
def test_a_new_value_of_an_open_vocabulary_is_accepted(answers: dict[str, dict[str, Any]], name: str,
                                                       schema: str, path: str) -> None:
    envelope, count = swapped(schema, answers[schema], path, NEW)
    assert count >= 1, f"no {path} in the real {schema} answer: {json.dumps(answers[schema])[:400]}"
    assert schema_problems(schema, envelope) == [], f"{name} is open, yet the {schema} schema refuses a new value"


@pytest.mark.parametrize(("name", "schema", "path"), CLOSED, ids=[f"{s}:{p}" for _, s, p in CLOSED])
def test_a_new_value_of_a_closed_vocabulary_is_refused(answers: dict[str, dict[str, Any]], name: str,
                                                       schema: str, path: str) -> None:
    envelope, count = swapped(schema, answers[schema], path, NEW)
    assert count >= 1
    assert schema_problems(schema, envelope), f"{name} is closed, yet the {schema} schema accepts a new value"


def test_the_docs_name_every_finding_li_can_give() -> None:
    """`finding`'s vocabulary is in the wire contract itself, not only in domain/evidence.py."""
    with open(os.path.join(REPO, "docs", "wire-contract.md"), encoding="utf-8") as handle:
        text = handle.read()
    table = text[text.index("`finding` at v1"):]
    table = table[: table.index("\n\n", table.index("| `finding` | means |"))]
    documented = set(re.findall(r"`([a-z_]+)`", "\n".join(line.split("|")[1] for line in table.splitlines()
                                                            if line.startswith("| `"))))
    finding = next(node for field, node in properties(load("status")) if field == "finding" and "examples" in node)
    assert documented - {"finding"} == set(finding["examples"])  # less the header row
