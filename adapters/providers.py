"""Agent providers: sh, claude, codex and gemini as subprocesses in their own process groups."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from application.ports import Provider, ProviderResult

ARGV_PROMPT_MAX = 100 * 1024  # longer prompts go on stdin: one argv string is capped at 128 KiB
KILL_GRACE = 2.0
PUMP_JOIN = 5.0


class ChildGroups:
    """The process groups of running provider children, so a cancel can stop them all."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # re-entrant: the SIGTERM handler may interrupt a holder
        self._groups: set[int] = set()
        self.cancelled = False

    def add(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)
            if self.cancelled:
                _kill_group(pgid, signal.SIGTERM)

    def discard(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)

    def terminate_all(self) -> None:
        """SIGTERM every group now, SIGKILL whatever is left after a grace."""
        with self._lock:
            self.cancelled = True
            groups = set(self._groups)
        for pgid in groups:
            _kill_group(pgid, signal.SIGTERM)
        reaper = threading.Timer(KILL_GRACE, self._kill_rest)
        reaper.daemon = True  # never keeps a cancelled runner alive
        reaper.start()

    def _kill_rest(self) -> None:
        with self._lock:
            groups = set(self._groups)
        for pgid in groups:
            _kill_group(pgid, signal.SIGKILL)


def _kill_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


class ChildRun:
    """One provider child: own process group, stdout lines to a callback, stderr to the console."""

    def __init__(self, groups: ChildGroups) -> None:
        self.groups = groups

    def __call__(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], console: Any,
                 timeout: float | None, on_line: Callable[[str], None], stdin_text: str | None = None,
                 ) -> tuple[int, bool]:
        """Run to the end (or the timeout, which kills the whole group); returns (exit code, timed out)."""
        try:
            child = subprocess.Popen(
                list(argv), cwd=cwd, env=dict(env), process_group=0, close_fds=True,
                stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
        except (OSError, ValueError) as exc:
            console.write(f"li: could not start {argv[0]}: {exc}\n")
            return 127, False
        self.groups.add(child.pid)
        try:
            return self._supervise(child, console, timeout, on_line, stdin_text)
        finally:
            self.groups.discard(child.pid)

    def _supervise(self, child: subprocess.Popen[bytes], console: Any, timeout: float | None,
                   on_line: Callable[[str], None], stdin_text: str | None) -> tuple[int, bool]:
        pumps = [_pump(child.stdout, on_line), _pump(child.stderr, console.write)]
        if stdin_text is not None:
            pumps.append(_feed(child.stdin, stdin_text))
        timed_out = False
        try:
            child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(child.pid, signal.SIGTERM)
            try:
                child.wait(timeout=KILL_GRACE)
            except subprocess.TimeoutExpired:
                _kill_group(child.pid, signal.SIGKILL)
                child.wait()
        for pump in pumps:
            pump.join(PUMP_JOIN)
        return child.returncode, timed_out


def _pump(stream: IO[bytes] | None, sink: Callable[[str], Any]) -> threading.Thread:
    def drain() -> None:
        assert stream is not None
        with stream:
            for raw in iter(stream.readline, b""):
                sink(raw.decode("utf-8", errors="replace"))

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    return thread


def _feed(stream: IO[bytes] | None, text: str) -> threading.Thread:
    def write() -> None:
        assert stream is not None
        try:
            with stream:
                stream.write(text.encode("utf-8", "surrogateescape"))
        except (BrokenPipeError, OSError):
            pass

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


class ShProvider:
    """`/bin/sh -c INSTRUCTION` in the run's cwd; its stdout is the answer (`response.md`)."""

    name = "sh"
    shell = "/bin/sh"

    def __init__(self, child: ChildRun) -> None:
        self.child = child

    def available(self) -> bool:
        return os.access(self.shell, os.X_OK)

    def run(self, instruction: str, model: str | None, cwd: str, env: Mapping[str, str],
            console: Any, timeout: float | None) -> ProviderResult:
        lines: list[str] = []

        def tee(line: str) -> None:
            lines.append(line)
            console.write(line)

        code, timed_out = self.child([self.shell, "-c", instruction], cwd, env, console, timeout, tee)
        return ProviderResult(exit_code=code, answer="".join(lines) or None, timed_out=timed_out)


class _JsonCli:
    """Shared shape of the agent CLIs: find the executable, run it, parse what it printed."""

    name = ""
    executable = ""

    def __init__(self, child: ChildRun) -> None:
        self.child = child

    def available(self) -> bool:
        return shutil.which(self.executable) is not None

    def run(self, instruction: str, model: str | None, cwd: str, env: Mapping[str, str],
            console: Any, timeout: float | None) -> ProviderResult:
        path = shutil.which(self.executable, path=env.get("PATH")) or self.executable
        on_stdin = len(instruction.encode("utf-8", "surrogateescape")) > ARGV_PROMPT_MAX
        argv = [path, *self.arguments(None if on_stdin else instruction, model)]
        lines: list[str] = []

        def keep(line: str) -> None:
            lines.append(line)
            console.write(line)

        code, timed_out = self.child(argv, cwd, env, console, timeout, keep,
                                     instruction if on_stdin else None)
        result = self.parse(lines)
        result.exit_code, result.timed_out = code, timed_out
        result.is_error = result.is_error or code != 0
        return result

    def arguments(self, prompt: str | None, model: str | None) -> list[str]:
        raise NotImplementedError

    def parse(self, lines: list[str]) -> ProviderResult:
        raise NotImplementedError


def _events(lines: list[str]) -> list[dict[str, Any]]:
    events = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: object) -> int:
    number = _number(value)
    return int(number) if number is not None else 0


