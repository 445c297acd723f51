"""Debian's headless Chromium, driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`).

No browser library and no websocket: Chromium reads commands on fd 3 and writes answers and events
on fd 4, each a JSON message ended by a NUL byte. One page target, attached in flat mode.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest


def chromium() -> str:
    """Debian's `chromium` (tools/chromium.sh installs it); skip without it — but fail in CI."""
    path = shutil.which("chromium")
    if path:
        return path
    reason = "Debian's chromium is not installed (tools/chromium.sh installs it)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason}; CI must run the browser test, not skip it")
    pytest.skip(reason)


class Browser:
    """One headless Chromium with one page; `evaluate`, `navigate`, `wait_for`, `screenshot`."""

    def __init__(self, workdir: Path) -> None:
        binary = chromium()
        profile = Path(tempfile.mkdtemp(prefix="chromium-profile-", dir=workdir))
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        argv = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
                "--disable-extensions", "--disable-background-networking", "--disable-sync",
                "--disable-component-update", "--hide-scrollbars", "--remote-debugging-pipe",
                f"--user-data-dir={profile}", "about:blank"]
        shell = f'exec "$@" 3<&{to_browser_r} 4>&{from_browser_w}'
        self.process = subprocess.Popen(["bash", "-c", shell, "bash", *argv], pass_fds=(to_browser_r, from_browser_w),
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=open(workdir / "chromium.log", "wb"),  # noqa: SIM115
                                        env={**os.environ, "HOME": str(workdir)})
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                data = os.read(self._from_browser, 1 << 16)
            except OSError:
                data = b""
            if not data:
                with self._cond:
                    self._cond.notify_all()
                return
            buffer += data
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                with self._cond:
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self.events.append(message)
                    self._cond.notify_all()

    def send(self, method: str, session: str | None = None, timeout: float = 30, **params: Any) -> dict[str, Any]:
        with self._cond:
            self._next += 1
            ident = self._next
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while ident not in self._answers:
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    raise AssertionError(f"Chromium did not answer {method}")
                self._cond.wait(left)
            answer = self._answers.pop(ident)
        if "error" in answer:
            raise AssertionError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self.send(method, session=self.session, **params)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def navigate(self, url: str, timeout: float = 20) -> None:
        self.call("Page.navigate", url=url)
        time.sleep(0.05)
        self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'", timeout)

    def wait_for(self, expression: str, timeout: float = 10, every: float = 0.02) -> float:
        """Poll `expression` until it is truthy; the seconds it took."""
        start = time.monotonic()
        while True:
            try:
                if self.evaluate(expression):
                    return time.monotonic() - start
            except AssertionError:
                pass  # a page in the middle of navigating
            if time.monotonic() - start > timeout:
                raise AssertionError(f"not within {timeout}s: {expression}\n{self.text()[:3000]}")
            time.sleep(every)

    def text(self) -> str:
        try:
            return str(self.evaluate("document.body ? document.body.innerText : ''"))
        except AssertionError:
            return ""

    def screenshot(self, path: str, width: int, height: int, mobile: bool = False) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=mobile)
        time.sleep(0.2)
        data = self.call("Page.captureScreenshot", format="png")["data"]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(AssertionError, OSError):
            self.send("Browser.close", timeout=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
