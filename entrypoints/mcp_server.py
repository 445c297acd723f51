"""`li mcp`: an MCP server on stdio whose every answer comes through the contract client."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypedDict

import anyio
from mcp.server import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from lionrun.adapters.contract_client import (
    ContractClient,
    Reply,
    UnresolvedPolicy,
    WaitReport,
    read_fields,
    run_view,
)
from lionrun.adapters.contract_client.artifacts import artifact_of
from lionrun.domain.contract import EXIT_CONFIG
from lionrun.domain.vocabulary import PermissionMode

INSTRUCTIONS = """\
Runs agent work as detached, durable runs through the `li` command (lion machine-result contract v1).
Workflow: submit (submit_agent; model `sh` runs the prompt as a shell command) -> wait with the
run_id until classification.settled is true (an id in classification.errors is no run li knows:
stop waiting on it) -> output to read the console and artifacts (artifact=NAME: its text at
data.artifact.text). Each result's text is one line of summary; the answer is its structured
content `{surface, data, error, classification}`. Every answer carries `surface`: only `ok` carries data. `degraded`, `environment_fault`,
`transport_fault`, `contract_violation` and `unregistered` are faults of this surface, never of
your run: do not report them as the run failing. Decide with classification `branch` (not_ended,
succeeded, failed, cancelled, indeterminate), never with `status`, which is shown verbatim and
may take values you have not seen. An `unknown` evidence reading means "could not be
established", never "there is none"."""


DESCRIPTIONS = {
    "diff": (
        "The changes a run submitted with worktree=true committed on its branch li/<run_id>, against "
        "the commit its worktree started from: files and the patch, each with `available` (false with "
        "a reason when they cannot be read, never an empty patch). A run of several legs has a worktree "
        "per leg (branch li/<run_id>.<leg>): each leg's change is under `legs`, or pass `leg` for one."
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
        "then `diff` shows the change. permission_mode (read-only, edits, full; agent CLIs only, "
        "default: the CLI's own), provider_args (passed verbatim to the agent CLI) and notify (an argv "
        "template run when the run ends, no shell) are `li agent`'s --permission-mode, --provider-arg "
        "and --notify. after (run ids, each `RUN`, `RUN:ok`, `RUN:fail` or `RUN:any`) makes it wait, "
        "status `waiting`, until those runs ended so (else it ends dependency_failed, unstarted); "
        "priority (an integer) orders it within its queue, higher first. Then call `wait` with the "
        "run_id, then `output`."
    ),
    "submit_flow": (
        "Start a declared flow as one detached run; returns its run_id at once. Give the DAG of "
        "steps either as spec (its YAML/JSON text) or as spec_path (absolute path of a YAML/JSON "
        "file), not both; inside a run whose store is hidden, spec only. Then call `wait`, then "
        "`output`."
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
        "Read a run's console tail (`tail_chars`, at least 1; omit it for li's default of 20000), "
        "artifact listing and manifest; li's own lines about the run (queued, stopping, the end it "
        "recorded) are apart from the work's console, at data.li_log (same tail). "
        "Evidence `none` means there definitively is none; `unknown` "
        "means it could not be read. Pass `artifact` (a name from data.artifacts) to also get that "
        "artifact's text at data.artifact.text; a name the listing lacks (not_found), or an artifact "
        "that cannot be served (not a regular file, unreadable, changed since listed), is an error."
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
        "abandoned ids and tell a human. Done when classification.settled is true: every id ended or "
        "was abandoned. An id in classification.errors (not_found: li knows no such run) never "
        "settles and is not waited on: check the id. classification.waiting_on lists the ids worth "
        "another wait."
    ),
}

class ToolAnswer(TypedDict):
    """Every tool's structured result (published as its output schema): `surface` is the client's
    verdict on the answer; `data` and `error` are li's envelope as given (data only when `ok`),
    `data.artifact` added by `output` when an artifact is asked for; `classification` is what the
    client made of it (branch, evidence, settled, ...). The text content is one line of summary."""

    surface: str
    data: dict[str, Any] | None
    error: dict[str, Any] | None
    classification: dict[str, Any]


# A tool builds its own CallToolResult; the annotation publishes ToolAnswer as its output schema.
Answered = Annotated[CallToolResult, ToolAnswer]


#: Most bytes of a result's text summary: the answer itself travels once, as structured content.
SUMMARY_LIMIT = 280
SEE_STRUCTURED = " (whole answer: structuredContent)"


def answer(
    reply: Reply,
    classification: Mapping[str, Any],
    said: str | None = None,
    data: dict[str, Any] | None = None,
) -> CallToolResult:
    """Data only when the surface answered `ok` (`data` replaces li's when given, to add to it);
    the client's classification always; `said` is the one-line summary of an `ok` answer."""
    body = {
        "surface": reply.verdict.value,
        "data": (reply.data if data is None else data) if reply.ok else None,
        "error": reply.error,
        "classification": {**reply.to_wire(), **classification},
    }
    line = f"ok: {said}" if reply.ok and said else fault_line(body)
    return result(body, line, is_error=not reply.ok)


