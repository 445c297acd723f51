"""The consumer side of the machine-result contract: runs `li` by absolute path and classifies every answer."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol

from domain.contract import CONTRACT_VERSION, EXIT_CONFIG, is_well_formed
from domain.observation import MAX_WAIT_BOUNDS, MAX_WAIT_DEFAULT, clamp

# --- transport: one subprocess call, swappable so tests can hand-write its result ---------------


@dataclass(frozen=True)
class Completed:
    """What one invocation of `li` produced, before anything is parsed."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    launch_error: str | None = None
    timed_out: bool = False


class Runner(Protocol):
    """Runs an argv (absolute executable first) and reports what came back; never raises."""

    def __call__(
        self, argv: Sequence[str], timeout: float, stdin: str | None = None
    ) -> Completed: ...


class SubprocessRunner:
    """The real runner: a child process per call, stdin closed unless text is given."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(env) if env is not None else None

    def __call__(self, argv: Sequence[str], timeout: float, stdin: str | None = None) -> Completed:
        feed = subprocess.DEVNULL if stdin is None else None
        data = None if stdin is None else stdin.encode("utf-8")
        try:
            done = subprocess.run(
                list(argv),
                input=data,
                stdin=feed,
                capture_output=True,
                timeout=timeout,
                env=self._env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            return Completed(None, _text(exc.stdout), _text(exc.stderr), timed_out=True)
        except (OSError, ValueError, OverflowError) as exc:  # OverflowError: an unbounded timeout
            return Completed(None, launch_error=f"{type(exc).__name__}: {exc}")
        return Completed(done.returncode, _text(done.stdout), _text(done.stderr))


def _text(raw: bytes | str | None) -> str:
    if raw is None:
        return ""
    return raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")


# --- the envelope, classified (D2, D3, D8) --------------------------------------------------------


class Verdict(StrEnum):
    """The client's classification of one call; only `ok` carries decoded data."""

    OK = "ok"  # a valid envelope we understand, ok: true
    REFUSED = "refused"  # a valid envelope, ok: false; error.kind is from the closed set
    DEGRADED = "degraded"  # the surface speaks a contract version we do not understand
    UNREGISTERED = "unregistered"  # no successful handshake yet: verbs are not available
    CONTRACT_VIOLATION = "contract_violation"  # JSON that is not a well-formed envelope
    ENVIRONMENT_FAULT = "environment_fault"  # exit 78: the li installation is broken
    TRANSPORT_FAULT = "transport_fault"  # no valid envelope: launch, signal, timeout, bad stdout


#: Verdicts that say nothing about any run: never attribute them to the submitted work.
SURFACE_FAULTS = frozenset(
    {
        Verdict.DEGRADED,
        Verdict.UNREGISTERED,
        Verdict.CONTRACT_VIOLATION,
        Verdict.ENVIRONMENT_FAULT,
        Verdict.TRANSPORT_FAULT,
    }
)


@dataclass(frozen=True)
class Reply:
    """One classified answer: `data` only when the verdict is `ok`, `error` only when refused."""

    verdict: Verdict
    data: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    contract_version: int | None = None
    exit_code: int | None = None
    diagnostic: str | None = None
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict is Verdict.OK

    def to_wire(self) -> dict[str, Any]:
        """The classification as plain JSON-able data (data and error are carried beside it)."""
        return {
            "surface": self.verdict.value,
            "surface_fault": self.verdict in SURFACE_FAULTS,
            "contract_version": self.contract_version,
            "exit_code": self.exit_code,
            "diagnostic": self.diagnostic,
        }


def classify(done: Completed, understood: frozenset[int]) -> Reply:
    """Turn one invocation into a Reply: exit status first, then the version, then the shape."""
    fault = _transport_fault(done)
    if fault is not None:
        return fault
    parsed = parse_one_object(done.stdout, "stdout")
    if isinstance(parsed, str):
        return _fault(Verdict.TRANSPORT_FAULT, done, f"{_exit_words(done.exit_code)}; {parsed}")
    return _judge_envelope(parsed, done, understood)


def _transport_fault(done: Completed) -> Reply | None:
    """Answers decided by the exit status alone; stdout is never parsed for these (C6)."""
    if done.launch_error is not None:
        return _fault(
            Verdict.TRANSPORT_FAULT, done, f"li could not be launched: {done.launch_error}"
        )
    if done.timed_out:
        return _fault(Verdict.TRANSPORT_FAULT, done, "li did not answer within the client's bound")
    if done.exit_code == EXIT_CONFIG:
        return _fault(
            Verdict.ENVIRONMENT_FAULT,
            done,
            "li exited 78: its installation is broken; no run was created",
        )
    return None


