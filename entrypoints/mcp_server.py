"""`li mcp`: an MCP server on stdio whose every answer comes through the contract client."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypedDict

import anyio
from mcp.server import MCPServer
from mcp.types import CallToolResult, TextContent

from adapters.contract_client import (
    ContractClient,
    Reply,
    UnresolvedPolicy,
    read_fields,
    run_view,
)
from adapters.contract_client.artifacts import artifact_of
from domain.contract import EXIT_CONFIG

INSTRUCTIONS = """\
Runs agent work as detached, durable runs through the `li` command (lion machine-result contract v1).
Workflow: submit (submit_agent; model `sh` runs the prompt as a shell command) -> wait with the
run_id until classification.settled is true -> output to read the console and artifacts.
Every answer carries `surface`: only `ok` carries data. `degraded`, `environment_fault`,
`transport_fault`, `contract_violation` and `unregistered` are faults of this surface, never of
your run: do not report them as the run failing. Decide with classification `branch` (not_ended,
succeeded, failed, cancelled, indeterminate), never with `status`, which is shown verbatim and
may take values you have not seen. An `unknown` evidence reading means "could not be
established", never "there is none"."""


DESCRIPTIONS = {
    "diff": (
        "The changes a run submitted with worktree=true committed on its branch li/<run_id>, against "
        "the commit its worktree started from: files and the patch, each with `available` (false with "
        "a reason when they cannot be read, never an empty patch)."
    ),
    "reply": (
        "Continue a finished agent run's conversation: a new detached run resuming the agent CLI's "
        "own session, in the same worktree and branch; returns the new run_id (refused for sh runs "
        "and runs whose stream carried no session id). Then `wait`, then `output`."
    ),
    "handshake": (
        "Ask `li` which contract it speaks. Call it when another tool reports surface `degraded` "
        "(or when only this tool is listed): an understood version trusts the surface again and "
        "registers the other tools (list tools again); any other version keeps them unavailable."
    ),
    "submit_agent": (
        "Start one detached run and return its run_id at once (the work is not done yet). "
        "model: `sh` runs prompt as a shell command (env LI_ARTIFACTS_DIR: write result files "
        "there; LI_RUN_ID), or claude, codex, gemini, `claude/opus`; omit for li's default. "
        "worktree=true: work in a new git worktree on branch li/<run_id> (from base, after setup); "
        "then `diff` shows the change. Then call `wait` with the run_id, then `output`."
    ),
    "submit_flow": (
        "Start a declared flow (spec_path: absolute path of a YAML/JSON DAG file of steps) as one "
        "detached run; returns its run_id at once. Then call `wait`, then `output`."
    ),
    "submit_fanout": (
        "Start N parallel legs of one prompt (or one leg per model in `models`), optionally with a "
        "synthesis leg, as one detached run; returns its run_id at once. Then `wait`, then `output`."
    ),
    "status": (
        "Read one run's recorded state now. `branch` says what to do: not_ended -> call wait; "
        "succeeded/failed/cancelled -> read output; indeterminate -> it ended but its result "
        "cannot be established: do not retry automatically, tell a human."
    ),
    "output": (
        "Read a run's console tail, artifact listing and manifest. Evidence `none` means there "
        "definitively is none; `unknown` means it could not be read. Pass `artifact` (a name from "
        "the listing) to also get that artifact's text."
    ),
    "list_runs": "List recent runs, newest first (`truncated` says whether more exist).",
    "kill": (
        "Signal a run's process group. Reports what was done (signalled, requested, already_terminal, "
        "no_process), not that the run ended: call `wait` afterwards to observe its end."
    ),
    "prune": (
        "Remove ended runs' folders (only runs that recorded an end; a run still going, or whose end "
        "is unknown, is kept and says why). older_than_days: only runs that ended that long ago "
        "(default: li's). dry_run: say what would go, remove nothing."
    ),
    "wait": (
        "Observe runs for up to max_wait seconds (0 = snapshot) and return when every id has ended "
        "or cannot progress. Expiry is not an error: call wait again while ids are pending. "
        "`stopped_without_end`: the run's process is gone but no end was recorded - it will not "
        "finish on its own; `unresolved_spawn`: the run's start was never recorded (an old "
        "`preparing` record) and it will not resolve either. This server retries those "
        "with backoff and, after its attempt limit, lists them in `abandoned`: stop waiting on "
        "abandoned ids and tell a human. Done when classification.settled is true."
    ),
}

