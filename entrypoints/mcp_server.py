"""`li mcp`: an MCP server (stdio, or Streamable HTTP on loopback) whose every answer comes
through the contract client. The tools are one table (`mcp_tools.TOOLS`); this module answers them."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import anyio
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

from lionrun.adapters.contract_client import (
    ContractClient,
    Reply,
    UnresolvedPolicy,
    WaitReport,
    read_fields,
    run_view,
)
from lionrun.adapters.contract_client.artifacts import artifact_of
from lionrun.adapters.contract_client.transport import Stoppable, stoppable
from lionrun.domain.contract import EXIT_CONFIG
from lionrun.entrypoints import mcp_tools as tools_table
from lionrun.entrypoints.mcp_tools import (
    SPECS,
    TOOLS,
    Refusal,
    ToolSpec,
    in_tool_words,
    parse_arguments,
)

INSTRUCTIONS = """\
Runs agent work as detached, durable runs through the `li` command (lion machine-result contract v1).
Workflow: submit (submit_agent names its model: `sh` runs the prompt as a shell script) -> wait with
the run_id until classification.settled is true -> output to read the console and artifacts
(artifact=NAME: its text at data.artifact.text). Each result's text is the whole answer as JSON, the
same object as its structured content: `{surface, data, error, classification}`. Only surface `ok`
carries data. `degraded`, `environment_fault`, `transport_fault`, `contract_violation` and
`unregistered` are faults of this surface, never of your run: do not report them as the run failing.
Decide with classification `branch` (not_ended, succeeded, failed, cancelled, indeterminate), never
with `status`, which is shown verbatim and may take values you have not seen. An `unknown` evidence
reading means "could not be established", never "there is none". An id li knows no run by is an
error (not_found) in every tool. A `busy` error: too many calls at once, try again shortly."""

#: Calls in flight at once, past which a call is answered `busy` at once (never queued): blocking
#: ones (`wait`) and the others (quick reads and submits) apart, so waits never starve a status.
BLOCKING_BOUND = 100
QUICK_BOUND = 32
#: Seconds between two progress notifications of a `wait` called with a progressToken.
PROGRESS_EVERY = 5.0

T = TypeVar("T")


# -- answers --------------------------------------------------------------------------------------

def result(body: dict[str, Any], is_error: bool) -> CallToolResult:
    """The answer as structured content and, the same object, as the text content's JSON (for
    clients that read only text, and every client on a protocol older than structured content)."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=body,
                          is_error=is_error)