def parse_one_object(text: str, what: str) -> dict[str, Any] | str:
    """Exactly one JSON object, or a reason why not (a string naming `what` was read)."""
    if not text.strip():
        return f"{what} was empty"
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than json can go
        return f"{what} is not one JSON value ({type(exc).__name__}: {exc})"
    if not isinstance(value, dict):
        return f"{what} is JSON but not an object ({type(value).__name__})"
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-JSON constant {name}")


def _judge_envelope(envelope: dict[str, Any], done: Completed, understood: frozenset[int]) -> Reply:
    """Check the version before anything else is looked at, then the D3 shape."""
    version = envelope.get("contract_version")
    if not isinstance(version, int) or isinstance(version, bool):
        return _fault(
            Verdict.CONTRACT_VIOLATION, done, "envelope carries no integer contract_version"
        )
    if version not in understood:
        words = f"envelope speaks contract_version {version}; this client understands {sorted(understood)}"
        return _fault(Verdict.DEGRADED, done, words, version)
    problem = _shape_problem(envelope)
    if problem is not None:
        return _fault(Verdict.CONTRACT_VIOLATION, done, problem, version)
    if envelope["ok"]:
        return Reply(Verdict.OK, envelope["data"], None, version, done.exit_code, None, done.stderr)
    return Reply(
        Verdict.REFUSED, None, envelope["error"], version, done.exit_code, None, done.stderr
    )


def _shape_problem(envelope: dict[str, Any]) -> str | None:
    """Why an envelope of an understood version is malformed, or None (unknown keys are fine).

    The D3 rule is the domain's `is_well_formed`; the client adds only that `data` is an
    object, because it reads every v1 data as one.
    """
    if is_well_formed(envelope) and (not envelope["ok"] or isinstance(envelope["data"], dict)):
        return None
    return _diagnose_shape(envelope)


def _diagnose_shape(envelope: dict[str, Any]) -> str:
    """Words for a malformed envelope: the first D3 rule it breaks (wording only, no decision)."""
    ok, data, error = envelope.get("ok"), envelope.get("data"), envelope.get("error")
    if not isinstance(ok, bool):
        return "envelope has no boolean ok"
    if (data is None) == (error is None):
        return "envelope must carry exactly one of data and error"
    if ok:
        return "ok: true must carry a data object"
    if not isinstance(error, dict):
        return "ok: false must carry an error object"
    return f"error.kind {error.get('kind')!r} is outside the closed set"


def _fault(verdict: Verdict, done: Completed, words: str, version: int | None = None) -> Reply:
    return Reply(verdict, None, None, version, done.exit_code, words, done.stderr)


def _exit_words(code: int | None) -> str:
    if code is not None and code < 0:
        return f"li was killed by signal {-code}"
    return f"li exited {code}"


# --- reading status-bearing data (C3, C4, C5) -----------------------------------------------------


class Branch(StrEnum):
    """What the client does with a run, from `terminal` and `outcome` only (never from status)."""

    NOT_ENDED = "not_ended"  # terminal is not true (outcome null): keep observing
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INDETERMINATE = "indeterminate"  # ended, result unknowable: never success, never failure
    UNOBSERVED = "unobserved"  # the row carries a per-id error: nothing is known about the run


_OUTCOMES = {
    "succeeded": Branch.SUCCEEDED,
    "failed": Branch.FAILED,
    "cancelled": Branch.CANCELLED,
    "indeterminate": Branch.INDETERMINATE,
}

ADVICE = {
    Branch.NOT_ENDED: "not ended: call wait (again); it has no outcome yet",
    Branch.SUCCEEDED: "ended and succeeded: read its output",
    Branch.FAILED: "ended and failed: read its output (console) to see why",
    Branch.CANCELLED: "ended because it was cancelled or killed: its work did not complete",
    Branch.INDETERMINATE: "ended, but its result cannot be established: do not retry automatically; tell a human",
    Branch.UNOBSERVED: "could not be observed (see error): nothing is known about this run",
}


