"""The contract client: drives `li` by absolute path and holds every consumer obligation of ADR-0106."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from lionrun.adapters.contract_client.argv import option_words, present, repeated_words, verb_words
from lionrun.adapters.contract_client.envelope import Reply, Verdict, classify, parse_one_object
from lionrun.adapters.contract_client.reading import RunView, run_view
from lionrun.adapters.contract_client.transport import Runner, SubprocessRunner
from lionrun.adapters.contract_client.unresolved import (
    Standing,
    UnresolvedLedger,
    UnresolvedPolicy,
    WaitReport,
    bucket_of,
    is_finished,
)
from lionrun.domain.contract import CONTRACT_VERSION
from lionrun.domain.observation import MAX_WAIT_BOUNDS, MAX_WAIT_DEFAULT, clamp


class SurfaceState(StrEnum):
    UNREGISTERED = "unregistered"
    TRUSTED = "trusted"
    DEGRADED = "degraded"


@dataclass(frozen=True)
class Handshake:
    """The start-up handshake: whether verbs may be registered, and which build answered."""

    reply: Reply
    registered: bool
    reason: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {**self.reply.to_wire(), "registered": self.registered, "reason": self.reason}


#: Seconds the client allows a call beyond the wait window it asked for.
CALL_MARGIN = 30.0


class ContractClient:
    """Drives `li` by absolute path and holds every consumer obligation of ADR-0106."""

    def __init__(
        self,
        li_path: str,
        *,
        runner: Runner | None = None,
        understood: frozenset[int] = frozenset({CONTRACT_VERSION}),
        policy: UnresolvedPolicy | None = None,
        call_timeout: float = CALL_MARGIN,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not os.path.isabs(li_path):
            raise ValueError(f"li must be named by absolute path, not {li_path!r} (D1)")
        self.li_path = li_path
        self.understood = understood
        self.call_timeout = call_timeout
        self.ledger = UnresolvedLedger(policy or UnresolvedPolicy(), clock)
        self._runner: Runner = runner or SubprocessRunner()
        self._sleep = sleep
        # MCP tools call from parallel worker threads: state and why change together, under a lock.
        self._surface_lock = threading.Lock()
        self._state = SurfaceState.UNREGISTERED
        self._why: str | None = "no handshake yet"

    @property
    def state(self) -> SurfaceState:
        with self._surface_lock:
            return self._state

    # -- handshake and trust (C1) --

    def handshake(self) -> Handshake:
        """Run `li handshake`; only an understood version registers (or re-trusts) the surface."""
        reply = self._invoke(["handshake"])
        reason = self._handshake_refusal(reply)
        with self._surface_lock:
            if reason is None:
                self._state, self._why = SurfaceState.TRUSTED, None
                return Handshake(reply, True)
            was_trusted = self._state is not SurfaceState.UNREGISTERED
            self._state = SurfaceState.DEGRADED if was_trusted else SurfaceState.UNREGISTERED
            self._why = reason
        return Handshake(replace(reply, data=None), False, reason)

    def _handshake_refusal(self, reply: Reply) -> str | None:
        if not reply.ok:
            return reply.diagnostic or f"handshake refused: {(reply.error or {}).get('message')}"
        assert reply.data is not None
        spoken = reply.data.get("contract_version")
        if spoken not in self.understood:
            return f"li speaks contract_version {spoken!r}; this client understands {sorted(self.understood)}"
        return None

    def _gate(self) -> Reply | None:
        """Verbs are answered only while the surface is trusted."""
        with self._surface_lock:
            state, why = self._state, self._why
        if state is SurfaceState.TRUSTED:
            return None
        verdict = Verdict.DEGRADED if state is SurfaceState.DEGRADED else Verdict.UNREGISTERED
        return Reply(verdict, diagnostic=f"surface {state.value}: {why}; call handshake")

    def call(
        self, args: Sequence[str], *, timeout: float | None = None, stdin: str | None = None
    ) -> Reply:
        """Run one verb (`args` after `li`, without --machine) through the trust gate."""
        gated = self._gate()
        if gated is not None:
            return gated
        reply = self._invoke(args, timeout=timeout, stdin=stdin)
        if reply.verdict is Verdict.DEGRADED:
            with self._surface_lock:
                self._state, self._why = SurfaceState.DEGRADED, reply.diagnostic
        return reply

    def _invoke(
        self, args: Sequence[str], *, timeout: float | None = None, stdin: str | None = None
    ) -> Reply:
        cut = verb_words(args)
        argv = [self.li_path, *args[:cut], "--machine", *args[cut:]]
        done = self._runner(argv, timeout or self.call_timeout, stdin)
        return classify(done, self.understood)

    # -- submit (D5) --

    def submit_agent(self, prompt: str, model: str | None = None, **options: object) -> Reply:
        """`li agent --detach --prompt-file - [MODEL]`; options: label, cwd, timeout, notify,
        permission_mode, provider_args (a list: one `--provider-arg=ARG` each, as the CLI takes
        them), worktree (a flag), base, setup, idempotency_key (the same key answers the
        first run's handle again, `data.replayed` true; every submit method takes it).

        The prompt goes on li's stdin, never on its command line (where every local user could
        read it in /proc, and where the kernel caps one string at 128 KiB).
        """
        worktree = bool(options.pop("worktree", False))
        provider_args = repeated_words("provider_arg", options.pop("provider_args", None))
        after = repeated_words("after", options.pop("after", None))  # one --after per run
        head = ["agent", "--detach", *(["--worktree"] if worktree else []), *option_words(options),
                *provider_args, *after]
        return self.call([*head, "--prompt-file", "-", "--", *present(model)], stdin=prompt)

    def diff(self, run_id: str, leg: str | None = None) -> Reply:
        """`li job diff RUN_ID [--leg LEG]`: a --worktree run's changes, files and patch under D7
        wrappers (a run of several legs: each leg's under `legs`, or the one `leg` names)."""
        return self.call(["job", "diff", *(["--leg", leg] if leg is not None else []), "--", run_id])

    def reply(self, run_id: str, prompt: str, idempotency_key: str | None = None) -> Reply:
        """`li job reply --detach RUN_ID`: a new run resuming the agent's session; the prompt on stdin."""
        key = option_words({"idempotency_key": idempotency_key})
        return self.call(["job", "reply", "--detach", *key, "--prompt-file", "-", "--", run_id], stdin=prompt)

    def submit_flow(self, spec_path: str, **options: object) -> Reply:
        """`li orchestrate flow --detach SPEC_PATH`; options: label, cwd, timeout, idempotency_key,
        after (a list of RUN[:ok|:fail|:any]), priority."""
        after = repeated_words("after", options.pop("after", None))
        return self.call(
            ["orchestrate", "flow", "--detach", *option_words(options), *after, "--", spec_path]
        )

    def submit_flow_text(self, spec: str, **options: object) -> Reply:
        """`li orchestrate flow --detach -`: the spec itself (YAML or JSON) on li's stdin, never on
        its command line; options as `submit_flow`'s. The way for a program whose `li` cannot read
        its paths (a run's confined work, whose `li` the run's runner acts for)."""
        after = repeated_words("after", options.pop("after", None))
        return self.call(["orchestrate", "flow", "--detach", *option_words(options), *after, "--", "-"], stdin=spec)

    def submit_fanout(self, prompt: str, model: str | None = None, **options: object) -> Reply:
        """`li orchestrate fanout --detach --prompt-file - [MODEL]`; options: legs, models, synthesize, label,
        idempotency_key.

        The prompt goes on li's stdin, never on its command line.
        """
        after = repeated_words("after", options.pop("after", None))
        head = ["orchestrate", "fanout", "--detach", *option_words(options), *after]
        return self.call([*head, "--prompt-file", "-", "--", *present(model)], stdin=prompt)

    # -- observation (D6, D10) --

    def status(self, run_id: str) -> Reply:
        reply = self.call(["job", "status", "--", run_id])
        if _settles(reply):
            self.ledger.forget(run_id)
        return reply

    def output(self, run_id: str, tail_chars: int | None = None) -> Reply:
        return self.call(["job", "output", *option_words({"tail_chars": tail_chars}), "--", run_id])

    def artifact_text(self, run_id: str, name: str) -> tuple[Reply, dict[str, Any]]:
        """One artifact's text, checked: the `output` reply and `{name, text, says?, kind?,
        sha256_verified?, truncated?}`. `text` is null unless the surface answered `ok`, the artifact
        is a listed regular file, and its bytes still have the sha256 li listed; `says` then tells
        why and, when li answered, `kind` names it (see `artifacts.artifact_of`)."""
        from lionrun.adapters.contract_client.artifacts import artifact_of

        reply = self.output(run_id)
        if not reply.ok:
            return reply, {"name": name, "text": None, "says": f"no output answer ({reply.verdict.value})"}
        return reply, artifact_of(reply, name)

    def prune(self, older_than: float | None = None, dry_run: bool = False) -> Reply:
        """`li job prune [--older-than DAYS] [--dry-run]`: only runs that recorded an end are removed."""
        return self.call(["job", "prune", *option_words({"older_than": older_than}),
                          *(["--dry-run"] if dry_run else [])])

    def rm(self, run_ids: Sequence[str], branches: bool = False, force: bool = False) -> Reply:
        """`li job rm [--branches] [--force] RUN_ID...`: only runs that recorded an end; all or none."""
        flags = [*(["--branches"] if branches else []), *(["--force"] if force else [])]
        return self.call(["job", "rm", *flags, "--", *run_ids])

    def apply(self, run_id: str, cwd: str, leg: str | None = None) -> Reply:
        """`li job apply --cwd CWD [--leg LEG] RUN_ID`: a --worktree run's change into CWD's working
        tree, uncommitted (refused when it does not apply or touches uncommitted changes)."""
        return self.call(["job", "apply", *option_words({"cwd": cwd, "leg": leg}), "--", run_id])

    def list_runs(self, limit: int | None = None, status: str | None = None) -> Reply:
        return self.call(["job", "list", *option_words({"limit": limit, "status": status})])

    def kill(self, run_id: str) -> Reply:
        return self.call(["job", "kill", "--", run_id])

    # --- approvals: a run under --permission-mode ask waits for these answers ----------

    def approvals(self) -> Reply:
        """`li job approvals`: every open permission request across runs (`data.approvals`)."""
        return self.call(["job", "approvals"])

    def approve(self, run_id: str, request: str | None = None) -> Reply:
        """`li job approve RUN [REQUEST]`: allow one open request (None: every open one of the run)."""
        return self.call(["job", "approve", "--", run_id, *([request] if request else [])])

    def deny(self, run_id: str, request: str | None = None, reason: str | None = None) -> Reply:
        """`li job deny RUN [REQUEST] [--reason TEXT]`: deny it; the agent is told `reason`."""
        return self.call(["job", "deny", *option_words({"reason": reason}), "--", run_id,
                          *([request] if request else [])])

    def wait(
        self, run_ids: Sequence[str], max_wait: float = 60.0, poll_interval: float = 1.0
    ) -> WaitReport:
        """One bounded wait, paced by the policy's backoff, with each id's standing recorded."""
        window = window_of(max_wait)  # bounds our own sleep and call as li bounds its window
        delay = min(self.ledger.delay_before(run_ids), window)
        if delay > 0:
            self._sleep(delay)
        bounds = option_words({"max_wait": max_wait, "poll_interval": poll_interval})
        reply = self.call(
            ["job", "wait", *bounds, "--", *run_ids], timeout=window + self.call_timeout
        )
        return self._classify_wait(reply) if reply.ok else WaitReport(reply)

    def _classify_wait(self, reply: Reply) -> WaitReport:
        data = reply.data or {}
        entries = [e for e in data.get("runs") or [] if isinstance(e, Mapping)]
        expired = data.get("timed_out") is True
        standings, errors = {}, {}
        for entry in entries:
            run_id = str(entry.get("run_id"))
            standings[run_id] = self.ledger.observe(run_id, bucket_of(run_id, entry, data), expired)
            if entry.get("error") is not None:
                errors[run_id] = entry.get("error")
        return WaitReport(reply, tuple(run_view(e) for e in entries), standings, errors)

    def settle(
        self, run_ids: Sequence[str], max_wait: float = 60.0, poll_interval: float = 1.0
    ) -> WaitReport:
        """Wait until every id ended, errored or was abandoned; a surface fault stops at once.

        An errored id is not waited on again, but it leaves the report unsettled (`errors`)."""
        wanted = list(dict.fromkeys(run_ids))
        views: dict[str, RunView] = {}
        standings: dict[str, Standing] = {}
        errors: dict[str, Any] = {}
        remaining, reply = wanted, Reply(Verdict.OK, {})
        for _ in range(4 * self.ledger.policy.max_attempts + 4):  # a bound even if li misbehaves
            report = self.wait(remaining, max_wait, poll_interval)
            reply = report.reply
            if not reply.ok:
                break
            views.update((str(view.run_id), view) for view in report.runs)
            standings.update(report.standings)
            errors.update(report.errors)
            remaining = [r for r in remaining if not is_finished(standings.get(r))]
            if not remaining:
                break
        picked = [r for r in wanted if r in views]
        return WaitReport(
            reply, tuple(views[r] for r in picked), {r: standings[r] for r in picked}, errors
        )

    # -- notices (C7) --

    def confirm_notice(self, notice: Mapping[str, Any] | str) -> Reply:
        """A notice is a prompt to read state: take only its run id and read the status."""
        payload = parse_one_object(notice, "notice") if isinstance(notice, str) else notice
        if isinstance(payload, str):
            return Reply(Verdict.CONTRACT_VIOLATION, diagnostic=payload)
        run_id = payload.get("run_id") if isinstance(payload, Mapping) else None
        if not isinstance(run_id, str):
            return Reply(Verdict.CONTRACT_VIOLATION, diagnostic="notice carries no run_id")
        return self.status(run_id)


def _settles(reply: Reply) -> bool:
    """A status answer that leaves nothing to count: the run ended, or li knows no such run."""
    if reply.ok:
        return (reply.data or {}).get("terminal") is True
    return reply.verdict is Verdict.REFUSED and (reply.error or {}).get("kind") == "not_found"


def window_of(max_wait: object) -> float:
    """The wait window li will actually use: clamped as D10 clamps it (NaN and below 0 to 0)."""
    return clamp(max_wait, MAX_WAIT_BOUNDS, MAX_WAIT_DEFAULT).effective