def result(body: dict[str, Any], line: str, is_error: bool) -> CallToolResult:
    """The answer sent once, as structured content, beside a one-line text summary of it (for MCP
    clients that read only text): never the answer twice."""
    return CallToolResult(
        content=[TextContent(type="text", text=summary_text(line))],
        structured_content=body,
        is_error=is_error,
    )


def summary_text(line: str) -> str:
    """One line, at most SUMMARY_LIMIT bytes of UTF-8 (cut on a character), pointing at the rest."""
    flat = " ".join(line.split())
    room = SUMMARY_LIMIT - len(SEE_STRUCTURED.encode())
    raw = flat.encode("utf-8")
    if len(raw) > room:
        flat = raw[: room - len("…".encode())].decode("utf-8", errors="ignore") + "…"
    return flat + SEE_STRUCTURED


def fault_line(body: Mapping[str, Any]) -> str:
    """A refusal as `refused: KIND: message`; a fault of the surface with its diagnostic."""
    error = body.get("error") or {}
    if error:
        return f"{body['surface']}: {error.get('kind')}: {error.get('message')}"
    said = (body.get("classification") or {}).get("diagnostic")
    return f"{body['surface']}: {said or 'no answer'}"


def refused(kind: str, message: str, detail: Mapping[str, Any] | None, classification: Mapping[str, Any]) -> CallToolResult:
    """A refusal of this server's own (not li's envelope): `surface: refused`, li's closed error kinds."""
    body = {
        "surface": "refused",
        "data": None,
        "error": {"kind": kind, "message": message, "detail": dict(detail) if detail else None},
        "classification": {**classification, "surface": "refused", "surface_fault": False},
    }
    return result(body, fault_line(body), is_error=True)


def run_line(reply: Reply, next_step: str = "") -> str:
    """`run R: STATUS (branch B)`, from a status-bearing data object."""
    view = run_view(reply.data or {})
    return f"run {view.run_id}: {view.status} (branch {view.branch.value}){next_step}"


