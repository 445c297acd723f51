"""A model-API stub for the real agent CLIs: Anthropic Messages, OpenAI Responses and Gemini
`streamGenerateContent`, over SSE, on 127.0.0.1 at an ephemeral port (stdlib only).

A test scripts what the "model" does, one step per model turn, with the helpers below:

    stub.script(tool("echo hi > marker"), text("done"))   # a tool call, then the answer
    stub.script(error(500), error(500), text("ok"))        # two transient 500s, then an answer
    stub.script(rate_limited(reset_in=90))                 # every request: 429 with the vendor's headers

Only a *main* turn (a request carrying the agent's tools, or Codex's every `/responses`) takes
the next step; the last step repeats for every later turn. A CLI's side requests (Claude Code's
title or quota calls, Gemini's routing and next-speaker checks, token counts) get a short answer
of their own (JSON of the schema they ask for), or the current step's 401 or 403 when it is one:
a bad key is bad for every request, while an outage of the side calls would only add the CLIs'
own backoff (Gemini retries its router for a minute) to what a test proves. Every request is
recorded (`stub.requests`) for the test to look at.

`refused_url()` is an address where nothing listens (connection refused).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

HANG_LIMIT = 600.0  # a hung answer is released at the latest after this, or when the stub stops


@dataclass(frozen=True)
class Step:
    """What the model does on one turn."""

    kind: str  # text | tool | error | hang | cut
    text: str = ""
    command: str = ""
    status: int = 200
    reset_in: float = 60.0  # rate limits: seconds until the vendor says the limit resets
    retry_after: float = 1.0  # rate limits: the `retry-after` the vendor sends (short, so CLIs retry soon)
    input_tokens: int = 12
    output_tokens: int = 5
    reasoning: str = ""  # OpenAI: a reasoning summary item before the answer (Codex shows it)

    @property
    def failure(self) -> bool:
        return self.kind in ("error", "hang", "cut")


def text(answer: str = "stub answer", input_tokens: int = 12, output_tokens: int = 5, reasoning: str = "") -> Step:
    return Step("text", text=answer, input_tokens=input_tokens, output_tokens=output_tokens, reasoning=reasoning)


def empty() -> Step:
    """A well-formed answer with no text at all."""
    return Step("text", text="", output_tokens=0)


def tool(command: str) -> Step:
    """A call of the CLI's shell tool with `command` (the CLI may run it or refuse, per its mode)."""
    return Step("tool", command=command)


def error(status: int) -> Step:
    """An HTTP error in the vendor's shape: 400, 401, 403, 404, 500, 503 or 529."""
    return Step("error", status=status)


def rate_limited(reset_in: float = 60.0, retry_after: float = 1.0) -> Step:
    """429 with the vendor's rate-limit headers and body, the limit resetting `reset_in` s from now
    (the reset time the headers name); `retry-after` says `retry_after` s."""
    return Step("error", status=429, reset_in=reset_in, retry_after=retry_after)


def overloaded() -> Step:
    """The vendor's "overloaded": Anthropic 529 overloaded_error, OpenAI 503, Gemini 503 UNAVAILABLE."""
    return Step("error", status=529)


def hang() -> Step:
    """The request is read and never answered (until the stub stops)."""
    return Step("hang")


def cut() -> Step:
    """A 200 stream that stops in the middle of an event: the connection is closed mid-line."""
    return Step("cut", text="this answer is cut off")


@dataclass
class Request:
    vendor: str  # anthropic | openai | gemini | other
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    main: bool
    step: Step | None = None

    @property
    def model(self) -> str:
        if self.vendor == "gemini":
            return self.path.split("/models/", 1)[-1].split(":", 1)[0]
        return str(self.body.get("model", "")) if isinstance(self.body, dict) else ""


@dataclass
class _Script:
    steps: list[Step] = field(default_factory=lambda: [text()])
    taken: int = 0

    def current(self) -> Step:
        return self.steps[min(self.taken, len(self.steps) - 1)]

    def take(self) -> Step:
        step = self.current()
        self.taken += 1
        return step


