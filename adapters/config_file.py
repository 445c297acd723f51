"""`$LI_HOME/config.toml`, read as li reads every file the work may have reached: standard library
only (every li call reads it at start-up, once: entrypoints/settings.py keeps what it read).
"""

from __future__ import annotations

import errno
import os

from lionrun.domain.config import CONFIG_NAME, ConfigFile

LIMIT = 1 << 20  # what of config.toml is read at most


def read_config(home: str) -> ConfigFile:
    """`$LI_HOME/config.toml` as read once: its bytes, none, or why it cannot be read."""
    path = os.path.join(home, CONFIG_NAME)
    try:
        return ConfigFile(path, config_bytes(path))
    except OSError as exc:
        return ConfigFile(path, None, exc.strerror or str(exc))


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
