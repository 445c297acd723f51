"""`li mcp`'s tools as one table: each tool's closed argument model, description, safety hints,
the contract/v1 schema its data follows, and the CLI flags li's refusals may name for its
arguments. A new tool is one more row (and one method on `mcp_server.Tools`)."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Annotated, Any, Literal

from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

#: The default window of one `wait`: with li's start-up and the answer's trip it fits a client
#: that gives a tool call 60 s (the MCP Inspector's default, and many hosts').
WAIT_DEFAULT = 40.0
#: The console tail `output` returns unless `tail_chars` says otherwise (li's own default is 20,000;
#: the answer travels twice, as text and as structured content).
TAIL_DEFAULT = 8000

RunId = Annotated[str, Field(min_length=1, description="a run id as submit returned it")]


class Arguments(BaseModel):
    """A tool's arguments: a closed object (an unknown name is refused, never dropped)."""

    model_config = ConfigDict(extra="forbid")


class NoArguments(Arguments):
    pass


def after_field() -> Any:
    return Field(None, description="run ids this run waits for, each `RUN`, `RUN:ok`, `RUN:fail` or "
                 "`RUN:any` (status `waiting` until they ended so; else it ends cancelled/dependency_failed "
                 "without starting)")


def priority_field() -> Any:
    return Field(None, description="its place within its queue: higher starts first")


class Steering(Arguments):
    """What every submit tool takes to steer its run: budgets, retries, approvals."""

    max_tokens: Annotated[int, Field(ge=1)] | None = Field(
        None, description="stop the run (failed, budget_exceeded) once its agents reported this many tokens")
    max_cost_usd: Annotated[float, Field(gt=0)] | None = Field(
        None, description="stop the run (failed, budget_exceeded) once its agents reported this cost in US "
        "dollars (claude only: the others report no price, and li refuses it for them)")
    retry: Annotated[int, Field(ge=0)] | None = Field(
        None, description="try the work again, under the same run id, up to this many more times when it ends "
        "with a retry_on reason (data.attempts records each attempt)")
    retry_on: list[str] | None = Field(
        None, description="the reason codes retried (with retry; default: provider_rate_limited, "
        "provider_overloaded, provider_unreachable; never a failure of the work itself or a budget)")
    retry_backoff_seconds: Annotated[float, Field(gt=0)] | None = Field(
        None, description="the wait before the second attempt (with retry; doubled for each later one, capped "
        "at 300, jittered; a vendor's reset time wins; default 5)")
    approval_timeout_seconds: Annotated[float, Field(gt=0)] | None = Field(
        None, description="with permission_mode `ask`: a request nobody answers (tools approvals, approve, "
        "deny) is denied after this long (default 600)")


STEERING_FLAGS = {"max-tokens": "max_tokens", "max-cost": "max_cost_usd", "retry": "retry",
                  "retry-on": "retry_on", "retry-backoff": "retry_backoff_seconds",
                  "approval-timeout": "approval_timeout_seconds"}


def key_field() -> Any:
    return Field(None, description="submit at most once per key: the same submit again answers the first "
                 "run (data.replayed true); another request under the key is `conflict`")


class SubmitAgentOwn(Arguments):
    prompt: str = Field(description="the work: the agent's prompt, or for model `sh` a shell script")
    model: str = Field(description="who runs the prompt, always named: claude, codex, gemini, a "
                       "provider/model such as `claude/opus`, or `sh` (the prompt runs as a shell script)")
    label: str | None = None
    cwd: str | None = Field(None, description="absolute working folder")
    timeout_seconds: Annotated[float, Field(gt=0)] | None = Field(None, description="kill the run after this long")
    worktree: bool = Field(False, description="work in a new git worktree on branch li/<run_id>")
    base: str | None = Field(None, description="the commit the worktree starts from")
    setup: str | None = Field(None, description="a shell command run in the new worktree first")
    permission_mode: Literal["read-only", "edits", "full", "ask"] | None = Field(
        None, description="agent CLIs only; default: the CLI's own. `ask` (claude only): each tool use "
        "the CLI would ask about waits for a person's answer (status waiting_approval; tools approvals, "
        "approve, deny)")
    provider_args: list[str] | None = Field(None, description="passed verbatim to the agent CLI")
    notify: str | None = Field(None, description="an argv template run when the run ends (no shell)")
    after: list[str] | None = after_field()
    priority: int | None = priority_field()
    idempotency_key: str | None = key_field()


