"""The committed JSON Schema in contract/v1/ is exactly what the wire dataclasses in domain.wire say."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.contract.validate import SCHEMA_DIR
from tools.gen_schema import REPO, expected, stale


def test_the_committed_schema_matches_the_models() -> None:
    problems = stale()
    assert not problems, (
        "contract/v1 disagrees with domain/wire.py; run `.venv/bin/python tools/gen_schema.py` "
        "and commit the result:\n" + "\n".join(problems)
    )


def test_a_changed_model_is_detected_as_stale(tmp_path: object) -> None:
    folder = str(tmp_path)
    for name, text in expected().items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    assert stale(folder) == []
    status = json.loads(expected()["status.json"])
    status["required"].remove("outcome")
    with open(os.path.join(folder, "status.json"), "w", encoding="utf-8") as handle:
        handle.write(json.dumps(status, indent=2, sort_keys=True) + "\n")
    os.unlink(os.path.join(folder, "kill.json"))
    assert sorted(stale(folder)) == ["differs: status.json", "missing: kill.json"]


def test_there_is_a_schema_for_the_envelope_and_every_verb() -> None:
    names = set(os.listdir(SCHEMA_DIR))
    for verb in ("envelope", "handshake", "submit", "status", "output", "list", "kill", "wait",
                 "doctor", "prune"):
        assert f"{verb}.json" in names


def test_every_schema_is_a_valid_draft_2020_12_schema() -> None:
    from jsonschema import Draft202012Validator

    for name in os.listdir(SCHEMA_DIR):
        with open(os.path.join(SCHEMA_DIR, name), encoding="utf-8") as handle:
            Draft202012Validator.check_schema(json.load(handle))


def test_the_check_command_exits_zero_on_a_fresh_tree() -> None:
    done = subprocess.run([sys.executable, os.path.join(REPO, "tools", "gen_schema.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_two_closed_vocabularies_are_enumerated_and_every_other_is_open() -> None:
    """Issue 39: `outcome` and `error.kind` are the only `enum`s; an open one such as `status` or
    `spawn_state` is any string, its values in use only `examples`."""
    status = json.loads(expected()["status.json"])
    props = status["properties"]
    assert props["status"]["type"] == "string" and "enum" not in props["status"]
    assert "completed" in props["status"]["examples"] and "preparing" in props["status"]["examples"]
    outcome = next(b for b in props["outcome"]["anyOf"] if "enum" in b)
    assert sorted(outcome["enum"]) == ["cancelled", "failed", "indeterminate", "succeeded"]
    spawn = next(b for b in props["spawn_state"]["anyOf"] if b.get("type") == "string")
    assert "enum" not in spawn and sorted(spawn["examples"]) == ["failed", "preparing", "started"]
    envelope = json.loads(expected()["envelope.json"])
    kinds = envelope["$defs"]["ErrorBody"]["properties"]["kind"]["enum"]
    assert sorted(kinds) == ["conflict", "internal", "invalid_input", "not_found", "unavailable"]
