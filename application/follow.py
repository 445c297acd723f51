"""Follow one run's console to its end: the one loop `li agent` (foreground) and `li job output --follow` share.

The loop yields the console as it grows, in `ConsoleChunk`s of raw bytes, and li's own lines (the
run's li log, kept apart from the console) as they come, in chunks marked `li`; it ends with one
`FollowEnd`: the run's final observation and why following stopped. Both are polled every round,
the console first, so the two streams interleave in time as closely as one poll interval allows.
What the bytes become on a screen is the caller's: a `ConsoleRenderer` is written every console
chunk (the raw stream, or the transcript of an agent CLI's events: `entrypoints.console_view`) and
told every li chunk (`say`: a person's terminal shows them on stderr).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from lionrun.application.observe import Observed, Observer
from lionrun.application.ports import Clock, RunFiles
from lionrun.application.reads import observe_or_refuse
from lionrun.domain.lifecycle import exit_code_of

POLL_SECONDS: Final = 0.2
READ_BYTES: Final = 1 << 16  # one console read; a follower reads again at once while there is more

# Why following stopped: the run's end is recorded; its process is gone with no end recorded;
# its start was never recorded (an aged `preparing` record: it will not produce more output).
Why = Literal["ended", "stopped", "never_started"]


@dataclass(frozen=True)
class ConsoleChunk:
    """Console bytes as written (a line may be cut anywhere), and the offset just after them;
    with `li`, bytes of the run's li log instead (li's own lines, never the work's)."""

    data: bytes
    end: int
    li: bool = False


@dataclass(frozen=True)
class FollowEnd:
    """The last thing a follow yields: the final observation and why following stopped."""

    observed: Observed
    why: Why

    @property
    def exit_code(self) -> int:
        """The run's exit code for a person's shell; 1 when no end was recorded."""
        return exit_code_of(self.observed.derivation.status) if self.why == "ended" else 1

    @property
    def detail(self) -> str | None:
        """Why following stopped, for a person; None when the run's end is recorded."""
        if self.why == "stopped":
            return (f"the process is gone and no end was recorded "
                    f"(status {self.observed.derivation.status})")
        if self.why == "never_started":
            return "its start was never recorded (an old preparing record); it will not produce more output"
        return None


FollowEvent = ConsoleChunk | FollowEnd


class ConsoleRenderer(Protocol):
    """What a caller plugs in to show a followed console: written every console chunk (cut
    anywhere) and flushed after it, told every li log chunk, closed once at the end."""

    def write(self, chunk: bytes) -> object:
        ...

    def say(self, chunk: bytes) -> object:
        """Bytes of li's own lines (the li log), apart from the work's."""
        ...

    def flush(self) -> None:
        ...

    def close(self) -> None:
        """The run is over: show whatever is still held (a last line without its newline, a summary)."""
        ...


class Follower:
    """Streams a run's console until the run's end is recorded, or it is clear no end is coming.

    One observation per poll through the one `Observer` (so follow agrees with status), the
    console read through the files port (never through a link the work planted, never blocking
    on a FIFO), time only through the clock.
    """

    def __init__(self, files: RunFiles, observer: Observer, clock: Clock,
                 poll_seconds: float = POLL_SECONDS) -> None:
        self.files = files
        self.observer = observer
        self.clock = clock
        self.poll_seconds = poll_seconds

    def follow(self, run_id: str, offset: int = 0, li_offset: int = 0) -> Iterator[FollowEvent]:
        """The console from `offset` and the li log from `li_offset` as they grow, then one FollowEnd.

        A bad, missing or unusable run is refused (ContractError) before anything is yielded.
        Each round observes first and drains the console and then the li log after, so the bytes
        written before an end was recorded are all yielded before that end. A stream that shrank
        is read again from its start; one that is missing or unusable for now is tried again next
        round. To resume after an interruption, follow again from the last chunks' `end`s.
        """
        observed = observe_or_refuse(self.observer, run_id, probe_ended=False)
        while True:
            for chunk in self._drain(self.files.console_bytes, run_id, offset, li=False):
                offset = chunk.end
                yield chunk
            for chunk in self._drain(self.files.li_log_bytes, run_id, li_offset, li=True):
                li_offset = chunk.end
                yield chunk
            why = _why_over(observed)
            if why is not None:
                yield FollowEnd(observed, why)
                return
            self.clock.sleep(self.poll_seconds)
            observed = observe_or_refuse(self.observer, run_id, probe_ended=False)

    def render(self, run_id: str, renderer: ConsoleRenderer, offset: int = 0, li_offset: int = 0) -> FollowEnd:
        """Follow into `renderer` (each chunk written, or said, and flushed; then closed once); how it ended."""
        for event in self.follow(run_id, offset, li_offset):
            if isinstance(event, FollowEnd):
                renderer.close()
                return event
            show(renderer, event)
        raise AssertionError("a follow always ends with a FollowEnd")  # pragma: no cover

    def tail_start(self, run_id: str, tail_bytes: int, li: bool = False) -> int:
        """The offset of about the last `tail_bytes` of the console (with `li`, of the li log),
        moved on to a character boundary (0 when there is none yet)."""
        read = self.files.li_log_bytes if li else self.files.console_bytes
        try:
            _, size = read(run_id, 0, 0)
            start = max(0, size - max(tail_bytes, 0))
            head, _ = read(run_id, start, 4)
        except OSError:  # none yet, or one that is not a file: start at 0
            return 0
        skip = next((i for i, byte in enumerate(head) if not 0x80 <= byte <= 0xBF), len(head))
        return start + skip

    @staticmethod
    def _drain(read: Callable[[str, int, int], tuple[bytes, int]], run_id: str, offset: int,
               li: bool) -> Iterator[ConsoleChunk]:
        while True:
            try:
                data, size = read(run_id, offset, READ_BYTES)
            except OSError:  # missing or unusable for now; the next round tries again
                return
            if size < offset:  # it shrank: read it again from its start
                offset = 0
                continue
            if not data:
                return
            offset += len(data)
            yield ConsoleChunk(data, offset, li)


def show(renderer: ConsoleRenderer, chunk: ConsoleChunk) -> None:
    """One chunk into a renderer: the work's bytes written, li's lines said; flushed after."""
    if chunk.li:
        renderer.say(chunk.data)
    else:
        renderer.write(chunk.data)
    renderer.flush()


def _why_over(observed: Observed) -> Why | None:
    derivation = observed.derivation
    if derivation.terminal:
        return "ended"
    if derivation.stopped:
        return "stopped"
    if derivation.aged_preparing:
        return "never_started"
    return None