class SubmitFlowOwn(Arguments):
    spec: str | None = Field(None, description="the flow's YAML/JSON text (give this or spec_path)")
    spec_path: str | None = Field(None, description="absolute path of a YAML/JSON flow file")
    label: str | None = None
    cwd: str | None = None
    timeout_seconds: Annotated[float, Field(gt=0)] | None = None
    after: list[str] | None = after_field()
    priority: int | None = priority_field()
    idempotency_key: str | None = key_field()


class SubmitFanoutOwn(Arguments):
    prompt: str
    model: str | None = Field(None, description="one model for every leg (give this or `models`)")
    models: list[str] | None = Field(None, description="one leg per model (give this or `model`)")
    legs: Annotated[int, Field(ge=1)] | None = None
    synthesize: str | None = Field(None, description="the model of a synthesis leg over the others")
    label: str | None = None
    cwd: str | None = None
    timeout_seconds: Annotated[float, Field(gt=0)] | None = None
    after: list[str] | None = after_field()
    priority: int | None = priority_field()
    idempotency_key: str | None = key_field()


# The submit tools: their own arguments first, then what steers the run (a refusal lists them so).
class SubmitAgent(Steering, SubmitAgentOwn):
    pass


class SubmitFlow(Steering, SubmitFlowOwn):
    pass


class SubmitFanout(Steering, SubmitFanoutOwn):
    pass


class OneRun(Arguments):
    run_id: RunId


class Output(Arguments):
    run_id: RunId
    tail_chars: Annotated[int, Field(ge=1)] = Field(
        TAIL_DEFAULT, description=f"the console's last characters to return (default {TAIL_DEFAULT}); "
        "data.console.truncated says when the console is longer")
    artifact: str | None = Field(None, description="a name from data.artifacts: its text at data.artifact.text")


class ListRuns(Arguments):
    limit: Annotated[int, Field(ge=1)] | None = None
    status: str | None = None


class Prune(Arguments):
    older_than_days: Annotated[float, Field(ge=0)] = Field(
        description="only runs that ended at least this many days ago (0: every ended run)")
    dry_run: bool = Field(False, description="list what would be removed, remove nothing")


class Wait(Arguments):
    run_ids: Annotated[list[RunId], Field(min_length=1)]
    max_wait: float = Field(
        WAIT_DEFAULT, description=f"seconds to wait at most (default {WAIT_DEFAULT:g}, fits a 60 s client "
        "timeout; 0 = a snapshot; li clamps it to 0..600)")
    poll_interval: Annotated[float, Field(gt=0)] = 1.0


class Diff(Arguments):
    run_id: RunId
    leg: str | None = Field(None, description="one leg of a run of several worktrees")


class Rm(Arguments):
    run_ids: Annotated[list[RunId], Field(min_length=1)]
    branches: bool = Field(False, description="also delete each run's branch li/<run_id> (its commits)")
    force: bool = Field(False, description="also an ended run whose notice is still being delivered")


class Apply(Arguments):
    run_id: RunId
    cwd: str = Field(description="absolute path of the git worktree to apply the change to")
    leg: str | None = Field(None, description="the leg whose change to apply, of a run of several")


class Approve(Arguments):
    run_id: RunId
    request: str | None = Field(None, description="the request id (a1, a2, ... as `approvals` lists it); "
                                "default: every open request of the run")


class Deny(Approve):
    reason: str | None = Field(None, max_length=2000, description="what the agent is told (default: denied "
                               "by a person through li)")


class ReplyTo(Arguments):
    run_id: RunId
    prompt: str
    idempotency_key: str | None = key_field()


READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
SUBMIT = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)
# Tools that stop or remove something: once done, doing it again changes nothing (kill, rm), or
# may change more (prune: more runs have aged; apply: the change is applied again).
DESTROY_ONCE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
DESTROY = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: `name` is also the method of `mcp_server.Tools` that answers it."""

    name: str
    arguments: type[Arguments]
    contract: str  # the contract/v1 schema (file stem) its `data` follows
    annotations: ToolAnnotations
    description: str
    flags: Mapping[str, str] = field(default_factory=dict)  # CLI flag (no dashes) -> argument
    blocking: bool = False  # counted against the bound of blocking calls, not of quick ones

    def input_schema(self) -> dict[str, Any]:
        return input_schema(self.arguments)

    def output_schema(self) -> dict[str, Any]:
        return output_schema(self.contract)


SUBMIT_FLAGS = {"timeout": "timeout_seconds", "prompt-file": "prompt", "label": "label", "cwd": "cwd",
                "after": "after", "priority": "priority", "idempotency-key": "idempotency_key", **STEERING_FLAGS}
#: Answering a request changes the run (not read-only) but removes nothing (not destructive); a
#: second answer to the same request is refused (`conflict`), so not idempotent either.
ANSWER = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("handshake", NoArguments, "handshake", READ, (
        "Ask `li` which contract it speaks. Call it when another tool reports surface `degraded` "
        "(or when only this tool is listed): an understood version trusts the surface again and "
        "registers the other tools (the server then sends tools/list_changed)."
    )),
    ToolSpec("submit_agent", SubmitAgent, "submit", SUBMIT, (
        "Start one detached run and return its run_id at once (the work is not done yet). "
        "`model` is required: claude, codex, gemini, `claude/opus`, or `sh`, which runs the prompt "
        "as a shell script (env LI_ARTIFACTS_DIR: write result files there; LI_RUN_ID). "
        "worktree=true: work in a new git worktree on branch li/<run_id> (from base, after setup); "
        "then `diff` shows the change. permission_mode (read-only, edits, full; agent CLIs only, "
        "default: the CLI's own), provider_args (passed verbatim to the agent CLI) and notify (an argv "
        "template run when the run ends, no shell). permission_mode `ask` (claude): each tool use it "
        "would ask about waits (status waiting_approval) until answered with `approve` or `deny`. "
        "max_tokens/max_cost_usd: a budget (failed, budget_exceeded when crossed); retry, retry_on, "
        "retry_backoff_seconds: retries by policy under the same run id. "
        "Then call `wait` with the run_id, then `output`."
    ), {**SUBMIT_FLAGS, "worktree": "worktree", "base": "base", "setup": "setup",
        "permission-mode": "permission_mode", "provider-arg": "provider_args", "notify": "notify"}),
    ToolSpec("submit_flow", SubmitFlow, "submit", SUBMIT, (
        "Start a declared flow as one detached run; returns its run_id at once. Give the DAG of "
        "steps either as spec (its YAML/JSON text) or as spec_path (absolute path of a YAML/JSON "
        "file), not both; inside a run whose store is hidden, spec only. Then call `wait`, then "
        "`output`."
    ), SUBMIT_FLAGS),
    ToolSpec("submit_fanout", SubmitFanout, "submit", SUBMIT, (
        "Start N parallel legs of one prompt as one detached run; returns its run_id at once. Name "
        "who runs it: `model` (every leg; `sh` runs the prompt as a shell script) or `models` (one "
        "leg per model); optionally a synthesis leg. Then `wait`, then `output`."
    ), {**SUBMIT_FLAGS, "legs": "legs", "models": "models", "synthesize": "synthesize"}),
    ToolSpec("status", OneRun, "status", READ, (
        "Read one run's recorded state now. `branch` says what to do: not_ended -> call wait; "
        "succeeded/failed/cancelled -> read output; indeterminate -> it ended but its result "
        "cannot be established: do not retry automatically, tell a human."
    )),
    ToolSpec("output", Output, "output", READ, (
        f"Read a run's console tail (`tail_chars`, default {TAIL_DEFAULT}; data.console.truncated says "
        "whether there is more), artifact listing and manifest; li's own lines about the run are apart, "
        "at data.li_log (same tail). Evidence `none` means there definitively is none; `unknown` means "
        "it could not be read. Pass `artifact` (a name from data.artifacts) to also get that artifact's "
        "text at data.artifact.text; a name the listing lacks (not_found), or an artifact that cannot "
        "be served (not a regular file, unreadable, changed since listed), is an error."
    ), {"tail-chars": "tail_chars", "artifact": "artifact"}),
    ToolSpec("list_runs", ListRuns, "list", READ,
             "List recent runs, newest first (`truncated` says whether more exist).",
             {"limit": "limit", "status": "status"}),
    ToolSpec("kill", OneRun, "kill", DESTROY_ONCE, (
        "Signal a run's process group (destructive: the run's work stops). Reports what was done "
        "(signalled, requested, already_terminal, no_process), not that the run ended: call `wait` "
        "afterwards to observe its end."
    )),
    ToolSpec("wait", Wait, "wait", READ, (
        f"Observe runs for up to max_wait seconds (default {WAIT_DEFAULT:g}: fits a 60 s client timeout; "
        "0 = snapshot) and return when every id has ended or cannot progress. With a progressToken, "
        "progress is sent every few seconds with what has ended so far; a cancel stops the wait at once. "
        "Expiry is not an error: call wait again while ids are pending. "
        "`stopped_without_end`: the run's process is gone but no end was recorded - it will not "
        "finish on its own; `unresolved_spawn`: the run's start was never recorded. This server "
        "retries those with backoff and, after its attempt limit, lists them in `abandoned`: stop "
        "waiting on abandoned ids and tell a human. Done when classification.settled is true. An id li "
        "knows no run by makes the answer an error (not_found, as every tool answers a bad id) while "
        "the others are still reported; classification.waiting_on lists the ids worth another wait."
    ), {"max-wait": "max_wait", "poll-interval": "poll_interval"}, blocking=True),
    ToolSpec("prune", Prune, "prune", DESTROY, (
        "Remove ended runs' folders (destructive). Scoped, never everything by default: "
        "older_than_days is required (0 = every ended run). Only runs that recorded an end are "
        "removed; a run still going, or whose end is unknown, is kept and says why. dry_run: say "
        "what would go, remove nothing."
    ), {"older-than": "older_than_days", "dry-run": "dry_run"}),
    ToolSpec("rm", Rm, "rm", DESTROY_ONCE, (
        "Remove the named runs' folders (destructive; with branches=true their branches li/<run_id> "
        "too). Each must have recorded an end: a run still going is refused (kill it, wait, then rm); "
        "nothing is removed unless every named run can be."
    ), {"branches": "branches", "force": "force"}),
    ToolSpec("apply", Apply, "apply", DESTROY, (
        "Apply a worktree=true run's change to the working tree of the git worktree at `cwd`, "
        "uncommitted (destructive: it writes files there). Refused when it does not apply or touches "
        "a file with uncommitted changes. A run of several legs needs `leg`. See `diff` first."
    ), {"cwd": "cwd", "leg": "leg"}),
    ToolSpec("diff", Diff, "diff", READ, (
        "The changes a run submitted with worktree=true committed on its branch li/<run_id>, against "
        "the commit its worktree started from: files and the patch, each with `available` (false with "
        "a reason when they cannot be read, never an empty patch). A run of several legs has a worktree "
        "per leg (branch li/<run_id>.<leg>): each leg's change is under `legs`, or pass `leg` for one."
    ), {"leg": "leg"}),
    ToolSpec("approvals", NoArguments, "approvals", READ, (
        "List the permission requests waiting for an answer, across runs (runs submitted with "
        "permission_mode `ask` read status waiting_approval while one is open): each with run_id, id, "
        "tool and input. Answer each with `approve` or `deny`; one nobody answers is denied after the "
        "run's approval_timeout_seconds."
    )),
    ToolSpec("approve", Approve, "approve", ANSWER, (
        "Allow a run's open permission request (`request`, as `approvals` lists it; without it every "
        "open request of the run): the agent's tool use goes ahead. Answers the requests answered; a "
        "request answered already is `conflict`, a run with none open `not_found`."
    ), {"request": "request"}),
    ToolSpec("deny", Deny, "deny", ANSWER, (
        "Deny a run's open permission request (`request`, as `approvals` lists it; without it every "
        "open request of the run): the agent is told `reason` and the tool never runs. A request "
        "answered already is `conflict`, a run with none open `not_found`."
    ), {"request": "request", "reason": "reason"}),
    ToolSpec("reply", ReplyTo, "submit", SUBMIT, (
        "Continue a finished agent run's conversation: a new detached run resuming the agent CLI's "
        "own session, in the same worktree and branch; returns the new run_id (refused for sh runs "
        "and runs whose stream carried no session id). Then `wait`, then `output`."
    ), {"prompt-file": "prompt"}),
)

SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}
VERBS = tuple(spec.name for spec in TOOLS if spec.name != "handshake")


# -- schemas --------------------------------------------------------------------------------------

def input_schema(model: type[Arguments]) -> dict[str, Any]:
    """The closed JSON Schema of a tool's arguments (required ones marked)."""
    schema = model.model_json_schema()
    schema["additionalProperties"] = False
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    return schema


