"""The fake CLIs (tests/fakes/bin) speak the event shapes the real ones were recorded speaking.

The recordings are the real Claude Code, Codex and Gemini CLI streams against the model stub
(tests/fixtures/transcripts/<cli>/recorded, made by `python -m tests.record_streams`). Every
event a fake prints in any of its modes, and every hand-written sample the fakes replay, must
be of a kind the real CLI printed, with no field the real CLI never printed for that kind: a
fake cannot drift into a shape the real CLIs do not have (a renamed field, an invented event).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterable
from typing import Any

import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
FAKES = TESTS / "fakes" / "bin"
SAMPLES = TESTS / "fixtures" / "transcripts"
CLIS = ("claude", "codex", "gemini")
ARGV = {"claude": ["-p", "--output-format", "stream-json", "--verbose"],
        "codex": ["exec", "--json", "--skip-git-repo-check", "-"],
        "gemini": ["-p", "", "--output-format", "stream-json"]}
MODES = {"claude": ("ok", "error", "empty", "noresult", "tools"), "codex": ("ok", "error", "tools"),
         "gemini": ("ok", "error", "tools")}
# Each recorded case and what it must show, so a recording that lost its point is noticed.
CASES = ("answer", "model", "tool", "tool_refused", "empty", "auth", "forbidden", "rate_limited", "server_error",
         "overloaded", "cut", "hang", "refused", "transient")


# Shapes of the hand-written samples (which the fakes' `tools` mode replays) that the stub cannot
# make a real CLI print yet, each with why: checked by name, so any other drift still fails.
NOT_RECORDED = {
    ("claude", "assistant/thinking"): "the stub sends no thinking blocks",
    ("claude", "user/tool_result", "message.content[].content[]"): "a tool result as content blocks (Read, MCP)",
    ("codex", "item.started/mcp_tool_call"): "no MCP server is configured for the recordings",
    ("codex", "item.completed/mcp_tool_call"): "no MCP server is configured for the recordings",
    ("codex", "item.completed/file_change"): "the stub calls the shell tool, never apply_patch",
}


def kind(cli: str, event: dict[str, Any]) -> str:
    """What an event is, for comparing like with like (not its values)."""
    if cli == "claude":
        if event.get("type") == "system":
            return f"system/{event.get('subtype')}"
        if event.get("type") in ("assistant", "user"):
            blocks = event.get("message", {}).get("content", [])
            types = sorted({b.get("type", "?") for b in blocks if isinstance(b, dict)}) if isinstance(blocks, list) \
                else ["text"]
            return f"{event['type']}/{'+'.join(types)}"
        return str(event.get("type"))
    if cli == "codex":
        item = event.get("item")
        return f"{event.get('type')}/{item.get('type')}" if isinstance(item, dict) else str(event.get("type"))
    role = event.get("role") or event.get("status") or ""
    return f"{event.get('type')}/{role}" if event.get("type") == "message" else str(event.get("type"))


def paths(value: Any, prefix: str = "") -> set[str]:
    """Every field path of a JSON value (`message.usage.input_tokens`, `message.content[].type`)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, sub in value.items():
            path = f"{prefix}.{key}" if prefix else key
            found.add(path)
            if not (prefix.endswith("models") or key in ("models", "modelUsage", "parameters", "input", "tool_input")):
                found |= paths(sub, path)  # maps keyed by a name (models, a tool's input) are values, not shape
    elif isinstance(value, list):
        for sub in value:
            found |= paths(sub, f"{prefix}[]")
    return found


def events(lines: Iterable[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines if line.strip().startswith("{")]


def recorded(cli: str) -> dict[str, set[str]]:
    """Each kind of event the real CLI printed, with every field path it printed for that kind."""
    folder = SAMPLES / cli / "recorded"
    shapes: dict[str, set[str]] = {}
    for stream in sorted(folder.glob("*.jsonl")):
        for event in events(stream.read_text().splitlines()):
            shapes.setdefault(kind(cli, event), set()).update(paths(event))
    return shapes


def fake_run(cli: str, mode: str, tmp_path: pathlib.Path) -> list[dict[str, Any]]:
    env = {**os.environ, f"FAKE_{cli.upper()}_MODE": mode, "FAKE_SLOW_SECONDS": "0"}
    done = subprocess.run([sys.executable, str(FAKES / cli), *ARGV[cli]], input="Say hello.", capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=60)
    return events(done.stdout.splitlines())


def one_block_each(cli: str, printed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude's events with one content block each: the real CLI prints one event per block."""
    split = []
    for event in printed:
        blocks = event.get("message", {}).get("content") if cli == "claude" else None
        if isinstance(blocks, list) and len(blocks) > 1:
            split += [{**event, "message": {**event["message"], "content": [block]}} for block in blocks]
        else:
            split.append(event)
    return split


def drift(cli: str, printed: list[dict[str, Any]], where: str) -> list[str]:
    real = recorded(cli)
    problems = []
    for event in one_block_each(cli, printed):
        name = kind(cli, event)
        if (cli, name) in NOT_RECORDED:
            continue
        if name not in real:
            problems.append(f"{where}: a {name!r} event, which the real {cli} never printed "
                            f"(it printed {sorted(real)})")
            continue
        extra = sorted(path for path in paths(event) - real[name]
                       if not any(key[:2] == (cli, name) and path.startswith(key[2]) for key in NOT_RECORDED
                                  if len(key) == 3))
        if extra:
            problems.append(f"{where}: {name!r} with fields the real {cli} never printed: {extra}")
    return problems


@pytest.mark.parametrize("cli", CLIS)
def test_the_recordings_are_there_and_each_case_shows_its_point(cli: str) -> None:
    folder = SAMPLES / cli / "recorded"
    for case in CASES:
        meta = json.loads((folder / f"{case}.meta.json").read_text())
        assert meta["cli"] == cli and meta["case"] == case
        assert (folder / f"{case}.jsonl").exists()
    meta = {case: json.loads((folder / f"{case}.meta.json").read_text()) for case in CASES}
    assert meta["answer"]["exit"] == 0 and "Hello" in (folder / "answer.jsonl").read_text()
    assert meta["tool"]["marker_written"] and not meta["tool_refused"]["marker_written"]
    assert meta["hang"]["exit"] is None  # it never ended by itself
    assert all(r["model"] == "stub-model-x" for r in meta["model"]["requests"] if r["main"])


@pytest.mark.parametrize("cli, mode", [(cli, mode) for cli in CLIS for mode in MODES[cli]])
def test_each_fake_mode_prints_only_shapes_the_real_cli_printed(cli: str, mode: str, tmp_path: pathlib.Path) -> None:
    printed = fake_run(cli, mode, tmp_path)
    assert printed, f"fake {cli} in mode {mode} printed no event"
    assert drift(cli, printed, f"fake {cli} ({mode})") == []


@pytest.mark.parametrize("cli", CLIS)
def test_the_hand_written_samples_have_only_shapes_the_real_cli_printed(cli: str) -> None:
    problems = []
    for sample in sorted((SAMPLES / cli).glob("*.jsonl")):
        problems += drift(cli, events(sample.read_text().splitlines()), f"{cli}/{sample.name}")
    assert problems == []


def test_a_drifted_fake_is_caught() -> None:
    """The check itself: a renamed field and an invented event are both named."""
    renamed = {"type": "result", "subtype": "success", "is_error": False, "answer": "hi"}
    invented = {"type": "thread.resumed", "thread_id": "x"}
    assert drift("claude", [renamed], "x") == ["x: 'result' with fields the real claude never printed: ['answer']"]
    assert "never printed" in drift("codex", [invented], "y")[0]
