"""li's permission-prompt tool: a stdio MCP server Claude Code starts for a run under
`--permission-mode ask` (`--mcp-config` names it, `--permission-prompt-tool mcp__li__approve`).

Standard library only, and no store: each `tools/call` runs `li job approval-request` with the
call's arguments on stdin — an `li` in the run's work, which the run's broker answers from outside
the confinement where the store is hidden from the work (adapters/broker.py) — and answers with
the one text block Claude Code expects, whose text is the decision's JSON. A call li cannot put
to a person is denied, with why.

    python -P -m lionrun.entrypoints.approval_mcp --timeout SECONDS -- LI_ARGV...
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

SERVER = "li"
TOOL = "approve"
PROTOCOL = "2025-06-18"
SCHEMA = {"type": "object", "properties": {"tool_name": {"type": "string"}, "input": {"type": "object"},
                                           "tool_use_id": {"type": "string"}},
          "required": ["tool_name", "input"]}


def denied(why: str) -> str:
    return json.dumps({"behavior": "deny", "message": why})


def ask(li: list[str], timeout: str, arguments: object) -> str:
    """The decision's JSON text, from `li job approval-request` (a denial when it gave none)."""
    try:
        done = subprocess.run([*li, "job", "approval-request", "--timeout", timeout], input=json.dumps(arguments),
                              capture_output=True, text=True, timeout=float(timeout) + 120)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return denied(f"li could not put the request to a person: {exc}")
    text = done.stdout.strip()
    try:
        decision = json.loads(text)
    except ValueError:
        decision = None
    if done.returncode != 0 or not isinstance(decision, dict) or decision.get("behavior") not in ("allow", "deny"):
        why = (done.stderr.strip().splitlines() or ["no answer"])[-1][:500]
        return denied(f"li could not put the request to a person: {why}")
    return text


class Server:
    def __init__(self, li: list[str], timeout: str) -> None:
        self.li = li
        self.timeout = timeout
        self.lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        with self.lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    def handle(self, message: dict[str, Any]) -> None:
        method, ident, params = message.get("method"), message.get("id"), message.get("params") or {}
        if ident is None:
            return  # a notification (initialized, cancelled): nothing to answer
        if method == "initialize":
            version = params.get("protocolVersion") if isinstance(params, dict) else None
            self.send({"jsonrpc": "2.0", "id": ident, "result": {
                "protocolVersion": version if isinstance(version, str) else PROTOCOL,
                "capabilities": {"tools": {}}, "serverInfo": {"name": SERVER, "version": "1"}}})
        elif method == "tools/list":
            self.send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [{
                "name": TOOL, "description": "Put a permission request to a person through li and wait for the answer.",
                "inputSchema": SCHEMA}]}})
        elif method == "tools/call":
            threading.Thread(target=self.call, args=(ident, params), daemon=True).start()
        elif method == "ping":
            self.send({"jsonrpc": "2.0", "id": ident, "result": {}})
        else:
            self.send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no method {method}"}})

    def call(self, ident: object, params: dict[str, Any]) -> None:
        if params.get("name") != TOOL:
            text = denied(f"li has no tool {params.get('name')!r}")
        else:
            text = ask(self.li, self.timeout, params.get("arguments") or {})
        self.send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": text}]}})

    def serve(self) -> None:
        for line in sys.stdin:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                self.handle(message)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] != "--timeout" or argv[2] != "--":
        print("usage: python -m lionrun.entrypoints.approval_mcp --timeout SECONDS -- LI_ARGV...", file=sys.stderr)
        return 2
    Server(argv[3:], argv[1]).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