def branch_outcome(terminal: object, outcome: object) -> tuple[Branch, bool]:
    """Total over every value: returns the branch and whether `outcome` was in the vocabulary."""
    if terminal is not True:
        return Branch.NOT_ENDED, outcome is None
    if isinstance(outcome, str) and outcome in _OUTCOMES:
        return _OUTCOMES[outcome], True
    return Branch.INDETERMINATE, False  # null or out-of-vocabulary on an ended run


@dataclass(frozen=True)
class RunView:
    """A run as the client understands it; `status` is carried verbatim and never interpreted."""

    run_id: object
    status: object
    terminal: object
    outcome: object
    branch: Branch
    outcome_recognised: bool

    def to_wire(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "terminal": self.terminal,
            "outcome": self.outcome,
            "branch": self.branch.value,
            "outcome_recognised": self.outcome_recognised,
            "advice": ADVICE[self.branch],
        }


def run_view(row: Mapping[str, Any]) -> RunView:
    """Read the three D4 fields of any status-bearing row; every other field is ignored."""
    branch, recognised = branch_outcome(row.get("terminal"), row.get("outcome"))
    if row.get("error") is not None:  # a list row or wait entry that could not be read
        branch, recognised = Branch.UNOBSERVED, row.get("outcome") is None
    return RunView(
        row.get("run_id"),
        row.get("status"),
        row.get("terminal"),
        row.get("outcome"),
        branch,
        recognised,
    )


class Evidence(StrEnum):
    """What an availability wrapper establishes (D7)."""

    PRESENT = "present"  # available, with a non-empty value
    NONE = "none"  # available, and definitively empty
    UNKNOWN = "unknown"  # not available (or not a wrapper at all): never "none"


@dataclass(frozen=True)
class Reading:
    """One read-derived field: its evidence, value and, when unknown, why."""

    evidence: Evidence
    value: Any = None
    reason_code: object = None
    detail: object = None

    def describe(self) -> str:
        """Human words that never present an unknown as an absence."""
        if self.evidence is Evidence.UNKNOWN:
            return f"unknown: could not be established ({self.reason_code}: {self.detail})"
        return "none" if self.evidence is Evidence.NONE else "present"

    def to_wire(self) -> dict[str, Any]:
        return {
            "evidence": self.evidence.value,
            "reason_code": self.reason_code,
            "detail": self.detail,
            "says": self.describe(),
        }


def read_availability(wrapper: object) -> Reading:
    """Read `{available, value, reason_code, detail}` without collapsing unknown into none."""
    if not isinstance(wrapper, Mapping) or wrapper.get("available") is not True:
        reason = wrapper.get("reason_code") if isinstance(wrapper, Mapping) else "not_a_wrapper"
        detail = wrapper.get("detail") if isinstance(wrapper, Mapping) else None
        return Reading(Evidence.UNKNOWN, None, reason, detail)
    value = wrapper.get("value")
    empty = value is None or (isinstance(value, (list, dict, str)) and not value)
    return Reading(Evidence.NONE if empty else Evidence.PRESENT, value)


def read_fields(data: Mapping[str, Any], names: Sequence[str]) -> dict[str, Reading]:
    """Read several wrappers of one data object; a missing one is unknown, never none."""
    return {name: read_availability(data.get(name)) for name in names}


# --- obligation 8: runs a bounded wait does not resolve -------------------------------------------

PENDING, STOPPED, UNRESOLVED_SPAWN = "pending", "stopped_without_end", "unresolved_spawn"
TERMINAL, ERRORED = "terminal", "errored"


@dataclass(frozen=True)
class UnresolvedPolicy:
    """Give up on an id after `max_attempts` unresolved observations, backing off between them."""

    max_attempts: int = 5
    backoff_initial: float = 1.0
    backoff_factor: float = 2.0
    backoff_max: float = 60.0

    def backoff(self, attempts: int) -> float:
        """Seconds to leave before the next observation of an id seen unresolved `attempts` times."""
        if attempts <= 0:
            return 0.0
        return min(self.backoff_max, self.backoff_initial * self.backoff_factor ** (attempts - 1))


@dataclass
class _Entry:
    bucket: str
    attempts: int
    last_seen: float


@dataclass(frozen=True)
class Standing:
    """Where the ledger stands on one id after an observation."""

    bucket: str
    attempts: int
    abandoned: bool
    retry_after: float


#: Ids the ledger remembers at most; a long-lived `li mcp` must not grow without bound.
LEDGER_CAPACITY = 4096


