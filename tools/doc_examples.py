"""The JSON envelopes docs/wire-contract.md shows, regenerated from real `li` calls.

Each ```json block of the docs is preceded by one marker comment:

- `<!-- li-example: NAME -->`: the block is the answer of the real call CASES[NAME] makes, in a
  throwaway LI_HOME, normalised (run ids, times, pids, ages and paths differ per run; they are
  replaced by fixed ones, the same real id always by the same shown id). `--update` rewrites these
  blocks; without it the tool lists the stale ones and exits 1 (tests/e2e/test_doc_examples.py).
- `<!-- li-example-shape: VERB -->`: a state too costly to make on demand (a runner that died, a
  run of another host); the test validates the block against contract/v1 and compares its keys with
  a real answer of VERB.
- `<!-- not-an-li-answer: WHY -->`: not the answer of a `li` call (a schematic shape, an MCP host
  entry, a notice's payload); exempt.

    .venv/bin/python tools/doc_examples.py [--update]
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = [os.path.join(REPO, "docs", "wire-contract.md"), os.path.join(REPO, "docs", "consumer-client.md")]
MARKER = re.compile(r"^<!-- (li-example|li-example-shape|not-an-li-answer): (.+?) -->$")
RUN_ID = re.compile(r"\b\d{8}T\d{6}-[0-9a-f]{6}\b")
ISO_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00\b")
HOME_SHOWN, CWD_SHOWN = "/home/you/.local/state/li", "/home/you/project"
# Fields whose value differs on every run, and what the docs show instead.
VOLATILE = {"pid": 21988, "age_seconds": 2.4, "wall_seconds": 1.02, "duration_seconds": 1.02,
            "elapsed_seconds": 1.02, "started_at_monotonic": 0.0}
SHOWN_CHARS = 120  # long texts (completion script, help) are cut here, and the docs say so


def li_path() -> str:
    return os.environ.get("LI_BIN") or os.path.join(os.path.dirname(sys.executable), "li")


class Session:
    """Real calls in a throwaway LI_HOME and working folder."""

    def __init__(self, root: str) -> None:
        self.home = os.path.join(root, "li")
        self.cwd = os.path.join(root, "project")
        os.makedirs(self.cwd)
        self.env = {k: v for k, v in os.environ.items() if k not in ("LI_NOTIFY_COMMAND", "NO_COLOR", "LI_BIN")}
        self.env["LI_HOME"] = self.home
        # PATH without the agent CLIs, so doctor answers as on a machine that has none of them.
        self.env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
        self.ids: dict[str, str] = {}

    def call(self, *argv: str, stdin: str | None = None) -> dict[str, Any]:
        proc = subprocess.run([li_path(), *argv, "--machine"], input=stdin if stdin is not None else "",
                              capture_output=True, text=True, env=self.env, cwd=self.cwd, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"li {' '.join(argv)} --machine exited {proc.returncode}: {proc.stderr}")
        answer: dict[str, Any] = json.loads(proc.stdout)
        return answer

    def submit(self, *argv: str) -> str:
        answer = self.call("agent", "--detach", *argv)
        return str(answer["data"]["run_id"])

    def wait(self, *ids: str) -> None:
        self.call("job", "wait", *ids, "--max-wait", "60")


def capture() -> dict[str, dict[str, Any]]:
    """Every CASE's answer, from one session of real calls (raw, not normalised)."""
    with tempfile.TemporaryDirectory(prefix="li-doc-examples-") as root:
        s = Session(root)
        out: dict[str, dict[str, Any]] = {}
        out["refusal-not-found"] = s.call("job", "status", "20200101T000000-abcdef")
        out["refusal-bad-id"] = s.call("job", "status", "../etc")
        out["refusal-missing-argument"] = s.call("job", "status")
        out["refusal-bad-limit"] = s.call("job", "list", "--limit", "lots")
        out["refusal-empty-prompt"] = s.call("agent", "--detach", "sh", "  ")
        out["handshake"] = s.call("handshake")
        hello = s.call("agent", "--detach", "--label", "hello", "sh",
                       'echo hello; echo "a result" > "$LI_ARTIFACTS_DIR/result.txt"')
        out["submit-agent"] = hello
        hello_id = hello["data"]["run_id"]
        with open(os.path.join(s.cwd, "flow.yaml"), "w", encoding="utf-8") as handle:
            handle.write("name: two-step\nmodel: sh\nsteps:\n  - id: fetch\n    prompt: echo 42\n"
                         "  - id: report\n    depends_on: [fetch]\n    prompt: echo \"the answer was {{steps.fetch}}\"\n")
        time.sleep(1.05)  # ids sort by their second: one second apart, the list's order is fixed
        flow = s.call("orchestrate", "flow", "--detach", "--label", "two-step", "flow.yaml")
        out["submit-flow"] = flow
        time.sleep(1.05)
        fanout = s.call("orchestrate", "fanout", "--detach", "--legs", "2", "sh", "echo leg")
        s.wait(hello_id, flow["data"]["run_id"], fanout["data"]["run_id"])
        time.sleep(1.05)
        long_id = s.submit("--label", "long", "sh", "sleep 300")
        time.sleep(1.0)
        out["status-running"] = s.call("job", "status", long_id)
        out["wait-window-closed"] = s.call("job", "wait", long_id, "--max-wait", "1", "--poll-interval", "0.5")
        out["status-ended"] = s.call("job", "status", hello_id)
        out["output-ended"] = s.call("job", "output", hello_id)
        out["kill-signalled"] = s.call("job", "kill", long_id)
        s.wait(long_id)
        out["kill-already-terminal"] = s.call("job", "kill", long_id)
        out["list"] = s.call("job", "list", "--limit", "3")
        out["wait-all-ended"] = s.call("job", "wait", long_id, hello_id, "--max-wait", "10", "--poll-interval", "0.5")
        s.submit("--label", "still-running", "sh", "sleep 300")
        out["prune"] = s.call("job", "prune", "--older-than", "0")
        out["doctor"] = s.call("doctor")
        out["completion"] = s.call("completion", "bash")
        out["version"] = s.call("--version")
        out["help"] = s.call("--help")
        for row in s.call("job", "list")["data"]["runs"]:
            if not row["terminal"]:
                s.call("job", "kill", row["run_id"])
        normaliser = Normaliser(s, out.values())
        return {name: normaliser(answer) for name, answer in out.items()}