def reading_line(name: str, wire: Mapping[str, Any]) -> str:
    evidence_of = wire.get("evidence")
    if evidence_of == "unknown":
        return f"{name} unknown ({wire.get('reason_code')})"
    return f"{name} {evidence_of}{' (truncated)' if wire.get('truncated') else ''}"


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

        from lionrun.domain.written import one_line

        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            refusal = one_line(exc.__cause__, f"{name}'s arguments")
        return refused(refusal.kind.value, refusal.message, refusal.detail, {})


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
        spoken = (hello.reply.data or {}).get("contract_version")
        said = (f"li speaks contract_version {spoken}; verbs registered (list tools again)" if hello.registered
                else f"verbs not registered: {hello.reason}")
        return answer(hello.reply, {**state, "state": self.client.state.value}, said)

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
        permission_mode: PermissionMode | None = None,
        provider_args: list[str] | None = None,
        notify: str | None = None,
        after: list[str] | None = None,
        priority: int | None = None,
    ) -> Answered:
        # permission_mode is checked against li's own vocabulary by its type (refused in one line
        # by LiServer); provider_args and notify are li's to judge, as the CLI's flags are.
        reply = self.client.submit_agent(
            prompt, model, label=label, cwd=cwd, timeout=timeout_seconds, worktree=worktree, base=base,
            setup=setup, permission_mode=permission_mode, provider_args=provider_args, notify=notify,
            after=after, priority=priority,
        )
        return answer(reply, run_classification(reply), submitted_line(reply))

    def diff(self, run_id: str, leg: str | None = None) -> Answered:
        reply = self.client.diff(run_id, leg)
        extra = evidence(reply, ("files", "patch"))
        readings = extra.get("evidence", {})
        files = (reply.data or {}).get("files") or {}
        count = len(files.get("value") or []) if isinstance(files, Mapping) and files.get("available") else None
        said = "; ".join([f"run {run_id}: {'?' if count is None else count} files changed",
                          *(reading_line(name, wire) for name, wire in readings.items())])
        return answer(reply, extra, said)

    def reply(self, run_id: str, prompt: str) -> Answered:
        reply = self.client.reply(run_id, prompt)
        return answer(reply, run_classification(reply), submitted_line(reply))

    def submit_flow(
        self,
        spec_path: str | None = None,
        spec: str | None = None,
        label: str | None = None,
        cwd: str | None = None,
        timeout_seconds: float | None = None,
        after: list[str] | None = None,
        priority: int | None = None,
    ) -> Answered:
        options: dict[str, object] = {"label": label, "cwd": cwd, "timeout": timeout_seconds, "after": after,
                                      "priority": priority}
        if (spec_path is None) == (spec is None):
            return refused("invalid_input", "submit_flow takes the flow as spec (its text) or as spec_path "
                           "(a file), exactly one of them", {"spec_path": spec_path}, {})
        if spec is not None:
            reply = self.client.submit_flow_text(spec, **options)
        else:
            assert spec_path is not None
            reply = self.client.submit_flow(spec_path, **options)
        return answer(reply, run_classification(reply), submitted_line(reply))

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
        after: list[str] | None = None,
        priority: int | None = None,
    ) -> Answered:
        reply = self.client.submit_fanout(
            prompt, model, legs=legs, models=models, synthesize=synthesize, label=label,
            cwd=cwd, timeout=timeout_seconds, after=after, priority=priority,
        )
        return answer(reply, run_classification(reply), submitted_line(reply))

    def status(self, run_id: str) -> Answered:
        reply = self.client.status(run_id)
        classification = {**run_classification(reply), **evidence(reply, ("delivery", "manifest", "usage"))}
        return answer(reply, classification, run_line(reply, f": {run_view(reply.data or {}).to_wire()['advice']}"))

    def output(
        self,
        run_id: str,
        tail_chars: Annotated[int, Field(ge=1)] | None = None,
        artifact: str | None = None,
    ) -> Answered:
        # tail_chars 0 is refused (by its type, in one line): a tail of nothing would read an
        # empty console text and say nothing of the console (issue 27).
        reply = self.client.output(run_id, tail_chars)
        extra = evidence(reply, ("console", "artifacts", "manifest"))
        said = f"run {run_id}: " + "; ".join(reading_line(n, w) for n, w in extra.get("evidence", {}).items())
        if not reply.ok or artifact is None:
            return answer(reply, extra, said)
        served = artifact_text(reply, artifact)["artifact"]
        if served.get("text") is None:  # asked for, not served: an error, never `text: null`
            return refused(str(served.get("kind") or "unavailable"),
                           f"artifact {artifact!r} of run {run_id}: {served.get('says')}",
                           {"run_id": run_id, "artifact": artifact}, reply.to_wire())
        text = served["text"]
        said += f"; artifact {artifact}: {len(text)} chars{' (truncated)' if served.get('truncated') else ''} " \
                "at data.artifact.text"
        return answer(reply, extra, said, data={**(reply.data or {}), "artifact": served})

    def list_runs(self, limit: int | None = None, status: str | None = None) -> Answered:
        reply = self.client.list_runs(limit, status)
        rows = (reply.data or {}).get("runs") or []
        more = " (more exist)" if (reply.data or {}).get("truncated") else ""
        return answer(
            reply, {"runs": [run_view(r).to_wire() for r in rows if isinstance(r, Mapping)]},
            f"{runs(len(rows))}{more}",
        )

    def kill(self, run_id: str) -> Answered:
        reply = self.client.kill(run_id)
        note = {"note": "kill reports signal delivery, not the run's end: call wait to observe it"}
        action = (reply.data or {}).get("action")
        return answer(reply, {**run_classification(reply), **note},
                      f"run {run_id}: {action}; call wait to observe its end")

    def prune(self, older_than_days: float | None = None, dry_run: bool = False) -> Answered:
        reply = self.client.prune(older_than_days, dry_run)
        data = reply.data or {}
        verb = "would remove" if dry_run else "removed"
        said = f"{verb} {runs(len(data.get('removed') or []))}; kept {len(data.get('kept') or [])}"
        return answer(reply, {}, said)

    def wait(
        self, run_ids: list[str], max_wait: float = 30.0, poll_interval: float = 1.0
    ) -> Answered:
        report = self.client.wait(run_ids, max_wait, poll_interval)
        return answer(report.reply, report.to_wire(), wait_line(report))


def runs(count: int) -> str:
    return f"{count} run{'' if count == 1 else 's'}"


def submitted_line(reply: Reply) -> str:
    return run_line(reply, "; call wait with its run_id")


def wait_line(report: WaitReport) -> str:
    """`settled: R1 succeeded, R2 failed` / `not settled: waiting on …; errors: R3 not_found`."""
    parts = [f"{view.run_id} {view.branch.value}" for view in report.runs if str(view.run_id) not in report.errors]
    words = ", ".join(parts) if parts else "no run"
    line = f"{'settled' if report.settled else 'not settled'}: {words}"
    if report.waiting_on:
        line += f"; waiting on {len(report.waiting_on)}"
    if report.abandoned:
        line += f"; abandoned {', '.join(report.abandoned)}"
    if report.errors:
        kinds = ", ".join(f"{run_id} {(e or {}).get('kind') if isinstance(e, Mapping) else e}"
                          for run_id, e in report.errors.items())
        line += f"; errors: {kinds}"
    return line


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
    from lionrun.entrypoints.version import version

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
