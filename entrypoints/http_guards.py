"""The guards every li server on this machine wears (design.md section 9): one ASGI middleware.

Shared by `li serve` (the page) and `li mcp --http`. It holds the whole rule, so a route never
checks a token, a Host or an Origin of its own:

- bind only to loopback or a 0600 Unix socket (`loopback_socket`, `unix_socket`);
- a random token, printed once, kept 0600 in the store (`new_token`, `write_token_file`), accepted
  as `Authorization: Bearer <token>`; a browser exchanges it once (`?token=`) for an HttpOnly,
  SameSite=Strict cookie and is redirected to the same path without it; no credentials -> 401;
- the Host header must be a loopback name with the server's port -> else 403 (DNS rebinding);
- an unsafe method authenticated by the cookie (ambient) needs an Origin equal to the server's own
  and a CSRF token (header `X-CSRF-Token` or form field `csrf_token`); authenticated by the bearer
  token, a missing Origin is allowed but a foreign one is refused (the MCP spec's rule) -> 403;
- no CORS headers ever; CSP with no inline script, nosniff, frame-ancestors none, same-origin
  referrers (no-referrer would make Chromium send `Origin: null` on the page's own form POSTs).

Standard library only at import time: the servers import Starlette/uvicorn themselves.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import os
import secrets
import socket
import stat
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
TOKEN_PARAM = "token"
MAX_FORM_BYTES = 256 * 1024  # a form body read to find the CSRF field; a larger one is refused

CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; object-src 'none'; frame-ancestors 'none'; "
                           "base-uri 'none'; form-action 'self'")
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


class NotLoopback(ValueError):
    """A bind address that is not this machine's loopback: li never serves the network."""


def new_token() -> str:
    """A fresh random token (256 bits), printed once and kept in a 0600 file."""
    return secrets.token_urlsafe(32)


def write_token_file(path: str, token: str) -> None:
    """Write `token` to `path` as a 0600 file, atomically (a reader never sees half of it)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, mode=0o700, exist_ok=True)
    temp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(token + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def refuse_non_loopback(host: str) -> str:
    """The literal loopback address to bind for `host`, or NotLoopback."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        raise NotLoopback(f"{host!r} is not a loopback address; li serves only 127.0.0.1, ::1 or a Unix socket") from None
    if str(address) not in ("127.0.0.1", "::1"):
        raise NotLoopback(f"{host!r} is not a loopback address; li serves only 127.0.0.1, ::1 or a Unix socket")
    return str(address)


def loopback_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on loopback (port 0: a free one); a non-loopback host is refused."""
    address = refuse_non_loopback(host)
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(128)
        sock.set_inheritable(False)
    except OSError:
        sock.close()
        raise
    return sock


def unix_socket(path: str) -> socket.socket:
    """A listening Unix socket at `path`, 0600 from its creation (never world-connectable, not even briefly)."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)  # a stale socket of an earlier server; any other file is left to fail the bind
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        sock.bind(path)
    except OSError:
        sock.close()
        raise
    finally:
        os.umask(previous)
    os.chmod(path, 0o600)
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def allowed_hosts(port: int | None) -> frozenset[str]:
    """Host header values this server answers: loopback names with its port (any form on a socket)."""
    if port is None:
        return frozenset(LOOPBACK_NAMES)
    return frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)


def _host_allowed(host: str, port: int | None) -> bool:
    if port is not None:
        return host in allowed_hosts(port)
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name in LOOPBACK_NAMES or host in LOOPBACK_NAMES


@dataclass(frozen=True)
class Guard:
    """What one server's middleware needs to know: its token, its port (None on a Unix socket), its cookie."""

    token: str
    port: int | None
    cookie_name: str = ""
    session: str = field(default_factory=new_token)  # the cookie's value: never the token itself

    @property
    def cookie(self) -> str:
        return self.cookie_name or f"li-session-{self.port or 'socket'}"

    @property
    def csrf_token(self) -> str:
        """The CSRF token a page embeds in its forms; derived from the session, so it dies with it."""
        return hmac.new(self.session.encode(), b"csrf", hashlib.sha256).hexdigest()

    def token_matches(self, offered: str) -> bool:
        return bool(offered) and hmac.compare_digest(offered.encode(), self.token.encode())

    def session_matches(self, offered: str) -> bool:
        return bool(offered) and hmac.compare_digest(offered.encode(), self.session.encode())

    def csrf_matches(self, offered: str) -> bool:
        return bool(offered) and hmac.compare_digest(offered.encode(), self.csrf_token.encode())


def _headers(scope: Scope) -> dict[str, str]:
    """Request headers by lower-case name; a repeated header keeps its first value."""
    found: dict[str, str] = {}
    for name, value in scope.get("headers") or ():
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def _cookie(headers: dict[str, str], name: str) -> str:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:
        return ""
    morsel = jar.get(name)
    return morsel.value if morsel is not None else ""


