"""Record the real agent CLIs' streams against the model stub, for tests/fixtures/transcripts/<cli>/recorded/.

    .venv/bin/python -m tests.record_streams [CLI ...]

Each case runs the CLI once, directly, with the argv li would give it (adapters.providers), the
prompt on stdin, pointed at the stub by tests/agent_clis.agent_env, in a scratch folder; its
stdout is kept as `<case>.jsonl` and what else it did as `<case>.meta.json` (exit code, argv,
the stub's script and the requests it saw, stderr's last lines, the seconds it took). The
scratch paths and the stub's port are replaced by fixed ones so a new recording differs only
where the CLI changed. The fakes in tests/fakes/bin are checked against these recordings
(tests/unit/test_fake_clis_match_recordings.py); the reason codes are derived from them.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from tests import agent_clis
from tests import model_stub as stub_module
from tests.model_stub import ModelStub, Step

FIXTURES = agent_clis.REPO / "tests" / "fixtures" / "transcripts"
HOME = "/home/user"
PORT = 8080
PROMPT = "Say hello."
HANG_CAP = 8.0  # a hung CLI is stopped after this many seconds (what it printed until then is the point)

# li's --permission-mode per CLI for the tool cases: the one that lets the shell tool run here.
RUNS_TOOLS = {"claude": ["--permission-mode", "acceptEdits"], "codex": ["--sandbox", "danger-full-access"],
              "gemini": ["--approval-mode", "yolo"], "opencode": ["--auto"]}


class Case:
    def __init__(self, name: str, steps: list[Step], *, tools: bool = False, retries: int = 1, refused: bool = False,
                 trusted: bool = True, key: str = agent_clis.KEY, only: tuple[str, ...] = (*agent_clis.CLIS, agent_clis.OPENCODE),
                 cap: float = 120.0, model: str | None = None, request_retries: int | None = None) -> None:
        self.name, self.steps, self.tools, self.retries, self.refused = name, steps, tools, retries, refused
        self.request_retries = request_retries
        self.trusted, self.key, self.only, self.cap, self.model = trusted, key, only, cap, model


CASES = [
    Case("answer", [stub_module.text("Hello from the stub.", reasoning="**Greeting**")]),
    Case("model", [stub_module.text("Hello from the named model.")], model="stub-model-x",
         only=agent_clis.CLIS),  # OpenCode's --model is PROVIDER/MODEL, which a li model spec cannot carry
    Case("tool", [stub_module.tool("echo tool-ran > marker.txt"), stub_module.text("Wrote marker.txt.")], tools=True),
    Case("tool_refused", [stub_module.tool("echo tool-ran > marker.txt"), stub_module.text("Could not write it.")]),
    Case("empty", [stub_module.empty()]),
    Case("auth", [stub_module.error(401)]),
    Case("forbidden", [stub_module.error(403)]),
    Case("rate_limited", [stub_module.rate_limited(reset_in=3600, retry_after=1)]),
    Case("server_error", [stub_module.error(500)]),
    Case("overloaded", [stub_module.overloaded()]),
    Case("cut", [stub_module.cut()]),
    Case("hang", [stub_module.hang()], cap=HANG_CAP),
    Case("refused", [], refused=True, cap=15.0),  # Codex waits for the network for ever
    Case("transient", [stub_module.error(500), stub_module.error(500), stub_module.text("Recovered.")], retries=4,
         request_retries=0),  # Codex: every retry on the stream, where it says "Reconnecting... N/4"
    Case("untrusted", [stub_module.text("never asked")], trusted=False, only=("gemini",)),
]


def record(cli: str, case: Case, out: pathlib.Path) -> dict[str, Any]:
    from lionrun.adapters.providers import command_line

    stub = ModelStub()
    stub.script(*(case.steps or [stub_module.text()]))
    scratch = pathlib.Path(tempfile.mkdtemp(prefix=f"li-record-{cli}-"))
    try:
        url = stub_module.refused_url() if case.refused else stub.url
        env = agent_clis.agent_env(cli, url, scratch / "home", key=case.key, retries=case.retries,
                                   trusted=case.trusted, request_retries=case.request_retries)
        work = scratch / "work"
        work.mkdir()
        argv = command_line(cli, case.model, env, RUNS_TOOLS[cli] if case.tools else [])
        began = time.monotonic()
        child = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, process_group=0)
        try:
            stdout, stderr = child.communicate(PROMPT, timeout=case.cap)
            stopped = False
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, 9)
            stdout, stderr = child.communicate()
            stopped = True
        seconds = round(time.monotonic() - began, 1)
        clean = _cleaner(str(scratch), stub.port if not case.refused else int(url.rsplit(":", 1)[1]))
        meta = {
            "cli": cli, "version": agent_clis.version(cli), "case": case.name,
            "argv": [clean(os.path.basename(argv[0])), *map(clean, argv[1:])], "prompt": PROMPT,
            "exit": None if stopped else child.returncode,
            "stopped_after_seconds": case.cap if stopped else None, "seconds": seconds,
            "endpoint": "refused" if case.refused else "stub", "retries": case.retries,
            "script": [asdict(step) for step in case.steps],
            "requests": [{"vendor": r.vendor, "path": r.path, "main": r.main, "model": r.model,
                          "answered": r.step.kind if r.step else None, "status": r.step.status if r.step else None}
                         for r in stub.requests],
            "stderr_tail": [clean(line) for line in stderr.splitlines()[-15:]],
            "marker_written": (work / "marker.txt").exists(),
        }
        (out / f"{case.name}.jsonl").write_text("".join(clean(line) + "\n" for line in stdout.splitlines()))
        (out / f"{case.name}.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        return meta
    finally:
        stub.stop()
        subprocess.run(["rm", "-rf", str(scratch)], check=False)


def _cleaner(scratch: str, port: int) -> Callable[[str], str]:
    def clean(text: str) -> str:
        return (text.replace(f"{scratch}/home", HOME).replace(scratch, "/scratch").replace(str(agent_clis.REPO), "/repo")
                .replace(f"127.0.0.1:{port}", f"127.0.0.1:{PORT}"))

    return clean


def main(argv: list[str]) -> int:
    """Record every case of the CLIs named (all three by default); `CLI:CASE` records one case."""
    wanted = [word.split(":", 1) + [""] for word in argv] or [[cli, ""] for cli in (*agent_clis.CLIS, agent_clis.OPENCODE)]
    for cli, only, *_ in wanted:
        out = FIXTURES / cli / "recorded"
        out.mkdir(parents=True, exist_ok=True)
        for case in CASES:
            if cli not in case.only or (only and case.name != only):
                continue
            meta = record(cli, case, out)
            print(f"{cli:7} {case.name:13} exit {meta['exit']!s:5} {meta['seconds']:6.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