def answer(
    spec: ToolSpec,
    reply: Reply,
    classification: Mapping[str, Any],
    said: str | None = None,
    data: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> CallToolResult:
    """Data only when the surface answered `ok` (`data` replaces li's when given, to add to it);
    li's refusal in the tool's own argument names; the client's classification always, with a
    one-line `summary`. `error` beside ok data: an id li knows no run by (see `wait`)."""
    refusal = reply.error
    if refusal:
        refusal = {key: in_tool_words(spec, value) if key == "message" and isinstance(value, str) else value
                   for key, value in refusal.items()}
        if isinstance(refusal.get("detail"), Mapping):
            refusal["detail"] = {key: in_tool_words(spec, value) if isinstance(value, str) else value
                                 for key, value in refusal["detail"].items()}
    body: dict[str, Any] = {
        "surface": reply.verdict.value,
        "data": (reply.data if data is None else data) if reply.ok else None,
        "error": refusal if not reply.ok else error,
        "classification": {**reply.to_wire(), **classification},
    }
    body["classification"]["summary"] = f"ok: {said}" if reply.ok and said else fault_line(body)
    return result(body, is_error=not reply.ok or error is not None)


def fault_line(body: Mapping[str, Any]) -> str:
    """A refusal as `refused: KIND: message`; a fault of the surface with its diagnostic."""
    error = body.get("error") or {}
    if error:
        return f"{body['surface']}: {error.get('kind')}: {error.get('message')}"
    said = (body.get("classification") or {}).get("diagnostic")
    return f"{body['surface']}: {said or 'no answer'}"


def refused(kind: str, message: str, detail: Mapping[str, Any] | None,
            classification: Mapping[str, Any] | None = None) -> CallToolResult:
    """A refusal of this server's own (not li's envelope): `surface: refused`, li's closed error kinds."""
    body: dict[str, Any] = {
        "surface": "refused",
        "data": None,
        "error": {"kind": kind, "message": message, "detail": dict(detail) if detail else None},
        "classification": {**(classification or {}), "surface": "refused", "surface_fault": False},
    }
    body["classification"]["summary"] = fault_line(body)
    return result(body, is_error=True)


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


def runs(count: int) -> str:
    return f"{count} run{'' if count == 1 else 's'}"


def submitted_line(reply: Reply) -> str:
    return run_line(reply, "; call wait with its run_id")


def answered_line(reply: Reply, run_id: str) -> str:
    """`run R: a1 allow` for each request an approve or deny answered."""
    rows = [r for r in (reply.data or {}).get("approvals") or [] if isinstance(r, Mapping)]
    return f"run {run_id}: " + (", ".join(f"{r.get('id')} {r.get('behavior')}" for r in rows) or "nothing answered")


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


def bad_ids(report: WaitReport) -> dict[str, Any] | None:
    """The one rule for bad ids, applied to `wait`: an id li cannot take (`invalid_input`: not a run
    id) or knows no run by (`not_found`) makes the answer an error of that kind, as `status`,
    `output`, `kill`, ... refuse one; the other ids are still reported. `detail.run_ids`: id -> kind."""
    kinds = {run_id: str(e.get("kind")) for run_id, e in report.errors.items() if isinstance(e, Mapping)}
    if not kinds:
        return None
    kind = "invalid_input" if "invalid_input" in kinds.values() else next(iter(kinds.values()))
    said = "; ".join(f"{run_id}: {(report.errors[run_id] or {}).get('message') or k}" for run_id, k in kinds.items())
    return {"kind": kind, "message": f"{said} (the other ids are reported in data and classification)",
            "detail": {"run_ids": kinds}}


# -- concurrency ----------------------------------------------------------------------------------

class Gate:
    """How many calls of one kind are in flight; past `bound` a call is refused, never queued.
    Touched only on the server's event loop, so a plain count."""

    def __init__(self, kind: str, bound: int) -> None:
        self.kind, self.bound, self.inflight = kind, bound, 0

    def enter(self) -> bool:
        if self.inflight >= self.bound:
            return False
        self.inflight += 1
        return True

    def leave(self) -> None:
        self.inflight -= 1


def steering(args: tools_table.SubmitAgent | tools_table.SubmitFlow | tools_table.SubmitFanout) -> dict[str, object]:
    """A submit tool's `after`, `priority`, `idempotency_key` and budget, retry policy and
    approval timeout, as the contract client's options (each becomes the CLI flag of its name)."""
    return {"after": args.after, "priority": args.priority, "idempotency_key": args.idempotency_key,
            "max_tokens": args.max_tokens, "max_cost": args.max_cost_usd, "retry": args.retry,
            "retry_on": args.retry_on, "retry_backoff": args.retry_backoff_seconds,
            "approval_timeout": args.approval_timeout_seconds}


class Tools:
    """The MCP tools; each is one contract-client call (on a worker thread of this server's own
    limiter, never the pool the stdio transport reads and writes with) plus its classification."""

    def __init__(self, client: ContractClient) -> None:
        self.client = client
        self.verbs_registered = False
        self.gates = {True: Gate("blocking", BLOCKING_BOUND), False: Gate("quick", QUICK_BOUND)}
        # room for every call the gates let in, and a progress snapshot beside each wait
        self.limiter = anyio.CapacityLimiter(2 * BLOCKING_BOUND + QUICK_BOUND)
        self.live: set[Stoppable] = set()
        from mcp.server.subscriptions import InMemorySubscriptionBus

        self.bus = InMemorySubscriptionBus()

    # -- plumbing --

    async def tools_changed(self, ctx: Any) -> None:
        """Say the tool list changed: to `subscriptions/listen` streams (protocol 2026-07-28 on) and,
        on a handshake-era connection, as `notifications/tools/list_changed`."""
        from mcp.server.subscriptions import ToolsListChanged
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        await self.bus.publish(ToolsListChanged())
        if ctx is not None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await ctx.session.send_tool_list_changed()

    async def run(self, work: Callable[[], T], *, stop_on_cancel: bool, background: bool = False) -> T:
        """`work` on a worker thread. Cancelled: a read's `li` child is killed at once; a submit's
        call is let finish (killing it half-way could leave a run half-made). `background`: a long
        observer (`li job wait`), whose child runs at a lower CPU priority than the server."""
        if not stop_on_cancel:
            with anyio.CancelScope(shield=True):
                return await anyio.to_thread.run_sync(work, limiter=self.limiter)
        with stoppable(background) as holder:
            self.live.add(holder)
            try:
                return await anyio.to_thread.run_sync(work, limiter=self.limiter, abandon_on_cancel=True)
            except anyio.get_cancelled_exc_class():
                holder.stop()
                raise
            finally:
                self.live.discard(holder)

    def stop_all(self) -> None:
        """The server is going: kill every `li` child still running for a call."""
        for holder in list(self.live):
            holder.stop()

    def listed(self) -> list[ToolSpec]:
        return [spec for spec in TOOLS if spec.name == "handshake" or self.verbs_registered]

    async def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: Any) -> CallToolResult:
        from mcp.shared.exceptions import MCPError
        from mcp.types import INVALID_PARAMS

        spec = SPECS.get(name)
        if spec is None or spec not in self.listed():
            raise MCPError(code=INVALID_PARAMS, message=tools_table.unknown_tool(
                name, [s.name for s in self.listed()]))
        parsed = parse_arguments(spec, arguments)
        if isinstance(parsed, Refusal):
            return refused("invalid_input", parsed.message, parsed.detail)
        gate = self.gates[spec.blocking]
        if not gate.enter():
            return refused("unavailable", f"busy: {gate.bound} {gate.kind} calls are in flight, the most this "
                           "server takes at once; try again shortly",
                           {"reason": "busy", "bound": gate.bound, "kind": gate.kind})
        try:
            handler: Callable[[Any, Any], Awaitable[CallToolResult]] = getattr(self, name)
            return await handler(ctx, parsed)
        finally:
            gate.leave()

    # -- the tools (one per row of mcp_tools.TOOLS) --

    async def handshake(self, ctx: Any, args: Any) -> CallToolResult:
        hello = await self.run(self.client.handshake, stop_on_cancel=True)
        newly = hello.registered and not self.verbs_registered
        if hello.registered:
            self.verbs_registered = True
        if newly:
            await self.tools_changed(ctx)
        state = {"registered": hello.registered, "reason": hello.reason}
        spoken = (hello.reply.data or {}).get("contract_version")
        said = (f"li speaks contract_version {spoken}; verbs registered (list tools again)" if hello.registered
                else f"verbs not registered: {hello.reason}")
        return answer(SPECS["handshake"], hello.reply, {**state, "state": self.client.state.value}, said)

    async def submit_agent(self, ctx: Any, args: tools_table.SubmitAgent) -> CallToolResult:
        reply = await self.run(lambda: self.client.submit_agent(
            args.prompt, args.model, label=args.label, cwd=args.cwd, timeout=args.timeout_seconds,
            worktree=args.worktree, base=args.base, setup=args.setup, permission_mode=args.permission_mode,
            provider_args=args.provider_args, notify=args.notify, **steering(args),
        ), stop_on_cancel=False)
        return answer(SPECS["submit_agent"], reply, run_classification(reply), submitted_line(reply))

    async def submit_flow(self, ctx: Any, args: tools_table.SubmitFlow) -> CallToolResult:
        if (args.spec_path is None) == (args.spec is None):
            return refused("invalid_input", "submit_flow takes the flow as `spec` (its text) or as `spec_path` "
                           "(a file), exactly one of them", {"spec_path": args.spec_path})
        options: dict[str, object] = {"label": args.label, "cwd": args.cwd, "timeout": args.timeout_seconds,
                                      **steering(args)}
        spec_text, spec_path = args.spec, args.spec_path
        if spec_text is not None:
            reply = await self.run(lambda: self.client.submit_flow_text(spec_text, **options), stop_on_cancel=False)
        else:
            assert spec_path is not None
            reply = await self.run(lambda: self.client.submit_flow(spec_path, **options), stop_on_cancel=False)
        return answer(SPECS["submit_flow"], reply, run_classification(reply), submitted_line(reply))

    async def submit_fanout(self, ctx: Any, args: tools_table.SubmitFanout) -> CallToolResult:
        if args.model is None and not args.models:
            return refused("invalid_input", "submit_fanout names who runs the prompt: give `model` (every leg; "
                           "`sh` runs the prompt as a shell script) or `models` (one leg per model)",
                           {"field": "model", "problem": "missing"})
        reply = await self.run(lambda: self.client.submit_fanout(
            args.prompt, args.model, legs=args.legs, models=args.models, synthesize=args.synthesize,
            label=args.label, cwd=args.cwd, timeout=args.timeout_seconds, **steering(args),
        ), stop_on_cancel=False)
        return answer(SPECS["submit_fanout"], reply, run_classification(reply), submitted_line(reply))

    async def reply(self, ctx: Any, args: tools_table.ReplyTo) -> CallToolResult:
        reply = await self.run(lambda: self.client.reply(args.run_id, args.prompt, args.idempotency_key),
                               stop_on_cancel=False)
        return answer(SPECS["reply"], reply, run_classification(reply), submitted_line(reply))

    async def approvals(self, ctx: Any, args: tools_table.NoArguments) -> CallToolResult:
        reply = await self.run(self.client.approvals, stop_on_cancel=True)
        rows = [r for r in (reply.data or {}).get("approvals") or [] if isinstance(r, Mapping)]
        said = "; ".join(f"{r.get('run_id')} {r.get('id')} {r.get('tool')}" for r in rows[:20])
        return answer(SPECS["approvals"], reply, {"open": len(rows)},
                      f"{len(rows)} open request{'' if len(rows) == 1 else 's'}" + (f": {said}" if said else ""))

    async def approve(self, ctx: Any, args: tools_table.Approve) -> CallToolResult:
        reply = await self.run(lambda: self.client.approve(args.run_id, args.request), stop_on_cancel=False)
        return answer(SPECS["approve"], reply, {}, answered_line(reply, args.run_id))

    async def deny(self, ctx: Any, args: tools_table.Deny) -> CallToolResult:
        reply = await self.run(lambda: self.client.deny(args.run_id, args.request, args.reason), stop_on_cancel=False)
        return answer(SPECS["deny"], reply, {}, answered_line(reply, args.run_id))

    async def diff(self, ctx: Any, args: tools_table.Diff) -> CallToolResult:
        reply = await self.run(lambda: self.client.diff(args.run_id, args.leg), stop_on_cancel=True)
        extra = evidence(reply, ("files", "patch"))
        readings = extra.get("evidence", {})
        files = (reply.data or {}).get("files") or {}
        count = len(files.get("value") or []) if isinstance(files, Mapping) and files.get("available") else None
        said = "; ".join([f"run {args.run_id}: {'?' if count is None else count} files changed",
                          *(reading_line(name, wire) for name, wire in readings.items())])
        return answer(SPECS["diff"], reply, extra, said)

    async def status(self, ctx: Any, args: tools_table.OneRun) -> CallToolResult:
        reply = await self.run(lambda: self.client.status(args.run_id), stop_on_cancel=True)
        classification = {**run_classification(reply), **evidence(reply, ("delivery", "manifest", "usage"))}
        said = run_line(reply, f": {run_view(reply.data or {}).to_wire()['advice']}")
        return answer(SPECS["status"], reply, classification, said)

    async def output(self, ctx: Any, args: tools_table.Output) -> CallToolResult:
        spec, run_id, artifact = SPECS["output"], args.run_id, args.artifact
        reply = await self.run(lambda: self.client.output(run_id, args.tail_chars), stop_on_cancel=True)
        extra = evidence(reply, ("console", "artifacts", "manifest"))
        said = f"run {run_id}: " + "; ".join(reading_line(n, w) for n, w in extra.get("evidence", {}).items())
        if not reply.ok or artifact is None:
            return answer(spec, reply, extra, said)
        served = await self.run(lambda: artifact_text(reply, artifact)["artifact"], stop_on_cancel=True)
        if served.get("text") is None:  # asked for, not served: an error, never `text: null`
            return refused(str(served.get("kind") or "unavailable"),
                           f"artifact {artifact!r} of run {run_id}: {served.get('says')}",
                           {"run_id": run_id, "artifact": artifact}, reply.to_wire())
        text = served["text"]
        said += f"; artifact {artifact}: {len(text)} chars{' (truncated)' if served.get('truncated') else ''} " \
                "at data.artifact.text"
        return answer(spec, reply, extra, said, data={**(reply.data or {}), "artifact": served})

    async def list_runs(self, ctx: Any, args: tools_table.ListRuns) -> CallToolResult:
        reply = await self.run(lambda: self.client.list_runs(args.limit, args.status), stop_on_cancel=True)
        rows = (reply.data or {}).get("runs") or []
        more = " (more exist)" if (reply.data or {}).get("truncated") else ""
        return answer(SPECS["list_runs"], reply,
                      {"runs": [run_view(r).to_wire() for r in rows if isinstance(r, Mapping)]},
                      f"{runs(len(rows))}{more}")

    async def kill(self, ctx: Any, args: tools_table.OneRun) -> CallToolResult:
        reply = await self.run(lambda: self.client.kill(args.run_id), stop_on_cancel=False)
        note = {"note": "kill reports signal delivery, not the run's end: call wait to observe it"}
        action = (reply.data or {}).get("action")
        return answer(SPECS["kill"], reply, {**run_classification(reply), **note},
                      f"run {args.run_id}: {action}; call wait to observe its end")

    async def prune(self, ctx: Any, args: tools_table.Prune) -> CallToolResult:
        reply = await self.run(lambda: self.client.prune(args.older_than_days, args.dry_run), stop_on_cancel=False)
        data = reply.data or {}
        verb = "would remove" if args.dry_run else "removed"
        said = f"{verb} {runs(len(data.get('removed') or []))}; kept {len(data.get('kept') or [])}"
        return answer(SPECS["prune"], reply, {}, said)

    async def rm(self, ctx: Any, args: tools_table.Rm) -> CallToolResult:
        reply = await self.run(lambda: self.client.rm(args.run_ids, args.branches, args.force), stop_on_cancel=False)
        data = reply.data or {}
        return answer(SPECS["rm"], reply, {}, f"removed {runs(len(data.get('removed') or []))}")

    async def apply(self, ctx: Any, args: tools_table.Apply) -> CallToolResult:
        reply = await self.run(lambda: self.client.apply(args.run_id, args.cwd, args.leg), stop_on_cancel=False)
        files = (reply.data or {}).get("files") or []
        return answer(SPECS["apply"], reply, {}, f"run {args.run_id}: applied {len(files)} files to {args.cwd}")

    async def wait(self, ctx: Any, args: tools_table.Wait) -> CallToolResult:
        from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

        ids = list(dict.fromkeys(args.run_ids))
        token = progress_token_from_params(ctx.params) if ctx is not None else None
        async with anyio.create_task_group() as group:
            if token is not None:
                group.start_soon(self._progress, ctx, ids, args.max_wait)
            report = await self.run(lambda: self.client.wait(ids, args.max_wait, args.poll_interval),
                                    stop_on_cancel=True, background=True)
            group.cancel_scope.cancel()
        error = bad_ids(report) if report.reply.ok else None
        return answer(SPECS["wait"], report.reply, report.to_wire(), wait_line(report), error=error)

    async def _progress(self, ctx: Any, ids: list[str], window: float) -> None:
        """Every PROGRESS_EVERY seconds (the first at once): which ids have ended so far, from a
        snapshot (`li job wait --max-wait 0`, given at most PROGRESS_EVERY - 1 s, else the last
        message is sent again); progress counts seconds of the window."""
        from lionrun.adapters.contract_client import window_of

        total, began = window_of(window), time.monotonic()
        message = f"waiting on {runs(len(ids))}"
        while True:
            await ctx.session.report_progress(round(time.monotonic() - began, 3), total, message)
            await anyio.sleep(PROGRESS_EVERY)
            snapshot = None
            with anyio.move_on_after(PROGRESS_EVERY - 1):  # a slow snapshot never delays the next report
                snapshot = await self.run(lambda: self.client.call(["job", "wait", "--max-wait=0", "--", *ids]),
                                          stop_on_cancel=True)
            if snapshot is None:
                continue
            rows = [r for r in (snapshot.data or {}).get("runs") or [] if isinstance(r, Mapping)]
            ended = [f"{r.get('run_id')} {run_view(r).branch.value}" for r in rows if r.get("terminal") is True]
            message = (f"{len(ended)} of {len(ids)} ended" + (f": {', '.join(ended)}" if ended else "")
                       if snapshot.ok else f"snapshot: {snapshot.verdict.value}")


