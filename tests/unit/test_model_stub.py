"""The model stub the real agent CLIs are pointed at (tests/model_stub.py): each vendor's wire shape."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.model_stub import (
    ModelStub,
    cut,
    empty,
    error,
    hang,
    overloaded,
    rate_limited,
    refused_url,
    text,
    tool,
)

BASH_TOOL = {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}
CODEX_TOOL = {"type": "function", "name": "exec_command",
              "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}
GEMINI_TOOLS = [{"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": {
    "type": "object", "properties": {"command": {"type": "string"}}}}]}]

REQUESTS = {
    "anthropic": ("/v1/messages?beta=true", {"model": "claude-x", "stream": True, "tools": [BASH_TOOL],
                                              "messages": [{"role": "user", "content": "hi"}]}),
    "openai": ("/v1/responses", {"model": "gpt-x", "stream": True, "tools": [CODEX_TOOL], "input": []}),
    "gemini": ("/v1beta/models/gemini-x:streamGenerateContent?alt=sse", {"contents": [], "tools": GEMINI_TOOLS}),
}


def post(stub: ModelStub, vendor: str, body: dict[str, Any] | None = None, path: str | None = None,
         timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    default_path, default_body = REQUESTS[vendor]
    request = urllib.request.Request(stub.url + (path or default_path), data=json.dumps(body or default_body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as failed:
        return failed.code, {k.lower(): v for k, v in failed.headers.items()}, failed.read()


def events(raw: bytes) -> list[tuple[str | None, dict[str, Any]]]:
    """The SSE events of a whole stream, each (event name or None, parsed data)."""
    found = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((lines.get("event"), json.loads(lines["data"])))
    return found


@pytest.mark.parametrize("vendor", ["anthropic", "openai", "gemini"])
def test_a_text_answer_streams_in_the_vendors_events(model_stub: ModelStub, vendor: str) -> None:
    model_stub.script(text("hello there"))
    status, headers, raw = post(model_stub, vendor)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    stream = events(raw)
    if vendor == "anthropic":
        assert [name for name, _ in stream] == ["message_start", "content_block_start", "content_block_delta",
                                                "content_block_stop", "message_delta", "message_stop"]
        assert stream[2][1]["delta"] == {"type": "text_delta", "text": "hello there"}
        assert stream[4][1]["delta"]["stop_reason"] == "end_turn" and stream[4][1]["usage"]["output_tokens"] == 5
        assert stream[0][1]["message"]["model"] == "claude-x"
    elif vendor == "openai":
        assert [name for name, _ in stream] == ["response.created", "response.output_item.added",
                                                "response.output_text.delta", "response.output_item.done",
                                                "response.completed"]
        assert all(data["type"] == name for name, data in stream)
        assert stream[3][1]["item"]["content"][0]["text"] == "hello there"
        assert stream[-1][1]["response"]["usage"]["input_tokens"] == 12
    else:
        assert all(name is None for name, _ in stream)
        assert "".join(part["text"] for _, data in stream for part in data["candidates"][0]["content"]["parts"]) \
            == "hello there"
        assert stream[-1][1]["candidates"][0]["finishReason"] == "STOP"
        assert stream[-1][1]["usageMetadata"]["totalTokenCount"] == 17


@pytest.mark.parametrize("vendor, name, arguments", [
    ("anthropic", "Bash", {"command": "touch marker"}),
    ("openai", "exec_command", {"cmd": "touch marker"}),
    ("gemini", "run_shell_command", {"command": "touch marker"}),
])
def test_a_tool_call_names_the_clis_own_shell_tool_then_the_next_step_answers(
        model_stub: ModelStub, vendor: str, name: str, arguments: dict[str, Any]) -> None:
    model_stub.script(tool("touch marker"), text("all done"))
    stream = events(post(model_stub, vendor)[2])
    if vendor == "anthropic":
        assert stream[1][1]["content_block"]["name"] == name
        assert json.loads(stream[2][1]["delta"]["partial_json"]) == arguments
        assert stream[4][1]["delta"]["stop_reason"] == "tool_use"
    elif vendor == "openai":
        item = stream[-2][1]["item"]
        assert item["type"] == "function_call" and item["name"] == name
        assert json.loads(item["arguments"]) == arguments and item["call_id"]
    else:
        assert stream[0][1]["candidates"][0]["content"]["parts"][0]["functionCall"] == {"name": name,
                                                                                       "args": arguments}
    again = events(post(model_stub, vendor)[2])
    assert "all" in json.dumps(again) and "touch marker" not in json.dumps(again)
    assert [r.step.kind for r in model_stub.main_requests() if r.step] == ["tool", "text"]


def test_a_shell_tool_of_another_shape_gets_arguments_of_its_schema(model_stub: ModelStub) -> None:
    model_stub.script(tool("ls"))
    shell = {"type": "function", "name": "shell",
             "parameters": {"type": "object", "properties": {"command": {"type": "array"}}}}
    stream = events(post(model_stub, "openai", {"model": "m", "tools": [shell]})[2])
    assert json.loads(stream[-2][1]["item"]["arguments"]) == {"command": ["bash", "-lc", "ls"]}


@pytest.mark.parametrize("vendor", ["anthropic", "openai", "gemini"])
def test_an_empty_answer_is_a_finished_answer_with_no_text(model_stub: ModelStub, vendor: str) -> None:
    model_stub.script(empty())
    status, _, raw = post(model_stub, vendor)
    assert status == 200 and "stub answer" not in raw.decode()
    assert '"text": ""' in raw.decode() or "text_delta" not in raw.decode()


@pytest.mark.parametrize("vendor, status, marker", [
    ("anthropic", 401, "authentication_error"), ("anthropic", 403, "permission_error"),
    ("anthropic", 500, "api_error"), ("anthropic", 529, "overloaded_error"),
    ("openai", 401, "invalid_api_key"), ("openai", 403, "model_not_allowed"), ("openai", 500, "server_error"),
    ("openai", 503, "server_is_overloaded"),
    ("gemini", 401, "UNAUTHENTICATED"), ("gemini", 403, "PERMISSION_DENIED"), ("gemini", 500, "INTERNAL"),
    ("gemini", 503, "UNAVAILABLE"),
])
def test_errors_come_in_the_vendors_shape(model_stub: ModelStub, vendor: str, status: int, marker: str) -> None:
    model_stub.script(overloaded() if status in (503, 529) else error(status))
    got, _, raw = post(model_stub, vendor)
    assert got == status and marker in raw.decode()
    assert json.loads(raw)  # a JSON body, as each vendor's SDK expects


@pytest.mark.parametrize("vendor", ["anthropic", "openai", "gemini"])
def test_a_rate_limit_carries_the_vendors_headers_and_reset(model_stub: ModelStub, vendor: str) -> None:
    model_stub.script(rate_limited(reset_in=120, retry_after=2))
    before = datetime.now(UTC)
    status, headers, raw = post(model_stub, vendor)
    body = json.loads(raw)
    assert status == 429
    if vendor == "anthropic":
        assert headers["retry-after"] == "2" and body["error"]["type"] == "rate_limit_error"
        reset = datetime.fromisoformat(headers["anthropic-ratelimit-requests-reset"].replace("Z", "+00:00"))
        assert 110 <= (reset - before).total_seconds() <= 130
        assert abs(int(headers["anthropic-ratelimit-unified-reset"]) - reset.timestamp()) < 1
        assert headers["anthropic-ratelimit-requests-remaining"] == "0"
    elif vendor == "openai":
        assert headers["retry-after"] == "2" and headers["x-ratelimit-reset-requests"] == "120s"
        assert headers["x-ratelimit-remaining-requests"] == "0" and body["error"]["code"] == "rate_limit_exceeded"
    else:
        assert body["error"]["status"] == "RESOURCE_EXHAUSTED"
        retry = [d for d in body["error"]["details"] if d["@type"].endswith("RetryInfo")]
        assert retry == [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}]


def test_the_last_step_repeats_and_a_new_script_starts_over(model_stub: ModelStub) -> None:
    model_stub.script(error(500), text("ok"))
    assert post(model_stub, "openai")[0] == 500
    assert [post(model_stub, "openai")[0] for _ in range(3)] == [200, 200, 200]
    model_stub.script(error(401))
    assert post(model_stub, "openai")[0] == 401


def test_side_requests_take_no_step_and_fail_only_for_a_bad_key(model_stub: ModelStub) -> None:
    model_stub.script(error(500), text("main"))
    side = {"contents": [], "generationConfig": {"responseJsonSchema": {
        "type": "object", "properties": {"reasoning": {"type": "string"}, "complexity_score": {"type": "number"},
                                         "model_choice": {"type": "string", "enum": ["flash", "pro"]}}}}}
    status, _, raw = post(model_stub, "gemini", side, "/v1beta/models/flash-lite:generateContent")
    answer = json.loads(json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"])
    assert status == 200 and answer == {"reasoning": "stub", "complexity_score": 10, "model_choice": "flash"}
    assert post(model_stub, "gemini")[0] == 500  # the main turn still took the first step
    no_tools = {"model": "haiku", "max_tokens": 1, "messages": []}
    model_stub.script(error(401))
    assert post(model_stub, "anthropic", no_tools)[0] == 401
    assert [r.main for r in model_stub.requests] == [False, True, False]


def test_a_hang_answers_nothing_until_the_stub_stops() -> None:
    stub = ModelStub()
    stub.script(hang())
    connection = http.client.HTTPConnection("127.0.0.1", stub.port, timeout=10)
    connection.request("POST", "/v1/responses", body=json.dumps({"model": "m"}))
    ended: list[BaseException | int] = []

    def read() -> None:
        try:
            ended.append(connection.getresponse().status)
        except Exception as exc:  # noqa: BLE001 - whatever the client sees when the stub goes
            ended.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.5)
    assert not ended  # nothing at all came back yet
    stub.stop()
    reader.join(10)
    assert ended and not isinstance(ended[0], int)


@pytest.mark.parametrize("vendor", ["anthropic", "openai", "gemini"])
def test_a_cut_stream_stops_in_the_middle_of_an_event(model_stub: ModelStub, vendor: str) -> None:
    model_stub.script(cut())
    status, _, raw = post(model_stub, vendor)
    blocks = raw.decode().split("\n\n")
    assert status == 200 and len(blocks) == 2 and blocks[-1]
    json.loads(blocks[0].split("data: ", 1)[1])  # the first event is whole
    with pytest.raises(ValueError):
        json.loads(blocks[1].split("data: ", 1)[1])  # the second is cut mid-way


def test_nothing_listens_at_the_refused_url() -> None:
    port = int(refused_url().rsplit(":", 1)[1])
    with socket.socket() as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(("127.0.0.1", port))


def test_every_request_is_recorded_with_its_model(model_stub: ModelStub) -> None:
    post(model_stub, "anthropic")
    post(model_stub, "gemini")
    assert [(r.vendor, r.model, r.main) for r in model_stub.requests] == [("anthropic", "claude-x", True),
                                                                           ("gemini", "gemini-x", True)]
    assert model_stub.url.startswith("http://127.0.0.1:") and model_stub.port > 0
