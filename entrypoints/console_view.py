"""A run's console shown to a person: the transcript of its agent events, or with --raw the stream itself."""

from __future__ import annotations

from typing import Any, BinaryIO

from domain.transcript import MAX_LINE, Transcript

RUNNER_PREFIX = b"li runner: "  # what the runner itself writes into the console


class ConsoleView:
    """A sink for console bytes (any chunking): rendered or raw on `out`, the runner's lines on `err`.

    With `err` None the runner's lines stay in the stream, as the console has them. Call
    `close()` once the run has ended: it shows a partial last line and the transcript's end
    (the usage line).
    """

    def __init__(self, out: BinaryIO, err: BinaryIO | None = None, rendered: bool = True,
                 cut_first_line: bool = False) -> None:
        self.out = out
        self.err = err
        self.transcript = Transcript() if rendered else None
        self._pending = b""
        self._cutting = cut_first_line  # a tail that starts inside a line: a person gets whole lines

    def write(self, chunk: bytes) -> int:
        if self._cutting:
            end = chunk.find(b"\n")
            if end < 0:
                return len(chunk)
            self._cutting, chunk = False, chunk[end + 1:]
        if self.transcript is None and self.err is None:
            self.out.write(chunk)  # the raw stream as it comes, partial lines included
            return len(chunk)
        data = self._pending + chunk
        cut = data.rfind(b"\n") + 1
        if len(data) - cut > MAX_LINE:  # a line without end: shown in pieces rather than held
            cut = len(data)
        self._pending = data[cut:]
        self._lines(data[:cut])
        return len(chunk)

    def flush(self) -> None:
        self.out.flush()
        if self.err is not None:
            self.err.flush()

    def close(self) -> None:
        """Show what is held back and the transcript's end; a second close shows nothing more."""
        rest, self._pending = self._pending, b""
        if rest:
            self._lines(rest)
        if self.transcript is not None:
            self.out.write(self.transcript.close().encode("utf-8", "surrogateescape"))
        self.flush()

    def _lines(self, data: bytes) -> None:
        for line in data.splitlines(keepends=True):
            cut = line.find(RUNNER_PREFIX) if self.err is not None else -1
            work, runner = (line, b"") if cut < 0 else (line[:cut], line[cut:])  # after output with no newline
            if work:
                self._work(work)
            if runner and self.err is not None:
                self.out.flush()
                self.err.write(runner)
                self.err.flush()
        self.out.flush()

    def _work(self, data: bytes) -> None:
        if self.transcript is None:
            self.out.write(data)
        else:
            self.out.write(self.transcript.feed(data).encode("utf-8", "surrogateescape"))


def rendered_for(providers: Any, raw: bool) -> bool:
    """A transcript is rendered unless --raw, and only for runs an agent CLI takes part in."""
    from domain.request import AGENT_PROVIDERS

    return not raw and any(p in AGENT_PROVIDERS for p in providers)
