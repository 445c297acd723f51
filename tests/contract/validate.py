"""Validate envelopes against the committed JSON Schema in `contract/v1/` with `jsonschema`."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Sequence
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA_DIR = os.path.join(REPO, "contract", "v1")

JOB_VERBS = ("status", "output", "list", "kill", "wait", "prune", "rm", "diff", "apply", "approvals", "approve", "deny")


def load(name: str) -> dict[str, Any]:
    with open(os.path.join(SCHEMA_DIR, f"{name}.json"), encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
    return schema


def closed(schema: Any) -> Any:
    """A copy in which every object that lists properties admits no others: "describes every field"."""
    if isinstance(schema, dict):
        out = {key: closed(value) for key, value in schema.items()}
        if "properties" in out and out.get("additionalProperties") is True:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    return schema


@cache
def validator(name: str, strict: bool = False) -> Draft202012Validator:
    schema = load(name)
    return Draft202012Validator(closed(copy.deepcopy(schema)) if strict else schema)


def verb_of(argv: Sequence[str]) -> str | None:
    """The schema a successful answer to `argv` must follow (None when argv names no verb)."""
    words = [a for a in _before_dashdash(argv) if a != "--machine"]
    if any(a in ("-h", "--help") for a in words):
        return "help"
    positionals = [a for a in words if not a.startswith("-")]
    first = positionals[0] if positionals else None
    if first is None:
        return "version" if "--version" in words else None
    if first in ("agent", "orchestrate"):
        return "submit"
    if first == "job":
        if "retry" in positionals[1:2] or "reply" in positionals[1:2]:
            return "submit"  # a retry answers with the new run's handle
        second = next((a for a in positionals[1:] if a in JOB_VERBS), None)
        return second
    if first == "store" and positionals[1:2] in (["copy"], ["init"]):
        return "store-copy" if positionals[1] == "copy" else "store"
    return first if first in ("handshake", "doctor", "completion", "queue", "usage") else None


def _before_dashdash(argv: Sequence[str]) -> list[str]:
    words = list(argv)
    return words[: words.index("--")] if "--" in words else words


def problems(envelope: Any, argv: Sequence[str] = (), strict: bool = False) -> list[str]:
    """Every way `envelope` breaks the committed schema (empty when it conforms)."""
    found = [_say("envelope", e) for e in validator("envelope", strict=False).iter_errors(envelope)]
    if found or not isinstance(envelope, dict) or envelope.get("ok") is not True:
        return found
    verb = verb_of(argv)
    if verb is None:
        return [] if not strict else [f"no schema names the answer to {list(argv)!r}"]
    return [_say(verb, e) for e in validator(verb, strict).iter_errors(envelope["data"])]


def _say(name: str, error: Any) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"{name}.json at {where}: {error.message}"


def check_envelope(argv: Sequence[str], envelope: Any, strict: bool | None = None) -> None:
    """Fail the calling test when `envelope` does not follow its verb's schema.

    Strictness (no undocumented fields) is on when `LI_SCHEMA_STRICT=1`; the published schema
    itself allows extra fields, as D2 requires of consumers.
    """
    if strict is None:
        strict = os.environ.get("LI_SCHEMA_STRICT") == "1"
    found = problems(envelope, argv, strict)
    assert not found, f"envelope for {list(argv)!r} breaks the published schema:\n" + "\n".join(found)
