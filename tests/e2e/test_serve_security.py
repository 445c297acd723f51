"""`li serve` as an attacker meets it: one test per guard of issue 41 item 5, on the real server."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serving import Served, over_socket, wait_until
from tests.support import run_li

PYTHON = "/usr/bin/python3"  # the system's: another user can run it


@pytest.fixture
def served(li_home: str) -> Iterator[Served]:
    server = Served(li_home)
    yield server
    server.stop()


def submitted(home: str, *argv: str) -> str:
    result = run_li("agent", "--detach", *argv, "--machine", home=home)
    envelope = json.loads(result.stdout)
    assert envelope["ok"], envelope
    return str(envelope["data"]["run_id"])


def ended(home: str, run_id: str) -> dict[str, object]:
    def look() -> dict[str, object] | None:
        data = json.loads(run_li("job", "status", run_id, "--machine", home=home).stdout)["data"]
        return data if data["terminal"] else None
    found: dict[str, object] = wait_until(look)
    return found


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::"])
def test_a_non_loopback_bind_is_refused(li_home: str, host: str) -> None:
    result = run_li("serve", "--host", host, home=li_home, timeout=30)
    assert result.returncode != 0
    assert "loopback" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not os.path.exists(os.path.join(li_home, "serve.token"))


def test_without_the_cookie_or_token_it_is_401(served: Served) -> None:
    for path in ("/", "/events", "/runs/20990101T000000-abcdef", "/assets/serve.js"):
        status, _, body = served.request("GET", path)
        assert status == 401, path
        assert b"<html" not in body
    assert served.request("GET", "/", {"Authorization": "Bearer wrong"})[0] == 401
    assert served.request("GET", "/?token=wrong")[0] == 401


def test_the_token_file_is_0600_and_the_url_token_becomes_an_httponly_strict_cookie(served: Served) -> None:
    path = os.path.join(served.home, "serve.token")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert Path(path).read_text().strip() == served.token
    status, headers, _ = served.request("GET", f"/?token={served.token}&label=x")
    assert status == 303 and headers["location"] == "/?label=x"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and served.token not in cookie
    assert served.request("GET", "/", {"Cookie": cookie.split(";")[0]})[0] == 200
    assert served.request("GET", "/", served.bearer())[0] == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}", "127.0.0.1:1"])
def test_a_dns_rebinding_host_header_is_403(served: Served, host: str) -> None:
    status, _, body = served.request("GET", "/", served.bearer(), host=host.format(port=served.port))
    assert status == 403
    assert b"runs" not in body


def test_a_cross_origin_form_post_is_403_and_does_nothing(served: Served, li_home: str) -> None:
    run_id = submitted(li_home, "sh", "sleep 30")
    cookie = served.cookie()
    page = served.request("GET", f"/runs/{run_id}/confirm/kill", {"Cookie": cookie})[2].decode()
    csrf = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    form = f"csrf_token={csrf}".encode()
    headers = {"Cookie": cookie, "Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"}
    status, _, _ = served.request("POST", f"/runs/{run_id}/kill", headers, form)
    assert status == 403
    data = json.loads(run_li("job", "status", run_id, "--machine", home=li_home).stdout)["data"]
    assert data["terminal"] is False  # not killed
    # the same form from the page's own origin is the page's own action: it kills
    status, headers_back, _ = served.request("POST", f"/runs/{run_id}/kill", {**headers, "Origin": served.origin},
                                             form)
    assert status == 303 and headers_back["location"].startswith(f"/runs/{run_id}")
    assert ended(li_home, run_id)["outcome"] == "cancelled"


def test_a_post_without_origin_is_403(served: Served, li_home: str) -> None:
    run_id = submitted(li_home, "sh", "sleep 30")
    cookie = served.cookie()
    page = served.request("GET", f"/runs/{run_id}/confirm/kill", {"Cookie": cookie})[2].decode()
    csrf = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    status, _, _ = served.request("POST", f"/runs/{run_id}/kill", {
        "Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}, f"csrf_token={csrf}".encode())
    assert status == 403
    # and with its Origin but without the CSRF token
    status, _, _ = served.request("POST", f"/runs/{run_id}/kill", {
        "Cookie": cookie, "Origin": served.origin, "Content-Type": "application/x-www-form-urlencoded"}, b"x=1")
    assert status == 403
    data = json.loads(run_li("job", "status", run_id, "--machine", home=li_home).stdout)["data"]
    assert data["terminal"] is False
    run_li("job", "kill", run_id, home=li_home)


def test_every_answer_carries_csp_nosniff_and_frame_ancestors_and_no_cors(served: Served) -> None:
    for path, headers in (("/", served.bearer()), ("/assets/serve.js", served.bearer()), ("/", {})):
        status, answer, _ = served.request("GET", path, {**headers, "Origin": "http://evil.example"})
        csp = answer["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
        assert answer["x-content-type-options"] == "nosniff"
        assert not [name for name in answer if name.startswith("access-control-")]
    status, answer, body = served.request("GET", "/", served.bearer())
    assert b"<script>" not in body and b'<script src="/assets/serve.js"' in body  # no inline script


def test_a_script_tag_in_a_console_or_a_label_is_shown_as_text(served: Served, li_home: str) -> None:
    run_id = submitted(li_home, "sh", "echo '<script>alert(1)</script>'; echo '<img src=x onerror=alert(2)>'",
                       "--label", "a<b>c")
    ended(li_home, run_id)
    _, _, board = wait_until(lambda: (lambda r: r if run_id.encode() in r[2] else None)(
        served.request("GET", "/", served.bearer())))
    assert b"a&lt;b&gt;c" in board and b"<b>" not in board
    _, _, page = served.request("GET", f"/runs/{run_id}", served.bearer())
    assert b"<script>alert" not in page and b"<img src=x" not in page
    status, _, events = served.request("GET", f"/runs/{run_id}/events?from=0", served.bearer())
    assert status == 200
    consoles = [json.loads(line[6:]) for line in events.decode().splitlines() if line.startswith("data: {\"text\"")]
    assert "<script>alert(1)</script>" in "".join(c["text"] for c in consoles)  # JSON text, set as textContent


def test_on_a_unix_socket_the_socket_is_0600_and_answers_its_owner(li_home: str, tmp_path: Path) -> None:
    path = str(tmp_path / "li.sock")
    server = Served(li_home, "--socket", path)
    try:
        assert stat.S_ISSOCK(os.lstat(path).st_mode) and stat.S_IMODE(os.lstat(path).st_mode) == 0o600
        assert over_socket(path, "GET", "/", {})[0] == 401
        status, body = over_socket(path, "GET", "/", {"Authorization": f"Bearer {server.token}"})
        assert status == 200 and b"Needs you" in body
    finally:
        server.stop()
    assert not os.path.exists(path)


def test_another_local_user_cannot_connect_to_the_socket(li_home: str, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")
    folder = tempfile.mkdtemp(prefix="li-serve-", dir="/tmp")
    os.chmod(folder, 0o755)  # another user may reach the socket: only its own mode keeps them out
    path = os.path.join(folder, "li.sock")
    server = Served(li_home, "--socket", path)
    try:
        code = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
                f"try:\n s.connect({path!r})\nexcept PermissionError:\n sys.exit(7)\nsys.exit(0)")
        other = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", PYTHON, "-c", code],
                               capture_output=True, text=True, timeout=30, check=False)
        assert other.returncode == 7, other.stderr
        token = os.path.join(li_home, "serve.token")
        reader = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat", token],
                                capture_output=True, text=True, timeout=30, check=False)
        assert reader.returncode != 0 and server.token not in reader.stdout
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_an_artifact_downloads_as_bytes_never_rendered_and_nothing_outside_artifacts(
        served: Served, li_home: str) -> None:
    run_id = submitted(li_home, "sh", 'printf "<script>x</script>" > "$LI_ARTIFACTS_DIR/page.html"')
    ended(li_home, run_id)
    _, _, page = served.request("GET", f"/runs/{run_id}", served.bearer())
    assert f'href="/runs/{run_id}/artifacts/page.html" download'.encode() in page
    status, headers, body = served.request("GET", f"/runs/{run_id}/artifacts/page.html", served.bearer())
    assert status == 200 and body == b"<script>x</script>"
    assert headers["content-type"] == "application/octet-stream"
    assert headers["content-disposition"].startswith("attachment;")
    for sneaky in ("../record.json", "..%2Frecord.json", "%2E%2E/record.json", "/etc/passwd"):
        status, _, body = served.request("GET", f"/runs/{run_id}/artifacts/{sneaky}", served.bearer())
        assert status == 404 and b"run_id" not in body, sneaky


def test_a_cross_origin_approve_is_403_and_leaves_the_request_open(served: Served, li_home: str) -> None:
    """Answering a permission request is an unsafe action like kill: Origin and CSRF token."""
    from tests.e2e.test_mcp_approvals import asking

    run_id = submitted(li_home, "sh", asking("touch approved.txt"))

    def listed() -> list[dict[str, object]] | None:
        rows = json.loads(run_li("job", "approvals", "--machine", home=li_home).stdout)["data"]["approvals"]
        return [r for r in rows if r["run_id"] == run_id] or None

    (request,) = wait_until(listed)
    cookie = served.cookie()
    page = served.request("GET", f"/runs/{run_id}", {"Cookie": cookie})[2].decode()
    assert 'id="approve-a1"' in page
    csrf = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    form = f"csrf_token={csrf}&request=a1".encode()
    headers = {"Cookie": cookie, "Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"}
    for action in ("approve", "deny"):
        status, _, _ = served.request("POST", f"/runs/{run_id}/{action}", headers, form)
        assert status == 403, action
    status, _, _ = served.request("POST", f"/runs/{run_id}/approve", {**headers, "Origin": served.origin}, b"request=a1")
    assert status == 403  # its own origin, no CSRF token
    assert listed() == [request]  # still open, unanswered
    status, back, _ = served.request("POST", f"/runs/{run_id}/approve", {**headers, "Origin": served.origin}, form)
    assert status == 303 and back["location"].startswith(f"/runs/{run_id}?said=allow")
    assert ended(li_home, run_id)["outcome"] == "succeeded"
    data = json.loads(run_li("job", "status", run_id, "--machine", home=li_home).stdout)["data"]
    assert [(a["id"], a["behavior"]) for a in data["approvals"]] == [("a1", "allow")]