class UnresolvedLedger:
    """The client's own store of unresolved ids: attempts, last observation, abandonment.

    An id leaves when it is seen ended or unknown. Past `capacity` the ledger forgets the
    least recently observed abandoned id first, so an id still being counted keeps its
    attempts (forgetting it would let it be retried for ever); only a ledger full of ids
    still being counted forgets the least recently observed of those.
    """

    def __init__(
        self,
        policy: UnresolvedPolicy,
        clock: Callable[[], float],
        capacity: int = LEDGER_CAPACITY,
    ) -> None:
        self.policy = policy
        self.capacity = max(1, capacity)
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def observe(self, run_id: str, bucket: str, window_expired: bool) -> Standing:
        """Record one observation; pending counts only when the window closed on it."""
        with self._lock:
            if bucket in (TERMINAL, ERRORED):
                self._entries.pop(run_id, None)
                return Standing(bucket, 0, False, 0.0)
            entry = self._entries.setdefault(run_id, _Entry(bucket, 0, self._clock()))
            self._entries.move_to_end(run_id)
            if bucket != PENDING or window_expired:
                entry.attempts += 1
            entry.bucket, entry.last_seen = bucket, self._clock()
            self._evict()
            return self._standing(entry)

    def forget(self, run_id: str) -> None:
        """Drop an id some other read showed ended or unknown: nothing is left to count."""
        with self._lock:
            self._entries.pop(run_id, None)

    def _evict(self) -> None:
        """Trim to capacity: oldest abandoned ids first, then the oldest of the rest."""
        while len(self._entries) > self.capacity:
            limit = self.policy.max_attempts
            oldest = next((k for k, e in self._entries.items() if e.attempts >= limit), None)
            self._entries.pop(oldest if oldest is not None else next(iter(self._entries)))

    def _standing(self, entry: _Entry) -> Standing:
        abandoned = entry.attempts >= self.policy.max_attempts
        paced = not abandoned and entry.bucket != PENDING  # a pending id is paced by the window
        retry = self.policy.backoff(entry.attempts) if paced else 0.0
        return Standing(entry.bucket, entry.attempts, abandoned, retry)

    def delay_before(self, run_ids: Sequence[str]) -> float:
        """Seconds to back off before observing these ids; 0 when any of them is worth a look now."""
        with self._lock:
            waits = [self._remaining(self._entries.get(run_id)) for run_id in run_ids]
        live = [w for w in waits if w is not None]
        if not live or any(w == 0.0 for w in live):
            return 0.0
        return min(live)

    def _remaining(self, entry: _Entry | None) -> float | None:
        """None for an abandoned id (it sets no pace); 0 for one that may be observed now."""
        if entry is None or entry.bucket == PENDING:
            return 0.0
        if entry.attempts >= self.policy.max_attempts:
            return None
        due = entry.last_seen + self.policy.backoff(entry.attempts)
        return max(0.0, due - self._clock())

    def abandoned(self) -> list[str]:
        with self._lock:
            return [k for k, e in self._entries.items() if e.attempts >= self.policy.max_attempts]


@dataclass(frozen=True)
class WaitReport:
    """One `li job wait`, classified: the producer's partition plus the client's policy on it."""

    reply: Reply
    runs: tuple[RunView, ...] = ()
    standings: Mapping[str, Standing] = field(default_factory=dict)
    errors: Mapping[str, Any] = field(default_factory=dict)

    @property
    def abandoned(self) -> list[str]:
        return [run_id for run_id, s in self.standings.items() if s.abandoned]

    @property
    def settled(self) -> bool:
        """Nothing left to wait for: each id ended, errored, or was abandoned under the policy."""
        return self.reply.ok and all(_finished(s) for s in self.standings.values())

    def to_wire(self) -> dict[str, Any]:
        return {
            **self.reply.to_wire(),
            "runs": [view.to_wire() for view in self.runs],
            "policy": {run_id: asdict(s) for run_id, s in self.standings.items()},
            "abandoned": self.abandoned,
            "errors": dict(self.errors),
            "settled": self.settled,
        }


def _finished(standing: Standing | None) -> bool:
    return standing is not None and (standing.bucket in (TERMINAL, ERRORED) or standing.abandoned)


