"""Out of `li` without tearing the interpreter down (a start-up measure, README.md here).

Every answer has been written and flushed by then (the envelope by the dispatcher, human output
by the flush below), exit hooks are run here, a non-daemon thread still running takes the usual
exit, and the detached runs are other processes; what teardown would still do is free every
module and object one by one, which costs a read about one to two interpreter floors
(docs/performance.md). When a flush fails (stdout closed or full), the interpreter exits as it
always did, so it reports that itself.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import NoReturn


def leave(code: int) -> NoReturn:
    """Exit with `code`: at once (`os._exit`) after the exit hooks and a flush, or the usual way
    when a thread is still working or a flush fails."""
    if _threads_left():
        sys.exit(code)  # a thread still working is waited for, as the usual exit does
    try:
        import atexit

        atexit._run_exitfuncs()  # exit hooks still run: what they write lands where --machine sends it
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BaseException:  # noqa: BLE001 - the usual exit reports it
        sys.exit(code)
    os._exit(code)


def _threads_left() -> bool:
    """Whether a thread other than this one that the usual exit would wait for is still running."""
    threading = sys.modules.get("threading")
    if threading is None:
        return False
    current = threading.current_thread()
    return any(t is not current and t.is_alive() and not t.daemon for t in threading.enumerate())