CASES = ("refusal-not-found", "refusal-bad-id", "refusal-missing-argument", "refusal-bad-limit",
         "refusal-empty-prompt", "handshake", "submit-agent", "submit-flow", "status-running", "status-ended",
         "output-ended", "list", "kill-signalled", "kill-already-terminal", "wait-all-ended", "wait-window-closed",
         "prune", "doctor", "completion", "version", "help")


class Normaliser:
    """Fixed shown values for what differs per run: ids in order of submission, one time, pids, paths."""

    def __init__(self, session: Session, answers: Iterable[dict[str, Any]]) -> None:
        self.session = session
        self.ids: dict[str, str] = {}
        seen = sorted(set(RUN_ID.findall(json.dumps(list(answers)))) - {"20200101T000000-abcdef"})
        for index, real in enumerate(seen):
            digest = hashlib.sha256(str(index).encode()).hexdigest()[:6]
            self.ids[real] = f"20261202T1057{31 + 2 * index:02d}-{digest}"
        self.module = os.path.join(REPO, "lionrun", "entrypoints")

    def text(self, value: str) -> str:
        value = value.replace(self.session.home, HOME_SHOWN).replace(self.session.cwd, CWD_SHOWN)
        value = value.replace(self.module, "/abs/path/to/lionrun/entrypoints")
        value = RUN_ID.sub(lambda m: self.ids.get(m.group(0), m.group(0)), value)
        return ISO_TIME.sub("2026-12-02T10:57:31.763957+00:00", value)

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        if key in VOLATILE and isinstance(value, (int, float)) and not isinstance(value, bool):
            return VOLATILE[key]
        if key == "host" and isinstance(value, str):
            return "3d1219c7c4c5404aaa1f6d2a48adfda4"  # the machine id of the host that ran it
        if isinstance(value, str):
            value = self.text(value)
            if key in ("script", "help") and len(value) > SHOWN_CHARS:
                value = value[:SHOWN_CHARS] + "…(truncated here; the real value is the whole text)"
        return value


def shown(envelope: dict[str, Any]) -> str:
    return json.dumps(envelope, indent=2, ensure_ascii=False)


def blocks(path: str) -> list[tuple[str, str, int, int]]:
    """(marker kind, marker argument, first line, end line) of every ```json block, 0-based lines
    (the block's text is lines[first:end]); kind "" when a block has no marker."""
    lines = read(path).split("\n")
    found = []
    for index, line in enumerate(lines):
        if line.strip() != "```json":
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        match = MARKER.match(previous.strip())
        found.append((match.group(1), match.group(2), index + 1, end) if match else ("", "", index + 1, end))
    return found


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def stale(answers: dict[str, dict[str, Any]], paths: list[str] | None = None,
          update: bool = False) -> list[str]:
    """Every `li-example` block that differs from its regenerated answer (rewritten with update)."""
    problems = []
    for path in paths or DOCS:
        lines = read(path).split("\n")
        for kind, name, first, end in reversed(blocks(path)):
            if kind != "li-example":
                continue
            if name not in answers:
                problems.append(f"{os.path.basename(path)}:{first}: no case named {name!r}")
                continue
            want = shown(answers[name]).split("\n")
            if lines[first:end] != want:
                change = [d for d in difflib.unified_diff(lines[first:end], want, lineterm="", n=0)][2:12]
                problems.append(f"{os.path.basename(path)}:{first}: {name} is stale:\n" + "\n".join(change))
                lines[first:end] = want
        if update:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write("\n".join(lines))
    return problems


def main(argv: list[str], capture_answers: Callable[[], dict[str, dict[str, Any]]] = capture) -> int:
    update = "--update" in argv
    problems = stale(capture_answers(), update=update)
    for problem in problems:
        print(("updated " if update else "") + problem, file=sys.stderr)
    return 0 if update or not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