@cache
def contract_schema(stem: str) -> dict[str, Any]:
    """One published contract/v1 schema, read from the package (it ships in the wheel:
    `adapters/contract_client/contract_v1` is contract/v1 itself, copied into a wheel)."""
    folder = resources.files("lionrun.adapters.contract_client") / "contract_v1"
    loaded: dict[str, Any] = json.loads((folder / f"{stem}.json").read_text(encoding="utf-8"))
    return loaded


SURFACES = ["ok", "refused", "degraded", "unregistered", "contract_violation", "environment_fault",
            "transport_fault"]


@cache
def output_schema(stem: str) -> dict[str, Any]:
    """`{surface, data, error, classification}` with `data` the verb's contract/v1 schema and
    `error` the envelope's ErrorBody (their $defs hoisted to the top, where the $refs point)."""
    verb, envelope = contract_schema(stem), contract_schema("envelope")
    root = {k: v for k, v in verb.items() if k not in ("$defs", "$schema", "$id")}
    name = str(root.get("title") or stem)
    defs = {**envelope.get("$defs", {}), **verb.get("$defs", {}), name: root}
    return {
        "type": "object",
        "properties": {
            "surface": {"type": "string", "enum": SURFACES,
                        "description": "only `ok` carries data; the last five are faults of this surface"},
            "data": _nullable(name),
            "error": _nullable("ErrorBody"),
            "classification": {"type": "object", "additionalProperties": True},
        },
        "required": ["surface", "data", "error", "classification"],
        "$defs": defs,
    }


