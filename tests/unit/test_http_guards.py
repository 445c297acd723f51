"""The local-server guards (entrypoints/http_guards.py), sent requests the way an attacker would."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from typing import Any

import pytest

from lionrun.entrypoints.http_guards import (
    CSRF_FIELD,
    Guard,
    GuardMiddleware,
    NotLoopback,
    loopback_socket,
    new_token,
    refuse_non_loopback,
    unix_socket,
    write_token_file,
)

PORT = 8123
OWN = f"http://127.0.0.1:{PORT}"


class Reply:
    """What the guarded app answered: status, headers by name, body, and what the inner app saw."""

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes, seen: dict[str, Any]) -> None:
        self.status = status
        self.headers = {name.decode().lower(): value.decode() for name, value in headers}
        self.body = body
        self.seen = seen


def guarded(guard: Guard, inner_headers: list[tuple[bytes, bytes]] | None = None) -> GuardMiddleware:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        scope["state"]["body"] = message.get("body", b"")
        await send({"type": "http.response.start", "status": 200,
                    "headers": inner_headers or [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"inside"})
    return GuardMiddleware(app, guard)


def call(app: GuardMiddleware, method: str = "GET", path: str = "/", query: str = "",
         headers: dict[str, str] | None = None, body: bytes = b"", chunks: int = 1) -> Reply:
    sent: list[dict[str, Any]] = []
    size = -(-len(body) // chunks) or 1
    pieces = [body[start:start + size] for start in range(0, len(body), size)] or [b""]
    incoming = [{"type": "http.request", "body": piece, "more_body": index < len(pieces) - 1}
                for index, piece in enumerate(pieces)]
    scope: dict[str, Any] = {"type": "http", "method": method, "path": path, "query_string": query.encode(),
                             "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]}

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = sent[0]
    return Reply(start["status"], start["headers"], b"".join(m.get("body", b"") for m in sent[1:]),
                 scope.get("state", {}))


@pytest.fixture
def guard() -> Guard:
    return Guard(token=new_token(), port=PORT)


def with_host(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {"host": f"127.0.0.1:{PORT}", **(extra or {})}


def bearer(guard: Guard, extra: dict[str, str] | None = None) -> dict[str, str]:
    return with_host({"authorization": f"Bearer {guard.token}", **(extra or {})})


def cookie(guard: Guard, extra: dict[str, str] | None = None) -> dict[str, str]:
    return with_host({"cookie": f"other=1; {guard.cookie}={guard.session}", **(extra or {})})


# Binding


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com", "127.0.0.2", ""])
def test_a_non_loopback_bind_is_refused(host: str) -> None:
    with pytest.raises(NotLoopback):
        refuse_non_loopback(host)
    with pytest.raises(NotLoopback):
        loopback_socket(host, 0)


@pytest.mark.parametrize(("host", "address"), [("127.0.0.1", "127.0.0.1"), ("localhost", "127.0.0.1"),
                                               ("::1", "::1"), ("[::1]", "::1")])
def test_loopback_names_bind_their_literal_address(host: str, address: str) -> None:
    assert refuse_non_loopback(host) == address


def test_a_loopback_socket_listens_on_loopback_only() -> None:
    sock = loopback_socket("127.0.0.1", 0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
        assert sock.getsockname()[1] > 0
    finally:
        sock.close()


def test_a_unix_socket_is_0600_and_another_user_cannot_connect(tmp_path: Any) -> None:
    path = str(tmp_path / "serve.sock")
    sock = unix_socket(path)
    try:
        mode = os.lstat(path).st_mode
        assert stat.S_ISSOCK(mode)
        assert stat.S_IMODE(mode) == 0o600
        client = socket.socket(socket.AF_UNIX)
        client.connect(path)  # its owner can
        client.close()
    finally:
        sock.close()


def test_a_stale_socket_is_replaced_but_a_regular_file_is_not(tmp_path: Any) -> None:
    path = str(tmp_path / "serve.sock")
    unix_socket(path).close()
    unix_socket(path).close()  # the stale socket of an earlier server is replaced
    regular = tmp_path / "file"
    regular.write_text("keep")
    with pytest.raises(OSError):
        unix_socket(str(regular))
    assert regular.read_text() == "keep"


# The token file


def test_the_token_file_is_private_and_read_back(tmp_path: Any) -> None:
    path = str(tmp_path / "home" / "serve.token")
    token = new_token()
    write_token_file(path, token)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as handle:
        assert handle.read().strip() == token
    assert len(token) >= 40 and new_token() != token
    assert os.listdir(tmp_path / "home") == ["serve.token"]  # no temp file left behind


# Host: DNS rebinding


@pytest.mark.parametrize("host", ["evil.example:8123", "127.0.0.1:9999", "127.0.0.1", "localhost.evil.com:8123",
                                  "", "0.0.0.0:8123", "192.168.1.2:8123"])
def test_a_foreign_host_header_is_403_even_with_the_token(guard: Guard, host: str) -> None:
    reply = call(guarded(guard), headers={"host": host, "authorization": f"Bearer {guard.token}"})
    assert reply.status == 403
    assert reply.body != b"inside"


@pytest.mark.parametrize("host", ["127.0.0.1:8123", "localhost:8123", "[::1]:8123"])
def test_loopback_names_with_the_port_are_served(guard: Guard, host: str) -> None:
    reply = call(guarded(guard), headers={"host": host, "authorization": f"Bearer {guard.token}"})
    assert reply.status == 200 and reply.body == b"inside"


def test_on_a_unix_socket_any_loopback_name_is_a_good_host() -> None:
    guard = Guard(token="t", port=None)
    for host in ("localhost", "127.0.0.1:80", "[::1]"):
        assert call(guarded(guard), headers={"host": host, "authorization": "Bearer t"}).status == 200
    assert call(guarded(guard), headers={"host": "evil.example", "authorization": "Bearer t"}).status == 403


# Authentication


def test_no_credentials_is_401(guard: Guard) -> None:
    reply = call(guarded(guard), headers=with_host())
    assert reply.status == 401 and reply.body != b"inside"


@pytest.mark.parametrize("offered", ["Bearer wrong", "Bearer ", "Basic abc", "bearer"])
def test_a_wrong_bearer_is_401(guard: Guard, offered: str) -> None:
    assert call(guarded(guard), headers=with_host({"authorization": offered})).status == 401


def test_the_token_as_a_cookie_value_is_not_a_session(guard: Guard) -> None:
    reply = call(guarded(guard), headers=with_host({"cookie": f"{guard.cookie}={guard.token}"}))
    assert reply.status == 401


def test_the_bearer_token_and_the_cookie_each_let_a_read_through(guard: Guard) -> None:
    assert call(guarded(guard), headers=bearer(guard)).seen["li_auth"] == "bearer"
    assert call(guarded(guard), headers=cookie(guard)).seen["li_auth"] == "cookie"


def test_the_token_in_the_url_becomes_an_httponly_strict_cookie_and_leaves_the_url(guard: Guard) -> None:
    reply = call(guarded(guard), path="/runs/abc", query=f"token={guard.token}&group=done", headers=with_host())
    assert reply.status == 303
    assert reply.headers["location"] == "/runs/abc?group=done"
    set_cookie = reply.headers["set-cookie"]
    assert set_cookie.startswith(f"{guard.cookie}={guard.session};")
    assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie and "Path=/" in set_cookie
    assert guard.token not in set_cookie


def test_a_wrong_token_in_the_url_is_401_and_sets_no_cookie(guard: Guard) -> None:
    reply = call(guarded(guard), query="token=nope", headers=with_host())
    assert reply.status == 401 and "set-cookie" not in reply.headers


def test_the_exchange_needs_a_good_host_too(guard: Guard) -> None:
    reply = call(guarded(guard), query=f"token={guard.token}", headers={"host": "evil.example:8123"})
    assert reply.status == 403 and "set-cookie" not in reply.headers


# Unsafe methods: Origin and CSRF


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_a_cookie_post_without_origin_is_403(guard: Guard, method: str) -> None:
    reply = call(guarded(guard), method, headers=cookie(guard, {"x-csrf-token": guard.csrf_token}))
    assert reply.status == 403 and reply.body != b"inside"


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:8123", "https://127.0.0.1:8123",
                                    "http://127.0.0.1:9999"])
def test_a_cross_origin_form_post_is_403(guard: Guard, origin: str) -> None:
    body = f"{CSRF_FIELD}={guard.csrf_token}".encode()
    reply = call(guarded(guard), "POST", headers=cookie(guard, {
        "origin": origin, "content-type": "application/x-www-form-urlencoded"}), body=body)
    assert reply.status == 403 and reply.body != b"inside"


def test_a_same_origin_post_without_a_csrf_token_is_403(guard: Guard) -> None:
    reply = call(guarded(guard), "POST", headers=cookie(guard, {"origin": OWN}), body=b"x=1")
    assert reply.status == 403


def test_a_same_origin_post_with_a_wrong_csrf_token_is_403(guard: Guard) -> None:
    reply = call(guarded(guard), "POST", headers=cookie(guard, {
        "origin": OWN, "content-type": "application/x-www-form-urlencoded"}), body=b"csrf_token=guess")
    assert reply.status == 403


def test_a_same_origin_form_with_its_csrf_field_goes_through_with_its_body_intact(guard: Guard) -> None:
    body = f"text=hello&{CSRF_FIELD}={guard.csrf_token}".encode()
    reply = call(guarded(guard), "POST", headers=cookie(guard, {
        "origin": OWN, "content-type": "application/x-www-form-urlencoded"}), body=body, chunks=2)
    assert reply.status == 200
    assert reply.seen["body"] == body  # the app reads the same body the guard read


def test_a_same_origin_post_with_the_csrf_header_goes_through(guard: Guard) -> None:
    reply = call(guarded(guard), "POST", headers=cookie(guard, {"origin": OWN, "x-csrf-token": guard.csrf_token}))
    assert reply.status == 200


def test_the_csrf_field_counts_only_in_a_urlencoded_form(guard: Guard) -> None:
    body = f"{CSRF_FIELD}={guard.csrf_token}".encode()
    reply = call(guarded(guard), "POST", headers=cookie(guard, {"origin": OWN, "content-type": "text/plain"}),
                 body=body)
    assert reply.status == 403


def test_an_oversized_form_is_refused(guard: Guard) -> None:
    body = b"a=" + b"x" * (300 * 1024)
    reply = call(guarded(guard), "POST", headers=cookie(guard, {
        "origin": OWN, "content-type": "application/x-www-form-urlencoded"}), body=body)
    assert reply.status == 403


def test_a_bearer_client_may_omit_origin_but_not_send_a_foreign_one(guard: Guard) -> None:
    assert call(guarded(guard), "POST", headers=bearer(guard)).status == 200
    assert call(guarded(guard), "POST", headers=bearer(guard, {"origin": OWN})).status == 200
    assert call(guarded(guard), "POST", headers=bearer(guard, {"origin": "http://evil.example"})).status == 403


def test_the_csrf_token_is_tied_to_the_session() -> None:
    one, two = Guard(token="t", port=PORT), Guard(token="t", port=PORT)
    assert one.csrf_token != two.csrf_token
    reply = call(guarded(one), "POST", headers=cookie(one, {"origin": OWN, "x-csrf-token": two.csrf_token}))
    assert reply.status == 403


# Response headers


def test_every_response_carries_the_security_headers(guard: Guard) -> None:
    for reply in (call(guarded(guard), headers=bearer(guard)), call(guarded(guard), headers=with_host()),
                  call(guarded(guard), headers={"host": "evil:1"})):
        csp = reply.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["referrer-policy"] == "same-origin"


def test_cors_headers_from_the_app_are_removed_and_its_csp_cannot_loosen_ours(guard: Guard) -> None:
    app = guarded(guard, [(b"access-control-allow-origin", b"*"), (b"Access-Control-Allow-Credentials", b"true"),
                          (b"content-security-policy", b"script-src *"), (b"content-type", b"text/plain")])
    reply = call(app, headers=bearer(guard))
    assert not [name for name in reply.headers if name.startswith("access-control-")]
    assert reply.headers["content-security-policy"].startswith("default-src 'self'")


def test_a_websocket_is_closed_unread(guard: Guard) -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    asyncio.run(guarded(guard)({"type": "websocket", "headers": []}, receive, send))
    assert sent == [{"type": "websocket.close", "code": 1008}]
