"""`$LI_HOME/config.toml`, read as li reads every file the work may have reached: standard library
only (every li call reads it at start-up), one home for each reader of the file (the settings of a
call, li doctor's notify check).
"""

from __future__ import annotations

import errno
import os

LIMIT = 1 << 20  # what of config.toml is read at most


def config_bytes(path: str) -> bytes | None:
    """config.toml's bytes, or None when there is none. Opened as a run's files are (the work of a
    `--confine off` run can reach $LI_HOME): a link is never followed, a FIFO never blocks the
    open, and anything but a regular file is an OSError naming what it is, before a byte is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, f"{path} is a symbolic link, which li never follows") from None
        raise
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file")
        parts: list[bytes] = []
        size = 0
        while size < LIMIT and (part := os.read(fd, LIMIT - size)):
            parts.append(part)
            size += len(part)
        return b"".join(parts)
    finally:
        os.close(fd)