def _number(value: object) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


class ClaudeProvider(_JsonCli):
    """`claude -p PROMPT --output-format stream-json --verbose [--model M]`; the `result` event answers."""

    name = executable = "claude"

    def arguments(self, prompt: str | None, model: str | None) -> list[str]:
        head = ["-p"] if prompt is None else ["-p", prompt]
        return [*head, "--output-format", "stream-json", "--verbose", *(["--model", model] if model else [])]

    def parse(self, lines: list[str]) -> ProviderResult:
        results = [e for e in _events(lines) if e.get("type") == "result"]
        if not results:
            return ProviderResult(exit_code=1, is_error=True, usage={"error": "no result event"})
        final = results[-1]
        answer = final.get("result")
        raw = _dict(final.get("usage"))
        usage: dict[str, Any] = {k: _number(raw.get(k)) for k in (
            "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}
        usage.update(cost_usd=_number(final.get("total_cost_usd")), num_turns=final.get("num_turns"),
                     duration_ms=final.get("duration_ms"), session_id=final.get("session_id"),
                     subtype=final.get("subtype"))
        return ProviderResult(exit_code=0, answer=answer if isinstance(answer, str) else None,
                              is_error=bool(final.get("is_error")), usage=usage)


class CodexProvider(_JsonCli):
    """`codex exec --json [--model M] PROMPT`; the last `agent_message` item is the answer."""

    name = executable = "codex"

    def arguments(self, prompt: str | None, model: str | None) -> list[str]:
        return ["exec", "--json", "--skip-git-repo-check", *(["--model", model] if model else []),
                "-" if prompt is None else prompt]

    def parse(self, lines: list[str]) -> ProviderResult:
        answer, failed, inputs, outputs, turns = None, False, 0, 0, 0
        for event in _events(lines):
            kind = event.get("type")
            item = _dict(event.get("item"))
            if kind == "item.completed" and item.get("type") in ("agent_message", "assistant_message"):
                answer = item.get("text") if isinstance(item.get("text"), str) else answer
            elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
                turns += 1
                inputs += _count(_dict(event["usage"]).get("input_tokens"))
                outputs += _count(_dict(event["usage"]).get("output_tokens"))
            elif kind in ("turn.failed", "error"):
                failed = True
        usage: dict[str, Any] = {"input_tokens": inputs, "output_tokens": outputs} if turns else {}
        return ProviderResult(exit_code=0, answer=answer, is_error=failed, usage=usage)


class GeminiProvider(_JsonCli):
    """`gemini -p PROMPT --output-format json [-m M]`: one JSON object with `response` and `stats`."""

    name = executable = "gemini"

    def arguments(self, prompt: str | None, model: str | None) -> list[str]:
        text = "Follow the instructions given on standard input." if prompt is None else prompt
        return ["-p", text, "--output-format", "json", *(["-m", model] if model else [])]

    def parse(self, lines: list[str]) -> ProviderResult:
        try:
            body = json.loads("".join(lines))
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return ProviderResult(exit_code=1, is_error=True, usage={"error": "no JSON answer"})
        answer = body.get("response")
        return ProviderResult(exit_code=0, answer=answer if isinstance(answer, str) else None,
                              is_error=body.get("error") is not None, usage=_gemini_usage(body.get("stats")))


def _gemini_usage(stats: object) -> dict[str, Any]:
    models = stats.get("models") if isinstance(stats, dict) else None
    if not isinstance(models, dict) or not models:
        return {}
    inputs = outputs = 0
    for entry in models.values():
        tokens = _dict(_dict(entry).get("tokens"))
        inputs += _count(tokens.get("prompt"))
        outputs += _count(tokens.get("candidates"))
    return {"input_tokens": inputs, "output_tokens": outputs}


def default_providers(groups: ChildGroups) -> dict[str, Provider]:
    """The provider registry: every model spec's provider name to its adapter."""
    child = ChildRun(groups)
    return {p.name: p for p in (ShProvider(child), ClaudeProvider(child), CodexProvider(child),
                                GeminiProvider(child))}
