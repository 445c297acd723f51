"""The README's first-screen commands and `--machine` examples run; the envelopes docs/wire-contract.md
and docs/consumer-client.md show are what `li` answers (tools/doc_examples.py regenerates them);
the consumer guide's Python example runs."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from typing import Any

import pytest

from tests.contract.validate import problems
from tests.support import REPO, li_bin
from tools import doc_examples

README = os.path.join(REPO, "README.md")
CI_RUN = os.path.join(REPO, ".ci", "run")
CONSUMER = os.path.join(REPO, "docs", "consumer-client.md")
# The real answer each shape-only block is compared with, by the verb its marker names.
SHAPE_OF = {"status": "status-ended", "output": "output-ended", "wait": "wait-all-ended"}
ARGV_OF = {"status": ("job", "status"), "output": ("job", "output"), "wait": ("job", "wait")}


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture(scope="module")
def answers() -> dict[str, dict[str, Any]]:
    return doc_examples.capture()


def env_for(tmp_path: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LI_NOTIFY_COMMAND", "LI_BIN", "NO_COLOR")}
    env["LI_HOME"] = str(tmp_path / "li")
    return env


# --- README -------------------------------------------------------------------------------------

def readme_commands() -> list[str]:
    """The indented command lines of the README's first screen (before its first `---`)."""
    first_screen = read(README).split("\n---\n", 1)[0]
    return [line[4:] for line in first_screen.split("\n") if line.startswith("    ")]


def test_the_readme_install_is_what_ci_runs() -> None:
    install = readme_commands()[0]
    steps = [step.strip() for step in install.split("&&")]
    assert len(steps) == 3, install
    ci = read(CI_RUN)
    assert steps[0] in ci.split("\n"), steps[0]
    pip = [line for line in ci.split("\n") if line.startswith(".venv/bin/pip install")]
    assert [shlex.split(line.replace(" --quiet", "")) for line in pip] == [shlex.split(steps[1])], (pip, steps[1])
    assert steps[2] == ".venv/bin/li agent sh 'echo hello from lionrun'"


def test_the_readme_says_how_long_its_test_command_takes() -> None:
    first_screen = read(README).split("\n---\n", 1)[0]
    assert re.search(r"Run the whole test suite \(about [^)]+ on \d+ cores?\):\n\n    \.venv/bin/pytest -n 2\n",
                     first_screen), "README: the test command and how long it takes here"