class ModelStub:
    """The stub server; `url` is its base (`http://127.0.0.1:PORT`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script = _Script()
        self._released = threading.Event()
        self.requests: list[Request] = []
        stub = self

        class Handler(_Handler):
            owner = stub

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        daemon=True)
        self._thread.start()

    # Where each CLI is pointed.
    @property
    def anthropic_url(self) -> str:
        return self.url  # ANTHROPIC_BASE_URL: the SDK appends /v1/messages

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"  # a Codex model provider's base_url: Codex appends /responses

    @property
    def gemini_url(self) -> str:
        return self.url  # GOOGLE_GEMINI_BASE_URL: the SDK appends /v1beta/models/M:method

    def script(self, *steps: Step) -> None:
        """The model's turns from now on (the last repeats); forgets what was taken before."""
        assert steps, "a script needs at least one step"
        with self._lock:
            self._script = _Script(list(steps))

    def main_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.main]

    def _plan(self, request: Request) -> Step:
        with self._lock:
            self.requests.append(request)
            step = self._script.take() if request.main else self._script.current()
            if not request.main and step.failure and step.status not in (401, 403):
                step = text()  # only a bad key fails the side requests too: they would retry for long
            request.step = step
            return step

    def stop(self) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def refused_url() -> str:
    """`http://127.0.0.1:PORT` where nothing listens: every connection is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def model_stub() -> Iterator[ModelStub]:
    """A model-API stub of this test's own, answering `text()` until the test scripts it."""
    stub = ModelStub()
    try:
        yield stub
    finally:
        stub.stop()


# --- the server side -------------------------------------------------------------------------

SHELL_TOOLS = ("Bash", "run_shell_command", "shell", "shell_command", "exec_command", "local_shell")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a CLI that hangs up (or is killed) mid-request is no failure of the stub


