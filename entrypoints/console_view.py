"""A run's console shown to a person: the transcript of its agent events, or with --raw the stream itself."""

from __future__ import annotations

from typing import Any, BinaryIO

from lionrun.domain.transcript import MAX_LINE, Transcript


class ConsoleView:
    """A sink for a followed run (any chunking): the console rendered or raw on `out`, li's own
    lines (the run's li log, `say`) on `err`, so that `out` carries the work's bytes alone.

    Call `close()` once the run has ended: it shows a partial last line and the transcript's end
    (the usage line).
    """

    def __init__(self, out: BinaryIO, err: BinaryIO, rendered: bool = True,
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
        if self.transcript is None:
            self.out.write(chunk)  # the raw stream as it comes, partial lines included
            return len(chunk)
        data = self._pending + chunk
        cut = data.rfind(b"\n") + 1
        if len(data) - cut > MAX_LINE:  # a line without end: shown in pieces rather than held
            cut = len(data)
        self._pending = data[cut:]
        self.out.write(self.transcript.feed(data[:cut]).encode("utf-8", "surrogateescape"))
        return len(chunk)

    def say(self, chunk: bytes) -> int:
        """li's own lines, on `err` (what the work wrote so far is flushed on `out` first)."""
        self.out.flush()
        self.err.write(chunk)
        self.err.flush()
        return len(chunk)

    def flush(self) -> None:
        self.out.flush()
        self.err.flush()

    def close(self) -> None:
        """Show what is held back and the transcript's end; a second close shows nothing more."""
        rest, self._pending = self._pending, b""
        if self.transcript is not None:
            if rest:
                self.out.write(self.transcript.feed(rest).encode("utf-8", "surrogateescape"))
            self.out.write(self.transcript.close().encode("utf-8", "surrogateescape"))
        self.flush()


def rendered_for(providers: Any, raw: bool) -> bool:
    """A transcript is rendered unless --raw, and only for runs an agent CLI takes part in."""
    from lionrun.domain.request import AGENT_PROVIDERS

    return not raw and any(p in AGENT_PROVIDERS for p in providers)