def bucket_of(run_id: str, entry: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    """Which of the producer's disjoint buckets holds an id (its error channel first)."""
    if entry.get("error") is not None:
        return ERRORED
    for name in (STOPPED, UNRESOLVED_SPAWN, PENDING):
        listed = data.get(name)
        if isinstance(listed, list) and run_id in listed:
            return name
    return TERMINAL if entry.get("terminal") is True else PENDING


# --- the client ------------------------------------------------------------------------------------


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


#: Prompts above this many bytes go through `--prompt-file -` rather than argv.
ARGV_PROMPT_LIMIT = 64 * 1024
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
        cut = _verb_words(args)
        argv = [self.li_path, *args[:cut], "--machine", *args[cut:]]
        done = self._runner(argv, timeout or self.call_timeout, stdin)
        return classify(done, self.understood)

    # -- submit (D5) --

    def submit_agent(self, prompt: str, model: str | None = None, **options: object) -> Reply:
        """`li agent --detach [MODEL] PROMPT`; options: label, cwd, timeout, notify."""
        head = ["agent", "--detach", *_options(options)]
        if len(prompt.encode("utf-8")) > ARGV_PROMPT_LIMIT:
            return self.call([*head, "--prompt-file", "-", "--", *_present(model)], stdin=prompt)
        return self.call([*head, "--", *_present(model), prompt])

    def submit_flow(self, spec_path: str, **options: object) -> Reply:
        """`li orchestrate flow --detach SPEC_PATH`; options: label."""
        return self.call(["orchestrate", "flow", "--detach", *_options(options), "--", spec_path])

    def submit_fanout(self, prompt: str, model: str | None = None, **options: object) -> Reply:
        """`li orchestrate fanout --detach [MODEL] PROMPT`; options: legs, models, synthesize, label."""
        head = ["orchestrate", "fanout", "--detach", *_options(options)]
        return self.call([*head, "--", *_present(model), prompt])

    # -- observation (D6, D10) --

    def status(self, run_id: str) -> Reply:
        reply = self.call(["job", "status", "--", run_id])
        if _settles(reply):
            self.ledger.forget(run_id)
        return reply

    def output(self, run_id: str, tail_chars: int | None = None) -> Reply:
        return self.call(["job", "output", *_options({"tail_chars": tail_chars}), "--", run_id])

    def list_runs(self, limit: int | None = None, status: str | None = None) -> Reply:
        return self.call(["job", "list", *_options({"limit": limit, "status": status})])

    def kill(self, run_id: str) -> Reply:
        return self.call(["job", "kill", "--", run_id])

    def wait(
        self, run_ids: Sequence[str], max_wait: float = 60.0, poll_interval: float = 1.0
    ) -> WaitReport:
        """One bounded wait, paced by the policy's backoff, with each id's standing recorded."""
        window = window_of(max_wait)  # bounds our own sleep and call as li bounds its window
        delay = min(self.ledger.delay_before(run_ids), window)
        if delay > 0:
            self._sleep(delay)
        args = ["job", "wait", *_options({"max_wait": max_wait, "poll_interval": poll_interval})]
        reply = self.call([*args, "--", *run_ids], timeout=window + self.call_timeout)
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
        """Wait until every id ended, errored or was abandoned; a surface fault stops at once."""
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
            remaining = [r for r in remaining if not _finished(standings.get(r))]
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


def _verb_words(args: Sequence[str]) -> int:
    """How many leading words name the verb (`--machine` goes right after them)."""
    return 2 if args and args[0] in ("job", "orchestrate") else 1


def _options(options: Mapping[str, object]) -> list[str]:
    """`{"tail_chars": 5}` -> `["--tail-chars=5"]`; None is omitted; lists are comma-joined.

    Values are li's to judge, as any other caller input is: NaN and infinities travel as
    `nan`/`inf`, which li clamps (wait) or refuses as invalid_input (everything else).
    """
    words: list[str] = []
    for name, value in options.items():
        if value is None:
            continue
        text = ",".join(map(_word, value)) if isinstance(value, (list, tuple)) else _word(value)
        words.append(f"--{name.replace('_', '-')}={text}")
    return words


def _word(value: object) -> str:
    """One option value as text; an int too long to print is out of every bound, so ±inf."""
    try:
        return str(value)
    except ValueError:  # int beyond sys.get_int_max_str_digits()
        return "inf" if isinstance(value, int) and value > 0 else "-inf"


def _present(model: str | None) -> list[str]:
    return [] if model is None else [model]