class _Handler(BaseHTTPRequestHandler):
    owner: ModelStub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass

    # Every vendor's request comes in here.
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self._serve(None)

    def do_HEAD(self) -> None:  # noqa: N802
        self._send_json(200, {})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else {}
        except ValueError:
            body = {"raw": raw.decode("utf-8", "replace")}
        self._serve(body)

    def _serve(self, body: Any) -> None:
        path = self.path.split("?", 1)[0]
        vendor, main = _classify(self.command, path, body)
        request = Request(vendor, self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body,
                          main)
        step = self.owner._plan(request)
        if vendor == "other":
            return self._other(path)
        if step.kind == "hang":
            self.owner._released.wait(HANG_LIMIT)
            self.close_connection = True
            return None
        if step.kind == "error":
            return self._error(vendor, step)
        if not main:
            return self._side(vendor, path, body)
        streaming = vendor == "openai" or (vendor == "anthropic" and bool(body.get("stream"))) or (
            vendor == "gemini" and "streamGenerateContent" in path)
        events = _EVENTS[vendor](step, body, request.model)
        if not streaming:
            return self._send_json(200, _WHOLE[vendor](step, body, request.model), cut=step.kind == "cut")
        return self._stream(events, cut=step.kind == "cut")

    def _other(self, path: str) -> None:
        if path.rstrip("/").endswith("/models"):  # Codex may list models; an empty list is a valid answer
            return self._send_json(200, {"object": "list", "data": [], "models": []})
        return self._send_json(404, {"error": {"message": f"the model stub does not serve {path}"}})

    def _side(self, vendor: str, path: str, body: Any) -> None:
        if vendor == "anthropic" and path.endswith("/count_tokens"):
            return self._send_json(200, {"input_tokens": 12})
        if vendor == "gemini" and path.endswith(":countTokens"):
            return self._send_json(200, {"totalTokens": 12})
        answer = text(_side_answer(vendor, body))
        if vendor == "anthropic" and bool(body.get("stream")) or vendor == "gemini" and "stream" in path:
            return self._stream(_EVENTS[vendor](answer, body, ""), cut=False)
        return self._send_json(200, _WHOLE[vendor](answer, body, ""))

    def _error(self, vendor: str, step: Step) -> None:
        status, headers, body = _ERRORS[vendor](step)
        self._send_json(status, body, headers)

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None, cut: bool = False) -> None:
        """A JSON answer; `cut`: its first half only, then the socket closes (a non-streamed cut)."""
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data[: len(data) // 2] if cut else data)
            if cut:
                self.close_connection = True
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)

    def _stream(self, events: list[tuple[str | None, dict[str, Any]]], cut: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        if cut:  # the first event whole, then half of the next one's data line, then the socket closes
            events = events[:2]
        try:
            for number, (name, data) in enumerate(events):
                chunk = (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
                if cut and number == 1:
                    chunk = chunk[: len(chunk) // 2]
                self.wfile.write(chunk.encode())
                self.wfile.flush()
            if cut:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _classify(method: str, path: str, body: Any) -> tuple[str, bool]:
    """(vendor, main turn?) of one request."""
    if "/v1/messages" in path:
        return "anthropic", path.endswith("/messages") and bool(body and body.get("tools"))
    if path.endswith("/responses"):
        return "openai", method == "POST"
    if ":streamGenerateContent" in path or ":generateContent" in path or ":countTokens" in path:
        return "gemini", ":streamGenerateContent" in path and bool(body and body.get("tools"))
    return "other", False


def _side_answer(vendor: str, body: Any) -> str:
    """A short answer to a side request; JSON of the asked schema when the CLI asked for JSON
    (Gemini's routing and next-speaker checks do)."""
    config = body.get("generationConfig", {}) if isinstance(body, dict) else {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if vendor == "gemini" and (schema or config.get("responseMimeType") == "application/json"):
        return json.dumps(_sample(schema or {"type": "object", "properties": {}}))
    return "stub"


KNOWN_VALUES = {"next_speaker": "user", "model_choice": "flash", "complexity_score": 10}


def _sample(schema: dict[str, Any], name: str = "") -> Any:
    """A value that fits a JSON schema (the simple ones the CLIs ask for)."""
    kind = str(schema.get("type", "object")).lower()
    if name in KNOWN_VALUES:
        return KNOWN_VALUES[name]
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        return {key: _sample(sub, key) for key, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 10
    if kind == "boolean":
        return False
    return "stub"


DEFAULT_SHELL = {"anthropic": ("Bash", {}), "openai": ("exec_command", {"properties": {"cmd": {}}}),
                 "gemini": ("run_shell_command", {})}


def _shell_tool(body: Any, vendor: str) -> tuple[str, dict[str, Any]]:
    """The CLI's shell tool among the tools it offered and its parameters' JSON schema; when it
    offered none (its mode withholds it), the vendor's usual one, which the CLI will refuse."""
    offered: list[tuple[str, dict[str, Any]]] = []
    for entry in body.get("tools", []) if isinstance(body, dict) else []:
        for declared in entry.get("functionDeclarations", []) or entry.get("function_declarations", []) or [entry]:
            name = declared.get("name") or declared.get("function", {}).get("name") or declared.get("type", "")
            schema = (declared.get("input_schema") or declared.get("parameters")
                      or declared.get("parametersJsonSchema") or declared.get("function", {}).get("parameters") or {})
            offered.append((name, schema))
    for wanted in SHELL_TOOLS:
        for name, schema in offered:
            if name == wanted:
                return name, schema
    return DEFAULT_SHELL[vendor]


def _shell_arguments(schema: dict[str, Any], command: str) -> dict[str, Any]:
    properties = schema.get("properties", {})
    if "cmd" in properties:
        return {"cmd": command}
    if properties.get("command", {}).get("type") == "array":
        return {"command": ["bash", "-lc", command]}
    return {"command": command}


def _anthropic_events(step: Step, body: Any, model: str) -> list[tuple[str | None, dict[str, Any]]]:
    vendor = "anthropic"
    usage = {"input_tokens": step.input_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
             "output_tokens": 1}
    events: list[tuple[str | None, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": {
        "id": f"msg_stub_{time.monotonic_ns()}", "type": "message", "role": "assistant", "model": model or "stub",
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})]
    if step.kind == "tool":
        name, schema = _shell_tool(body, vendor)
        arguments = json.dumps(_shell_arguments(schema, step.command))
        events += [
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": f"toolu_stub_{time.monotonic_ns()}", "name": name, "input": {}}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "input_json_delta", "partial_json": arguments}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0})]
        stop = "tool_use"
    else:
        events += [("content_block_start", {"type": "content_block_start", "index": 0,
                                            "content_block": {"type": "text", "text": ""}})]
        if step.text:
            events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                "delta": {"type": "text_delta", "text": step.text}})]
        events += [("content_block_stop", {"type": "content_block_stop", "index": 0})]
        stop = "end_turn"
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": step.output_tokens}}),
               ("message_stop", {"type": "message_stop"})]
    return events


def _anthropic_whole(step: Step, body: Any, model: str) -> dict[str, Any]:
    return {"id": "msg_stub", "type": "message", "role": "assistant", "model": model or "stub",
            "content": [{"type": "text", "text": step.text or "stub"}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": step.input_tokens, "output_tokens": step.output_tokens}}


def _openai_events(step: Step, body: Any, model: str) -> list[tuple[str | None, dict[str, Any]]]:
    vendor = "openai"
    response_id = f"resp_stub_{time.monotonic_ns()}"
    shell = {"id": response_id, "object": "response", "status": "in_progress", "model": model or "stub", "output": []}
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": shell})]
    if step.kind == "tool":
        name, schema = _shell_tool(body, vendor)
        item: dict[str, Any] = {"type": "function_call", "id": "fc_stub", "call_id": f"call_stub_{time.monotonic_ns()}",
                                "name": name, "arguments": json.dumps(_shell_arguments(schema, step.command)),
                                "status": "completed"}
    else:
        if step.reasoning:
            thought = {"type": "reasoning", "id": "rs_stub", "summary": [{"type": "summary_text",
                                                                         "text": step.reasoning}]}
            events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                                         "item": thought}))
        item = {"type": "message", "id": "msg_stub", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}]}
        events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                      "item": {**item, "status": "in_progress", "content": []}}))
        if step.text:
            events.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_stub",
                                                          "output_index": 0, "content_index": 0, "delta": step.text}))
    events += [
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": {
            **shell, "status": "completed", "output": [item],
            "usage": {"input_tokens": step.input_tokens, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": step.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": step.input_tokens + step.output_tokens}}})]
    return events