def _nullable(ref: str) -> dict[str, Any]:
    return {"anyOf": [{"$ref": f"#/$defs/{ref}"}, {"type": "null"}]}


# -- arguments ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Refusal:
    message: str
    detail: dict[str, Any]


def parse_arguments(spec: ToolSpec, given: Mapping[str, Any] | None) -> Arguments | Refusal:
    """The arguments as the tool's model, or one line naming what is wrong: an unknown name with the
    accepted ones and the nearest, else pydantic's first complaint in li's words."""
    from lionrun.domain.written import one_line

    given = dict(given or {})
    accepted = list(spec.arguments.model_fields)
    alias = {word: meant for word, meant in ALIASES.items() if meant in accepted}
    unknown = [name for name in given if name not in spec.arguments.model_fields]
    if unknown:
        nearest = {name: alias.get(name) or _closest(name, accepted) for name in unknown}
        said = "; ".join(f"`{name}` is not an argument of {spec.name}"
                         + (f" (did you mean `{near}`?)" if near else "") for name, near in nearest.items())
        takes = ", ".join(accepted) if accepted else "no arguments"
        return Refusal(f"{said}; it takes: {takes}",
                       {"unknown": unknown, "accepted": accepted, "nearest": nearest})
    try:
        return spec.arguments.model_validate(given)
    except ValidationError as exc:
        refusal = one_line(exc, f"{spec.name}'s arguments")
        return Refusal(refusal.message, dict(refusal.detail or {}))


def _closest(name: str, among: list[str]) -> str | None:
    found = difflib.get_close_matches(name, among, n=1, cutoff=0.5)
    return found[0] if found else None


#: Names a caller may mean for an argument that difflib would not find.
ALIASES = {"provider": "model", "agent": "model", "timeout": "timeout_seconds", "id": "run_id",
           "run": "run_id", "ids": "run_ids", "timeout_s": "timeout_seconds"}

FLAG = re.compile(r"`?--([a-z][a-z0-9-]*)(?:[ =]([A-Z_]+))?`?")


def in_tool_words(spec: ToolSpec, message: str) -> str:
    """li's refusal with the CLI flags it names written as the tool's arguments
    (`--timeout` -> `timeout_seconds`); flags the tool has no argument for stay as they are."""

    def swap(match: re.Match[str]) -> str:
        argument = spec.flags.get(match.group(1))
        return f"`{argument}`" if argument else match.group(0)

    return FLAG.sub(swap, message)


def unknown_tool(name: str, listed: list[str]) -> str:
    near = difflib.get_close_matches(name, listed, n=1, cutoff=0.5)
    return (f"no tool named {name!r}" + (f" (did you mean `{near[0]}`?)" if near else "")
            + f"; tools: {', '.join(listed)}")