# -- the server -----------------------------------------------------------------------------------

class LiServer(Server[Any]):
    """The low-level SDK server, advertising only what is behind it: tools (whose list changes
    once, when a handshake registers the verbs: tools/list_changed is sent then)."""

    def create_initialization_options(self, notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), *args, **kwargs)


def build_server(client: ContractClient) -> tuple[LiServer, Tools]:
    """Handshake once; register the verbs only when the version is understood (C1)."""
    from lionrun.entrypoints.version import version

    hello = client.handshake()
    tools = Tools(client)
    tools.verbs_registered = hello.registered
    if not hello.registered:
        print(f"li mcp: verbs not registered: {hello.reason}", file=sys.stderr)

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=[
            Tool(name=spec.name, description=spec.description, input_schema=spec.input_schema(),
                 output_schema=spec.output_schema(), annotations=spec.annotations)
            for spec in tools.listed()])

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        return await tools.call(params.name, params.arguments, ctx)

    from mcp.server.subscriptions import ListenHandler

    server = LiServer("lionrun", version=version(), instructions=INSTRUCTIONS, on_list_tools=list_tools,
                      on_call_tool=call_tool, on_subscriptions_listen=ListenHandler(tools.bus))
    return server, tools


# -- stdio ----------------------------------------------------------------------------------------

