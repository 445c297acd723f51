"""`li serve` started as a person starts it (the real executable, a real socket), for the page's tests."""

from __future__ import annotations

import http.client
import os
import select
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from tests.support import li_bin


class Served:
    """One `li serve` process: its printed URL, port and token; requests sent as any client would."""

    def __init__(self, home: str, *extra: str, env: Mapping[str, str] | None = None, cwd: str | None = None) -> None:
        full = {**os.environ, "LI_HOME": home, **(env or {})}
        full.pop("LI_NOTIFY_COMMAND", None)
        began = time.monotonic()
        self.process = subprocess.Popen([li_bin(), "serve", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, env=full, cwd=cwd, text=True)
        self.url = self._first_line(30.0).split()[0]
        self.started_in = time.monotonic() - began  # until the URL is printed: the board read once
        parts = urlsplit(self.url)
        self.port = parts.port
        self.token = parts.query.split("token=", 1)[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self.home = home

    def _first_line(self, within: float) -> str:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], within)
        if not ready:
            self.stop()
            raise AssertionError("li serve printed no URL")
        line = self.process.stdout.readline()
        if not line:
            raise AssertionError(f"li serve ended: {self.process.stderr.read() if self.process.stderr else ''}")
        return line.strip()

    def request(self, method: str, path: str, headers: Mapping[str, str] | None = None, body: bytes | None = None,
                host: str | None = None) -> tuple[int, dict[str, str], bytes]:
        """One request on a fresh connection; `host` replaces the Host header (a rebinding attack)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            connection.putheader("Host", host if host is not None else f"127.0.0.1:{self.port}")
            for name, value in (headers or {}).items():
                connection.putheader(name, value)
            if body is not None:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def stream(self, path: str, until: bytes, within: float = 10.0) -> bytes:
        """An event stream's bytes, read until `until` has come (then the connection is dropped)."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=within)
        try:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                         f"Authorization: Bearer {self.token}\r\n\r\n".encode())
            data, deadline = b"", time.monotonic() + within
            while until not in data and time.monotonic() < deadline:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data
        finally:
            sock.close()

    def bearer(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def cookie(self) -> str:
        """The session cookie, exchanged for the token as a browser does."""
        status, headers, _ = self.request("GET", f"/?token={self.token}")
        assert status == 303, status
        return headers["set-cookie"].split(";", 1)[0]

    def stop(self) -> str:
        """SIGINT as a person's Ctrl-C; what it said on stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.stderr.read() if self.process.stderr else ""


def over_socket(path: str, method: str, target: str, headers: Mapping[str, str]) -> tuple[int, bytes]:
    """One HTTP/1.1 request over a Unix socket, as `curl --unix-socket` sends it."""
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(10)
    sock.connect(path)
    lines = [f"{method} {target} HTTP/1.1", "Host: localhost", "Connection: close",
             *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    sock.sendall("\r\n".join(lines).encode())
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def wait_until(check: Any, within: float = 30.0, every: float = 0.05) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"not within {within}s")