class ToolAnswer(TypedDict):
    """Every tool's structured result (published as its output schema): `surface` is the client's
    verdict on the answer; `data` and `error` are li's envelope as given (data only when `ok`);
    `classification` is what the client made of it (branch, evidence, artifact text, ...)."""

    surface: str
    data: dict[str, Any] | None
    error: dict[str, Any] | None
    classification: dict[str, Any]


# A tool builds its own CallToolResult; the annotation publishes ToolAnswer as its output schema.
Answered = Annotated[CallToolResult, ToolAnswer]


def answer(reply: Reply, classification: Mapping[str, Any]) -> CallToolResult:
    """Data only when the surface answered `ok`; the client's classification always."""
    body = {
        "surface": reply.verdict.value,
        "data": reply.data,
        "error": reply.error,
        "classification": {**reply.to_wire(), **classification},
    }
    text = json.dumps(body, ensure_ascii=False, indent=1)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=body,
        is_error=not reply.ok,
    )


def run_classification(reply: Reply) -> dict[str, Any]:
    return {"run": run_view(reply.data).to_wire()} if reply.data is not None else {}


def evidence(reply: Reply, names: Sequence[str]) -> dict[str, Any]:
    """Each read-derived field as present / none / unknown; a console tail says if it is partial."""
    if reply.data is None:
        return {}
    readings = {name: reading.to_wire() for name, reading in read_fields(reply.data, names).items()}
    for name, wire in readings.items():
        raw = reply.data.get(name)
        if isinstance(raw, Mapping) and "truncated" in raw:
            wire["truncated"] = raw["truncated"]
    return {"evidence": readings}


def artifact_text(reply: Reply, name: str) -> dict[str, Any]:
    """The text of one listed artifact, checked by the contract client (its one home)."""
    return {"artifact": artifact_of(reply, name)}


class LiServer(MCPServer):
    """The MCP server whose tools' arguments, checked by pydantic against each tool's signature,
    are refused in one line of li's words: `refused`, `invalid_input`, as li itself refuses
    (domain/written.py), not pydantic's multi-line report."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
        from pydantic import ValidationError

        from domain.written import one_line

        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            refusal = one_line(exc.__cause__, f"{name}'s arguments")
        body = {"surface": "refused", "data": None,
                "error": {"kind": refusal.kind.value, "message": refusal.message, "detail": refusal.detail},
                "classification": {"surface_fault": False}}
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
                              structured_content=body, is_error=True)


class Tools:
    """The MCP tools; each is one contract-client call plus its classification."""

    def __init__(self, client: ContractClient, server: MCPServer) -> None:
        self.client = client
        self.server = server
        self.verbs_registered = False

    def register_verbs(self) -> None:
        """Add every verb tool; done once, and only after a handshake the client accepted (C1)."""
        if not self.verbs_registered:
            for name in VERBS:
                self.server.add_tool(getattr(self, name), name=name, description=DESCRIPTIONS[name])
            self.verbs_registered = True

    async def handshake(self) -> Answered:
        # The li call runs on a worker thread; registering happens here, on the server's loop.
        hello = await anyio.to_thread.run_sync(self.client.handshake)
        if hello.registered:
            self.register_verbs()
        state = {"registered": hello.registered, "reason": hello.reason}
        return answer(hello.reply, {**state, "state": self.client.state.value})

    def submit_agent(
        self,
        prompt: str,
        model: str | None = None,
        label: str | None = None,
        cwd: str | None = None,
        timeout_seconds: float | None = None,
        worktree: bool = False,
        base: str | None = None,
        setup: str | None = None,
    ) -> Answered:
        reply = self.client.submit_agent(
            prompt, model, label=label, cwd=cwd, timeout=timeout_seconds, worktree=worktree, base=base,
            setup=setup,
        )
        return answer(reply, run_classification(reply))

    def diff(self, run_id: str) -> Answered:
        reply = self.client.diff(run_id)
        return answer(reply, evidence(reply, ("files", "patch")))

    def reply(self, run_id: str, prompt: str) -> Answered:
        reply = self.client.reply(run_id, prompt)
        return answer(reply, run_classification(reply))

    def submit_flow(
        self,
        spec_path: str,
        label: str | None = None,
        cwd: str | None = None,
        timeout_seconds: float | None = None,
    ) -> Answered:
        reply = self.client.submit_flow(spec_path, label=label, cwd=cwd, timeout=timeout_seconds)
        return answer(reply, run_classification(reply))

    def submit_fanout(
        self,
        prompt: str,
        model: str | None = None,
        legs: int | None = None,
        models: list[str] | None = None,
        synthesize: str | None = None,
        label: str | None = None,
        cwd: str | None = None,
        timeout_seconds: float | None = None,
    ) -> Answered:
        reply = self.client.submit_fanout(
            prompt, model, legs=legs, models=models, synthesize=synthesize, label=label,
            cwd=cwd, timeout=timeout_seconds,
        )
        return answer(reply, run_classification(reply))

    def status(self, run_id: str) -> Answered:
        reply = self.client.status(run_id)
        return answer(
            reply,
            {**run_classification(reply), **evidence(reply, ("delivery", "manifest", "usage"))},
        )

    def output(
        self, run_id: str, tail_chars: int | None = None, artifact: str | None = None
    ) -> Answered:
        reply = self.client.output(run_id, tail_chars)
        extra = evidence(reply, ("console", "artifacts", "manifest"))
        if reply.ok and artifact is not None:
            extra.update(artifact_text(reply, artifact))
        return answer(reply, extra)

    def list_runs(self, limit: int | None = None, status: str | None = None) -> Answered:
        reply = self.client.list_runs(limit, status)
        rows = (reply.data or {}).get("runs") or []
        return answer(
            reply, {"runs": [run_view(r).to_wire() for r in rows if isinstance(r, Mapping)]}
        )

    def kill(self, run_id: str) -> Answered:
        reply = self.client.kill(run_id)
        note = {"note": "kill reports signal delivery, not the run's end: call wait to observe it"}
        return answer(reply, {**run_classification(reply), **note})

    def prune(self, older_than_days: float | None = None, dry_run: bool = False) -> Answered:
        reply = self.client.prune(older_than_days, dry_run)
        return answer(reply, {})

    def wait(
        self, run_ids: list[str], max_wait: float = 30.0, poll_interval: float = 1.0
    ) -> Answered:
        report = self.client.wait(run_ids, max_wait, poll_interval)
        return answer(report.reply, report.to_wire())


VERBS = (
    "submit_agent",
    "submit_flow",
    "submit_fanout",
    "status",
    "output",
    "list_runs",
    "kill",
    "wait",
    "prune",
    "diff",
    "reply",
)


def build_server(client: ContractClient) -> MCPServer:
    """Handshake once; register the verbs only when the version is understood (C1)."""
    hello = client.handshake()
    from entrypoints.version import version

    server = LiServer("lionrun", instructions=INSTRUCTIONS, log_level="WARNING", version=version())
    tools = Tools(client, server)
    server.add_tool(tools.handshake, name="handshake", description=DESCRIPTIONS["handshake"])
    if hello.registered:
        tools.register_verbs()
    else:
        print(f"li mcp: verbs not registered: {hello.reason}", file=sys.stderr)
    return server


def resolve_li(explicit: str | None, env: Mapping[str, str]) -> str | None:
    """`--li`, else `LI_BIN`, else `li` on PATH, made absolute once, at start-up (D1)."""
    for candidate in (explicit, env.get("LI_BIN"), shutil.which("li")):
        if candidate:
            return os.path.abspath(candidate)
    return None


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="li mcp", description="Serve li's tools over MCP on stdio."
    )
    parser.add_argument(
        "--li", help="absolute path of the li executable (default: LI_BIN, then PATH)"
    )
    parser.add_argument(
        "--max-attempts",
        type=int,
        default=5,
        help="unresolved observations of a run before it is reported abandoned",
    )
    parser.add_argument(
        "--backoff", type=float, default=1.0, help="first backoff in seconds (doubles)"
    )
    parser.add_argument(
        "--backoff-max", type=float, default=60.0, help="largest backoff in seconds"
    )
    return parser.parse_args(argv)


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):
        return False


def main(argv: list[str]) -> int:
    try:
        options = parse(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    li = resolve_li(options.li, os.environ)
    if li is None or not (os.path.isfile(li) and os.access(li, os.X_OK)):
        print(f"li mcp: no executable li at {li!r}; pass --li or set LI_BIN", file=sys.stderr)
        return EXIT_CONFIG
    if _isatty(sys.stdin):  # a person, not an MCP host: say what this is rather than wait silently
        print("li mcp: speaking MCP (JSON-RPC) on stdio for an MCP client; this is no prompt for a person "
              "— Ctrl-C to quit", file=sys.stderr, flush=True)
    policy = UnresolvedPolicy(options.max_attempts, options.backoff, 2.0, options.backoff_max)
    build_server(ContractClient(li, policy=policy)).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