def _bearer(headers: dict[str, str]) -> str:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _with_security_headers(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The response's headers without any CORS header and with ours (ours win over the app's)."""
    ours = {name for name, _ in SECURITY_HEADERS}
    kept = [(name, value) for name, value in headers
            if not name.lower().startswith(b"access-control-") and name.lower() not in ours]
    return kept + list(SECURITY_HEADERS)


async def _plain(send: Send, status: int, text: str, extra: Iterable[tuple[bytes, bytes]] = ()) -> None:
    body = (text + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
               *extra]
    await send({"type": "http.response.start", "status": status, "headers": _with_security_headers(headers)})
    await send({"type": "http.response.body", "body": body})


class GuardMiddleware:
    """Wrap an ASGI app in every guard; routes behind it see only authenticated, same-origin requests.

    `scope["state"]["li_auth"]` tells the app how the request was authenticated ("bearer" or "cookie").
    """

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})  # no WebSocket here: SSE serves live updates
            return
        headers = _headers(scope)
        host = headers.get("host", "")
        if not _host_allowed(host, self.guard.port):
            await _plain(send, 403, "forbidden: the Host header is not this machine's loopback (DNS rebinding?)")
            return
        method = scope["method"].upper()
        query = scope.get("query_string", b"").decode("latin-1")
        if method == "GET" and TOKEN_PARAM in dict(parse_qsl(query)):
            await self._exchange(scope, query, send)
            return
        auth = self._authenticated(headers)
        if auth is None:
            await _plain(send, 401, "unauthorized: open the URL li printed, or send Authorization: Bearer <token>",
                         [(b"www-authenticate", b'Bearer realm="li"')])
            return
        if method not in SAFE_METHODS:
            refusal, receive = await self._unsafe_refusal(auth, host, headers, receive)
            if refusal:
                await _plain(send, 403, f"forbidden: {refusal}")
                return
        scope.setdefault("state", {})["li_auth"] = auth
        await self.app(scope, receive, self._secured(send))

    def _authenticated(self, headers: dict[str, str]) -> str | None:
        if self.guard.token_matches(_bearer(headers)):
            return "bearer"
        if self.guard.session_matches(_cookie(headers, self.guard.cookie)):
            return "cookie"
        return None

    async def _exchange(self, scope: Scope, query: str, send: Send) -> None:
        """`?token=`: a right token becomes the cookie and a redirect to the same path without it."""
        pairs = parse_qsl(query, keep_blank_values=True)
        offered = next((value for name, value in pairs if name == TOKEN_PARAM), "")
        if not self.guard.token_matches(offered):
            await _plain(send, 401, "unauthorized: that token is not this server's")
            return
        rest = urlencode([(name, value) for name, value in pairs if name != TOKEN_PARAM])
        location = (scope.get("path") or "/") + (f"?{rest}" if rest else "")
        if not location.startswith("/") or location.startswith("//"):
            location = "/"
        cookie = f"{self.guard.cookie}={self.guard.session}; HttpOnly; SameSite=Strict; Path=/"
        await _plain(send, 303, "see other", [(b"location", location.encode("latin-1")),
                                              (b"set-cookie", cookie.encode("latin-1"))])

    async def _unsafe_refusal(self, auth: str, host: str, headers: dict[str, str],
                              receive: Receive) -> tuple[str, Receive]:
        """Why an unsafe request is refused ("" when it is not), and the receive that replays its body."""
        origin = headers.get("origin")
        own = f"http://{host}"
        if origin is not None and origin != own:
            return f"Origin {origin!r} is not this server's own ({own})", receive
        if auth == "bearer":
            return "", receive
        if origin is None:
            return "an unsafe request from a browser must carry its Origin", receive
        if self.guard.csrf_matches(headers.get(CSRF_HEADER, "")):
            return "", receive
        body, receive = await _buffered(receive)
        if body is None:
            return "the form is too large", receive
        is_form = headers.get("content-type", "").split(";")[0].strip() == "application/x-www-form-urlencoded"
        offered = dict(parse_qsl(body.decode("latin-1"))).get(CSRF_FIELD, "") if is_form else ""
        return ("" if self.guard.csrf_matches(offered) else "the CSRF token is missing or wrong"), receive

    def _secured(self, send: Send) -> Send:
        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = _with_security_headers(message.get("headers") or ())
            await send(message)
        return secured


async def _buffered(receive: Receive) -> tuple[bytes | None, Receive]:
    """Read the whole request body (at most MAX_FORM_BYTES) and a receive that hands it to the app again."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return None, receive
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay
