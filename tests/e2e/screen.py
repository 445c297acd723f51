"""What a person sees: `li` under a real pseudo-terminal of a chosen size, its output played into a
terminal emulator (pyte) that keeps the lines scrolled off the top."""

from __future__ import annotations

import os
from typing import Any

import pexpect
import pyte

from tests.support import li_bin


class Terminal:
    """One `li` command on a `rows` x `columns` terminal; `lines()` is the screen, history included."""

    def __init__(self, argv: list[str], home: str, rows: int, columns: int, timeout: float = 60,
                 env: dict[str, str] | None = None) -> None:
        self.rows, self.columns = rows, columns
        self.screen = pyte.HistoryScreen(columns, rows, history=10_000)
        self.stream = pyte.ByteStream(self.screen)
        environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "LI_NOTIFY_COMMAND", "COLUMNS",
                                                                         "LINES")}
        environment.update({"LI_HOME": home, "TERM": "xterm-256color", **(env or {})})
        self.child = pexpect.spawn(li_bin(), argv, env=environment, dimensions=(rows, columns), timeout=timeout)
        self.raw = b""

    def pump(self, seconds: float = 0.2) -> None:
        """Feed whatever the program wrote within `seconds` to the emulator."""
        try:
            while True:
                chunk = self.child.read_nonblocking(65536, timeout=seconds)
                self.raw += chunk
                self.stream.feed(chunk)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:
            return

    def until(self, predicate: Any, timeout: float = 30) -> None:
        """Pump until `predicate(self)` holds (fails the test when it never does)."""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.1)
            if predicate(self):
                return
            if not self.child.isalive():
                self.pump(0.1)
                if predicate(self):
                    return
        raise AssertionError("the screen never showed what was expected:\n" + "\n".join(self.lines()))

    def finish(self) -> int:
        """Read to the end; the exit status as a shell reports it."""
        while self.child.isalive() or True:
            try:
                chunk = self.child.read_nonblocking(65536, timeout=60)
            except pexpect.EOF:
                break
            self.raw += chunk
            self.stream.feed(chunk)
        self.child.close()
        if self.child.signalstatus is not None:
            return 128 + int(self.child.signalstatus)
        return int(self.child.exitstatus)

    def display(self) -> list[str]:
        """The visible screen, trailing blanks dropped."""
        return [line.rstrip() for line in self.screen.display]

    def lines(self) -> list[str]:
        """Everything on the screen and everything that scrolled off its top, in order."""
        history = ["".join(line[x].data for x in range(self.columns)).rstrip() for line in self.screen.history.top]
        lines = history + self.display()
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def text(self) -> str:
        return "\n".join(self.lines())