def run_readme_line(line: str, env: dict[str, str], cwd: str) -> subprocess.CompletedProcess[str]:
    command = line.replace(".venv/bin/li ", f"{shlex.quote(li_bin())} ")
    return subprocess.run(["bash", "-c", command], env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_the_readme_first_run(tmp_path: Any) -> None:
    line = readme_commands()[0].split("&&")[-1].strip()
    proc = run_readme_line(line, env_for(tmp_path), str(tmp_path))
    assert proc.returncode == 0, (line, proc.stdout, proc.stderr)
    assert proc.stdout.strip() == "hello from lionrun", proc.stdout  # "(it prints `hello from lionrun`)"


def test_the_readme_machine_examples(tmp_path: Any) -> None:
    lines = [line for line in readme_commands() if "--machine" in line]
    assert len(lines) == 3, lines
    env, run_id = env_for(tmp_path), None
    for line in lines:
        if run_id is not None:
            line = line.replace("<run_id>", run_id)
        assert "<" not in line, line
        proc = run_readme_line(line, env, str(tmp_path))
        assert proc.returncode == 0, (line, proc.stderr)
        envelope = json.loads(proc.stdout)  # exactly one JSON envelope on stdout
        argv = shlex.split(line)[1:]
        assert envelope["ok"] is True and not problems(envelope, argv), (line, envelope)
        if "agent" in argv:
            run_id = envelope["data"]["run_id"]
        if "wait" in argv:
            assert envelope["data"]["runs"][0]["outcome"] == "succeeded", envelope
    assert run_id is not None


# --- wire contract and consumer guide -----------------------------------------------------------

def test_every_json_block_is_marked() -> None:
    for path in doc_examples.DOCS:
        for kind, name, first, _ in doc_examples.blocks(path):
            assert kind, f"{os.path.basename(path)}:{first}: a ```json block without a marker comment"
            if kind == "li-example":
                assert name in doc_examples.CASES, (path, first, name)
            if kind == "li-example-shape":
                assert name in SHAPE_OF, (path, first, name)


def test_the_regenerated_envelopes_are_committed(answers: dict[str, dict[str, Any]]) -> None:
    stale = doc_examples.stale(answers)
    assert not stale, "run `.venv/bin/python tools/doc_examples.py --update` and commit:\n" + "\n".join(stale)
    assert set(answers) == set(doc_examples.CASES)


def test_a_changed_example_is_stale(answers: dict[str, dict[str, Any]], tmp_path: Any) -> None:
    copy = tmp_path / "wire-contract.md"
    text = read(doc_examples.DOCS[0])
    copy.write_text(text)
    assert doc_examples.stale(answers, [str(copy)]) == []
    copy.write_text(text.replace('"min_supported_version": 1', '"min_supported_version": 0', 1))
    assert [p.split(":")[2].strip() for p in doc_examples.stale(answers, [str(copy)])] == ["handshake is stale"]


def keys(value: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON value (a list's items merged under `[]`)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            found |= {f"{prefix}.{key}"} | keys(item, f"{prefix}.{key}")
    elif isinstance(value, list):
        for item in value:
            found |= keys(item, f"{prefix}[]")
    return found


def parent(path: str) -> str:
    return path[: -len("[]")] if path.endswith("[]") else path.rsplit(".", 1)[0].removesuffix("[]")


def holders(value: Any, prefix: str = "") -> set[str]:
    """The paths of every object, and of every list with items, in a JSON value."""
    found: set[str] = set()
    if isinstance(value, dict):
        found.add(prefix)
        for key, item in value.items():
            found |= holders(item, f"{prefix}.{key}")
    elif isinstance(value, list) and value:
        found.add(prefix)
        for item in value:
            found |= holders(item, f"{prefix}[]")
    return found


def test_shape_examples_follow_the_schema_and_a_real_answer(answers: dict[str, dict[str, Any]]) -> None:
    checked = 0
    for path in doc_examples.DOCS:
        lines = read(path).split("\n")
        for kind, verb, first, end in doc_examples.blocks(path):
            if kind != "li-example-shape":
                continue
            shown = json.loads("\n".join(lines[first:end]))
            assert not problems(shown, ARGV_OF[verb]), (path, first, problems(shown, ARGV_OF[verb]))
            real = answers[SHAPE_OF[verb]]
            # the values a manifest holds depend on the work; its own keys are checked by the schema
            shown_keys = {k for k in keys(shown) if ".manifest.value." not in k and ".error." not in k}
            real_keys = {k for k in keys(real) if ".manifest.value." not in k and ".error." not in k}
            # keys inside what the example shows as null or empty (nothing there) cannot be shown
            real_keys = {k for k in real_keys if parent(k) in holders(shown)}
            assert shown_keys == real_keys, (path, first, "missing:", sorted(real_keys - shown_keys),
                                             "not answered:", sorted(shown_keys - real_keys))
            checked += 1
    assert checked >= 4


def test_every_regenerated_answer_follows_the_schema(answers: dict[str, dict[str, Any]]) -> None:
    argv = {"handshake": ("handshake",), "submit-agent": ("agent",), "submit-flow": ("orchestrate",),
            "status-running": ("job", "status"), "status-ended": ("job", "status"), "output-ended": ("job", "output"),
            "list": ("job", "list"), "kill-signalled": ("job", "kill"), "kill-already-terminal": ("job", "kill"),
            "wait-all-ended": ("job", "wait"), "wait-window-closed": ("job", "wait"), "prune": ("job", "prune"),
            "doctor": ("doctor",), "completion": ("completion",), "version": ("--version",), "help": ("--help",)}
    for name, answer in answers.items():
        assert not problems(answer, argv.get(name, ())), (name, problems(answer, argv.get(name, ())))


def test_the_consumer_guide_python_example_runs(tmp_path: Any) -> None:
    blocks = re.findall(r"```python\n(.*?)```", read(CONSUMER), re.S)
    assert len(blocks) == 1
    assert blocks[0].count('"/abs/path/to/li"') == 1
    script = blocks[0].replace('"/abs/path/to/li"', repr(li_bin()))
    proc = subprocess.run([sys.executable, "-c", script], env=env_for(tmp_path), cwd=REPO, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    lines = proc.stdout.strip().split("\n")
    assert re.fullmatch(r"\d{8}T\d{6}-[0-9a-f]{6} completed succeeded", lines[0]), proc.stdout
    assert "hi.txt" in proc.stdout, proc.stdout  # the output's data lists the artifact it wrote