def _openai_whole(step: Step, body: Any, model: str) -> dict[str, Any]:
    return _openai_events(step, body, model)[-1][1]["response"]


def _gemini_events(step: Step, body: Any, model: str) -> list[tuple[str | None, dict[str, Any]]]:
    vendor = "gemini"
    usage = {"promptTokenCount": step.input_tokens, "candidatesTokenCount": step.output_tokens,
             "totalTokenCount": step.input_tokens + step.output_tokens}
    if step.kind == "tool":
        name, schema = _shell_tool(body, vendor)
        parts: list[dict[str, Any]] = [{"functionCall": {"name": name, "args": _shell_arguments(schema, step.command)}}]
        return [(None, {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                                        "index": 0}], "usageMetadata": usage, "modelVersion": model or "stub"})]
    if not step.text:  # an empty answer: a finished candidate with no text
        return [(None, {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP",
                                        "index": 0}], "usageMetadata": usage, "modelVersion": model or "stub"})]
    half = max(1, len(step.text) // 2)
    first, rest = step.text[:half], step.text[half:]
    return [
        (None, {"candidates": [{"content": {"role": "model", "parts": [{"text": first}]}, "index": 0}],
                "modelVersion": model or "stub"}),
        (None, {"candidates": [{"content": {"role": "model", "parts": [{"text": rest}]}, "finishReason": "STOP",
                                "index": 0}], "usageMetadata": usage, "modelVersion": model or "stub"})]


def _gemini_whole(step: Step, body: Any, model: str) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": step.text or "stub"}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}}


def _reset(step: Step) -> datetime:
    return (datetime.now(UTC) + timedelta(seconds=step.reset_in)).replace(microsecond=0)


ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 503: "api_error",
                    529: "overloaded_error"}