async def serve_stdio(server: LiServer, tools: Tools) -> None:
    """MCP over stdin/stdout: the SDK's transport, except that a line that is not JSON-RPC is
    answered with JSON-RPC's error (-32700 parse error, -32600 invalid request), never dropped."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        answered = answering_bad_lines(read_stream, write_stream)
        try:
            await server.run(answered, write_stream, server.create_initialization_options())
        finally:
            tools.stop_all()


def answering_bad_lines(read_stream: Any, write_stream: Any) -> Any:
    """The read stream with each undecodable line answered on the write stream and left out."""
    from mcp.shared.message import SessionMessage
    from mcp.types import ErrorData, JSONRPCError

    class Answering:
        def __aiter__(self) -> Any:
            return self

        async def __anext__(self) -> Any:
            while True:
                item = await read_stream.__anext__()
                if not isinstance(item, Exception):
                    return item
                code, message = bad_line(item)
                reply = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))
                await write_stream.send(SessionMessage(reply))

        async def receive(self) -> Any:
            return await self.__anext__()

        async def aclose(self) -> None:
            await read_stream.aclose()

        def __getattr__(self, name: str) -> Any:
            return getattr(read_stream, name)

        async def __aenter__(self) -> Any:
            return self

        async def __aexit__(self, *exc: object) -> None:
            await self.aclose()

    return Answering()


def bad_line(exc: Exception) -> tuple[int, str]:
    """-32700 for text that is not JSON, -32600 for JSON that is no JSON-RPC message."""
    from mcp.types import INVALID_REQUEST, PARSE_ERROR

    said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "json_invalid" in str(exc) or "Invalid JSON" in str(exc):
        return PARSE_ERROR, f"Parse error: {said}"
    return INVALID_REQUEST, f"Invalid Request: {said}"


# -- start ----------------------------------------------------------------------------------------

def resolve_li(explicit: str | None, env: Mapping[str, str]) -> str | None:
    """`--li`, else `LI_BIN`, else `li` on PATH, made absolute once, at start-up (D1)."""
    for candidate in (explicit, env.get("LI_BIN"), shutil.which("li")):
        if candidate:
            return os.path.abspath(candidate)
    return None


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="li mcp", description="Serve li's tools over MCP on stdio, or Streamable HTTP on 127.0.0.1."
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
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP on 127.0.0.1 (not stdio)")
    parser.add_argument("--port", type=int, default=0, help="the HTTP port (with --http; default: a free one)")
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
    if options.port and not options.http:
        print("li mcp: --port needs --http (stdio has no port)", file=sys.stderr)
        return 2
    if not 0 <= options.port <= 65535:
        print(f"li mcp: --port must be 0-65535, not {options.port}", file=sys.stderr)
        return 2
    li = resolve_li(options.li, os.environ)
    if li is None or not (os.path.isfile(li) and os.access(li, os.X_OK)):
        print(f"li mcp: no executable li at {li!r}; pass --li or set LI_BIN", file=sys.stderr)
        return EXIT_CONFIG
    policy = UnresolvedPolicy(options.max_attempts, options.backoff, 2.0, options.backoff_max)
    server, tools = build_server(ContractClient(li, policy=policy))
    if options.http:
        from lionrun.entrypoints.mcp_http import serve_http

        return int(serve_http(server, tools, options.port))
    if _isatty(sys.stdin):  # a person, not an MCP host: say what this is rather than wait silently
        print("li mcp: speaking MCP (JSON-RPC) on stdio for an MCP client; this is no prompt for a person "
              "— Ctrl-C to quit", file=sys.stderr, flush=True)
    try:
        anyio.run(serve_stdio, server, tools)
    except KeyboardInterrupt:
        pass
    finally:
        tools.stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
