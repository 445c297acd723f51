"""Every `li ...` example in docs/user-guide.md runs: against a temp LI_HOME and HOME, with the fake
agent CLIs (tests/fakes/bin) first on PATH. An example may end a run that failed (exit 1) — the guide
shows those too — but never as a usage error, an internal error or a traceback."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest

from tests.support import REPO, li_bin, machine

GUIDE = os.path.join(REPO, "docs", "user-guide.md")
FAKES = os.path.join(REPO, "tests", "fakes", "bin")
RUN_ID = re.compile(r"\b\d{8}T\d{6}-[0-9a-f]{6}\b")
# Examples the guide shows being refused, with the exit status it promises.
# The guide's RUN is an sh run without a worktree: diff, apply and reply refuse it (invalid_input).
REFUSED = {"li agent echo hi": 2, "li job diff RUN": 2, "li job apply RUN": 2, "li job reply RUN 'now add tests'": 2}
FLOW = "steps:\n  - id: hello\n    model: sh\n    prompt: echo hello\n"


def examples() -> list[str]:
    """Each line of a code block that runs li (`$ li ...` in console blocks, `li ...` in sh blocks),
    and each inline `li ...` span of the prose."""
    found: list[str] = []
    in_block = None
    with open(GUIDE, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("```"):
                in_block = None if in_block is not None else line[3:].strip()
                continue
            if in_block == "console" and line.startswith("$ li "):
                found.append(line[2:].rstrip("\n"))
            elif in_block in ("sh", "bash") and line.startswith("li "):
                found.append(line.rstrip("\n"))
            elif in_block is None:
                found.extend(span.replace("\\|", "|") for span in re.findall(r"`(li [^`]+)`", line)
                             if not mention(span))
    return list(dict.fromkeys(found))


COMMAND_WORDS = {"li", "job", "agent", "orchestrate", "flow", "fanout", "status", "output", "list", "kill", "wait",
                 "prune", "retry", "rm", "diff", "apply", "reply", "completion", "doctor", "mcp", "handshake"}
NEEDS_ARGUMENTS = {"agent", "orchestrate", "flow", "fanout", "status", "output", "kill", "wait", "retry", "rm", "diff",
                   "apply", "reply", "completion", "mcp"}


def mention(span: str) -> bool:
    """An inline span that names a command (`li job output --follow`) rather than showing a whole one."""
    words = span.replace("\\|", "|").split()
    rest = [w for w in words if w not in COMMAND_WORDS and not w.startswith("-")]
    if words[-1] in ("sh", "claude", "codex", "gemini"):  # a model without its prompt
        return True
    return not rest and words[-1] in NEEDS_ARGUMENTS | {"--follow", "--detach", "--raw"}


def runnable(example: str) -> bool:
    """Whole shell words (a line that opens a quote closed on later lines is not one command),
    with no placeholders a person fills in (`<...>`, `...`, `RUN...`, `PATH`)."""
    try:
        words = shlex.split(example, comments=True)
    except ValueError:
        return False
    placeholders = {"...", "RUN...", "PATH", "N", "S", "L", "M", "WHEN", "SECONDS", "CMD", "TEXT", "DIR", "KIND",
                    "RUN_ID", "MODEL", "ARG", "MODE"}
    return not any(word.startswith("<") or word in placeholders or "…" in word for word in words)


EXAMPLES = examples()


def test_the_guide_has_examples_to_run() -> None:
    assert len(EXAMPLES) > 30
    assert sum(runnable(e) for e in EXAMPLES) > 25


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("guide")
    home, li_home = root / "home", root / "li"
    home.mkdir()
    (root / "flow.yaml").write_text(FLOW)
    env = {**os.environ, "HOME": str(home), "LI_HOME": str(li_home), "LI_KILL_GRACE": "0.2",
           "PATH": f"{FAKES}:{os.path.dirname(li_bin())}:{os.environ['PATH']}"}
    env.pop("LI_NOTIFY_COMMAND", None)
    env.pop("NO_COLOR", None)
    run_id = machine("agent", "--detach", "--label", "counter", "sh", "echo tick", home=str(li_home),
                     cwd=str(root)).data["run_id"]
    machine("job", "wait", run_id, "--max-wait", "30", home=str(li_home))
    env["RUN"] = run_id
    return {"cwd": str(root), **env}


@pytest.mark.parametrize("example", [e for e in EXAMPLES if runnable(e)])
def test_each_example_runs(example: str, place: dict[str, str]) -> None:
    env = dict(place)
    cwd = env.pop("cwd")
    command = RUN_ID.sub('"$RUN"', re.sub(r"\bRUN\b(?!_)", '"$RUN"', example.replace('"$RUN"', "RUN")))
    if command.startswith("li completion") and ">" in command:
        os.makedirs(os.path.join(env["HOME"], ".zfunc"), exist_ok=True)
        os.makedirs(os.path.join(env["HOME"], ".config", "fish", "completions"), exist_ok=True)
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    said = proc.stdout + proc.stderr
    assert "Traceback" not in said and "internal error" not in said, (command, said)
    expected = REFUSED.get(example)
    if expected is not None:
        assert proc.returncode == expected, (command, proc.returncode, said)
        return
    assert proc.returncode in (0, 1, 3, 124, 141, 143), (command, proc.returncode, said)  # 3: a run pruned before
