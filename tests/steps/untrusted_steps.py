"""Steps for what a run's untrusted work can plant in its run folder (D7 on links and FIFOs, CLI-level)."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from pytest_bdd import given, parsers, then, when

from tests.support import machine


@dataclass
class Planted:
    """One finished real run, what was planted in it, and what li answered about it."""

    home: str
    outside: str
    canary: str = field(default_factory=lambda: f"CANARY-{uuid.uuid4().hex}")
    run_id: str = ""
    answers: list[str] = field(default_factory=list)
    output: dict[str, Any] = field(default_factory=dict)


@pytest.fixture
def planted(tmp_path: Any) -> Planted:
    outside = tmp_path / "outside"
    outside.mkdir()
    return Planted(home=str(tmp_path / "home"), outside=str(outside))


def _finished_run(ctx: Planted) -> str:
    handle = machine("agent", "--detach", "sh", "echo the work's own output", home=ctx.home).data
    machine("job", "wait", handle["run_id"], "--max-wait", "30", home=ctx.home)
    return str(handle["run_id"])


def _plant(ctx: Planted, name: str, thing: str) -> None:
    target = os.path.join(ctx.home, "runs", ctx.run_id, name)
    if os.path.isdir(target) and not os.path.islink(target):
        import shutil

        shutil.rmtree(target)
    elif os.path.lexists(target):
        os.unlink(target)
    if thing == "a FIFO":
        os.mkfifo(target)
        return
    secret = os.path.join(ctx.outside, "secret")
    with open(secret, "w", encoding="utf-8") as handle:  # text, JSON and a listing all carry it
        handle.write(f'{{"legs": [], "canary": "{ctx.canary}"}}\n')
    assert thing in ("a link to a file outside the store", "a link to a folder outside the store"), thing
    os.symlink(secret if "file" in thing else ctx.outside, target)


@given(parsers.parse("a finished real run whose {name} is now {thing}"), target_fixture="planted")
def _finished_with(planted: Planted, name: str, thing: str) -> Planted:
    planted.run_id = _finished_run(planted)
    _plant(planted, name, thing)
    return planted


@when("a program reads its output and its status")
def _read_both(planted: Planted) -> None:
    for verb in ("output", "status"):
        result = machine("job", verb, planted.run_id, home=planted.home, timeout=20)
        planted.answers.append(result.stdout + result.stderr)
        if verb == "output":
            planted.output = result.data


@then(parsers.parse('the output\'s {part} is unavailable with reason "{reason}"'))
def _unavailable(planted: Planted, part: str, reason: str) -> None:
    wrapped = planted.output[part]
    assert (wrapped["available"], wrapped["value"], wrapped["reason_code"]) == (False, None, reason), wrapped
    assert wrapped["detail"]


@then("nothing of what lies outside the store was served")
def _nothing_served(planted: Planted) -> None:
    assert planted.answers and not any(planted.canary in answer for answer in planted.answers)
