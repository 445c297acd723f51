"""`li mcp --http`: the same tools over Streamable HTTP on 127.0.0.1, behind http_guards (a bearer
token printed at start and kept 0600 in the store, Host and Origin checked), driven by the SDK client."""

from __future__ import annotations

import json
import os
import pathlib
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.test_mcp_server import real_li
from tests.support import li_bin

HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class Served:
    url: str
    token: str
    port: int
    home: str


@pytest.fixture
def served(tmp_path: pathlib.Path, li_home: str) -> Iterator[Served]:
    env = {**os.environ, "LI_HOME": li_home}
    proc = subprocess.Popen([li_bin(), "mcp", "--http", "--li", real_li(tmp_path / "li")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env)
    try:
        url = proc.stdout.readline().strip()  # type: ignore[union-attr]
        token = proc.stdout.readline().strip().removeprefix("token: ")  # type: ignore[union-attr]
        yield Served(url, token, int(url.rsplit(":", 1)[1].split("/")[0]), li_home)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert not os.path.exists(os.path.join(li_home, "mcp-http.token")), "the token file outlived the server"


def post(served: Served, headers: dict[str, str], body: object = HELLO) -> httpx2.Response:
    content = body if isinstance(body, str) else json.dumps(body)
    return httpx2.post(served.url, headers={**ACCEPT, **headers}, content=content, timeout=30)


def test_it_listens_on_loopback_and_keeps_its_token_private(served: Served) -> None:
    assert served.url.startswith("http://127.0.0.1:")
    path = os.path.join(served.home, "mcp-http.token")
    info = os.lstat(path)
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    assert pathlib.Path(path).read_text().strip() == served.token


def test_no_token_a_foreign_host_or_a_foreign_origin_is_refused(served: Served) -> None:
    bearer = {"Authorization": f"Bearer {served.token}"}
    assert post(served, {}).status_code == 401
    assert post(served, {"Authorization": "Bearer not-the-token"}).status_code == 401
    assert post(served, {**bearer, "Host": f"evil.example:{served.port}"}).status_code in (403, 421)
    assert post(served, {**bearer, "Host": "localhost:1"}).status_code in (403, 421)
    assert post(served, {**bearer, "Origin": "http://evil.example"}).status_code == 403
    assert post(served, {**bearer, "Origin": f"http://127.0.0.1:{served.port}"}).status_code == 200  # its own
    answered = post(served, bearer)
    assert answered.status_code == 200 and "access-control-allow-origin" not in answered.headers
    assert answered.headers["x-content-type-options"] == "nosniff"
    bad = post(served, bearer, body="{not json")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700


def test_the_sdk_client_runs_a_session_over_http_and_a_script_tag_stays_text(served: Served) -> None:
    async def session() -> None:
        with anyio.fail_after(120):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {served.token}"}) as http, \
                    Client(streamable_http_client(served.url, http_client=http), mode="legacy") as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {"submit_agent", "wait", "output", "status"} <= names
                submitted = await client.call_tool("submit_agent", {
                    "prompt": "echo '<script>alert(1)</script>'", "model": "sh"})
                run_id = submitted.structured_content["data"]["run_id"]  # type: ignore[index]
                progress: list[str | None] = []

                async def seen(value: float, total: float | None, message: str | None) -> None:
                    progress.append(message)

                waited = await client.call_tool("wait", {"run_ids": [run_id], "max_wait": 30, "poll_interval": 0.2},
                                                progress_callback=seen)
                assert waited.structured_content["classification"]["settled"], waited  # type: ignore[index]
                assert progress, "progress reaches an HTTP client too"
                output = await client.call_tool("output", {"run_id": run_id})
                text = output.content[0].text  # type: ignore[union-attr]
                assert "<script>alert(1)</script>" in json.loads(text)["data"]["console"]["value"]

    anyio.run(session)
    # the raw answer is JSON (or an SSE event of JSON), never HTML a browser would run
    answered = post(served, {"Authorization": f"Bearer {served.token}"})
    assert answered.headers["content-type"].split(";")[0] in ("application/json", "text/event-stream")
    assert "script-src 'self'" in answered.headers["content-security-policy"]


def test_a_non_loopback_port_request_is_refused_at_start(tmp_path: pathlib.Path, li_home: str) -> None:
    """--port of a port already taken: one line on stderr and a non-zero exit, never a traceback."""
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        done = subprocess.run([li_bin(), "mcp", "--http", "--port", str(taken.getsockname()[1]),
                               "--li", real_li(tmp_path / "li")], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "LI_HOME": li_home})
    finally:
        taken.close()
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("li mcp: cannot listen on 127.0.0.1:")


def test_a_port_without_http_or_out_of_range_is_refused_in_one_line(li_home: str) -> None:
    env = {**os.environ, "LI_HOME": li_home}
    for argv, said in ((["--port", "5"], "li mcp: --port needs --http"),
                       (["--http", "--port", "70000"], "li mcp: --port must be 0-65535")):
        done = subprocess.run([li_bin(), "mcp", *argv], capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 2 and done.stderr.startswith(said) and done.stderr.count("\n") == 1, done