def _anthropic_error(step: Step) -> tuple[int, dict[str, str], dict[str, Any]]:
    kind = ANTHROPIC_ERRORS.get(step.status, "api_error")
    messages = {401: "invalid x-api-key", 403: "Your API key does not have permission to use the specified resource.",
                429: "Number of request tokens has exceeded your per-minute rate limit", 529: "Overloaded"}
    headers: dict[str, str] = {"request-id": "req_stub"}
    if step.status == 429:
        reset = _reset(step)
        headers.update({
            "retry-after": str(int(step.retry_after)),
            "anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": reset.isoformat().replace("+00:00", "Z"),
            "anthropic-ratelimit-tokens-limit": "40000", "anthropic-ratelimit-tokens-remaining": "0",
            "anthropic-ratelimit-tokens-reset": reset.isoformat().replace("+00:00", "Z"),
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-reset": str(int(reset.timestamp())),
        })
    return step.status, headers, {"type": "error", "error": {"type": kind,
                                                             "message": messages.get(step.status, "Internal server error")}}


def _openai_error(step: Step) -> tuple[int, dict[str, str], dict[str, Any]]:
    status = 503 if step.status == 529 else step.status
    headers: dict[str, str] = {"x-request-id": "req_stub"}
    if status == 429:
        seconds = int(step.reset_in)
        headers.update({"retry-after": str(int(step.retry_after)), "x-ratelimit-limit-requests": "500",
                        "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": f"{seconds}s",
                        "x-ratelimit-limit-tokens": "30000", "x-ratelimit-remaining-tokens": "0",
                        "x-ratelimit-reset-tokens": f"{seconds}s"})
        body = {"error": {"message": f"Rate limit reached for requests. Please try again in {seconds}s.",
                          "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
    elif status == 401:
        body = {"error": {"message": "Incorrect API key provided: sk-stub. You can find your API key at "
                                     "https://platform.openai.com/account/api-keys.",
                          "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
    elif status == 403:
        body = {"error": {"message": "You are not allowed to sample from this model", "type": "invalid_request_error",
                          "param": None, "code": "model_not_allowed"}}
    elif status == 503:
        body = {"error": {"message": "The server is overloaded. Please try again later.", "type": "server_error",
                          "param": None, "code": "server_is_overloaded"}}
    else:
        body = {"error": {"message": "The server had an error while processing your request.", "type": "server_error",
                          "param": None, "code": None}}
    return status, headers, body


GEMINI_STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                   429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def _gemini_error(step: Step) -> tuple[int, dict[str, str], dict[str, Any]]:
    status = 503 if step.status == 529 else step.status
    messages = {400: "API key not valid. Please pass a valid API key.",
                401: "Request had invalid authentication credentials.",
                403: "Method doesn't allow unregistered callers (callers without established identity).",
                429: "You exceeded your current quota, please check your plan and billing details.",
                500: "An internal error has occurred. Please retry or report in "
                     "https://developers.generativeai.google/guide/troubleshooting",
                503: "The model is overloaded. Please try again later."}
    error: dict[str, Any] = {"code": status, "message": messages.get(status, "error"),
                             "status": GEMINI_STATUSES.get(status, "UNKNOWN")}
    if status == 429:  # Gemini names no reset time, only how long to wait: `retry_after`
        seconds = int(step.retry_after)
        error["message"] += f" Please retry in {seconds}.0s."
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{seconds}s"}]
    return status, {}, {"error": error}


_EVENTS = {"anthropic": _anthropic_events, "openai": _openai_events, "gemini": _gemini_events}
_WHOLE = {"anthropic": _anthropic_whole, "openai": _openai_whole, "gemini": _gemini_whole}
_ERRORS = {"anthropic": _anthropic_error, "openai": _openai_error, "gemini": _gemini_error}
