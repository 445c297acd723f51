"""The store's privacy on disk: folders and files open to group or others, found and tightened.

Runs hold prompts and output, so the store is private: folders 0700, files 0600. A run's work
is untrusted and may leave links to anywhere, FIFOs, devices and hard links to other files in
its run folder, so the walk goes through descriptors: `$LI_HOME` (the user's own setting, the
only path ever followed), then every folder opened relative to its parent with
`O_DIRECTORY|O_NOFOLLOW`. An entry is judged by `lstat`; a link, FIFO, socket or device is never
opened and never changed; a regular file is opened (`O_NOFOLLOW|O_NONBLOCK`) only to tighten
it, checked by `fstat` to be the very file judged, and changed with `fchmod` — so a link's
target, or a file swapped in since, is never touched. Only group and other bits are removed.
The walk is bounded in entries and depth, and says so when it stops early.

Only the store's own entries are judged: its folders, records, consoles and the other files li
writes. A run's `artifacts/` folder is li's (made 0700, judged like any folder), but what is in
it is what the work wrote there, in whatever modes the work chose (a 0644 answer in
`$LI_ARTIFACTS_DIR` is the work's, and unreachable to others through its private folder), so the
walk never enters it: it neither warns about nor changes the work's files.
"""

from __future__ import annotations

import os
import stat

from lionrun.adapters.fs_store import ARTIFACTS
from lionrun.adapters.safe_open import UnsafeEntry, open_file, open_folder
from lionrun.application.doctor import StoreModes

OPEN_BITS = 0o077  # group and other: what a private store never grants
ENTRIES_MAX = 100_000
DEPTH_MAX = 64  # folders nested deeper than this under $LI_HOME are not entered
STORE_ENTRIES = ("config.toml", "runs")  # what the store keeps in $LI_HOME; nothing else there is touched
RUN_DEPTH = 2  # runs/ is at depth 1, a run's folder at 2, what li keeps in it at 3
WORK_FOLDER = ARTIFACTS  # in a run's folder: li makes it, the work fills it (judged, never entered)
_HOME_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


def store_modes(home: str, tighten: bool, limit: int = ENTRIES_MAX) -> StoreModes:
    """Walk `$LI_HOME` (itself, its config.toml, everything under runs/); tighten what is open if asked."""
    try:
        home_fd = os.open(home, _HOME_FLAGS)
    except FileNotFoundError:
        return StoreModes()  # no store yet: nothing in it can be open to anyone
    except OSError as exc:
        return StoreModes(error=exc.strerror or str(exc))
    walk = _Walk(tighten, limit)
    try:
        walk.examined += 1
        walk.judge(home_fd, home, folder=True)
        for name in STORE_ENTRIES:
            walk.visit(home_fd, name, os.path.join(home, name), 1)
    finally:
        os.close(home_fd)
    return walk.result()


class _Walk:
    """The counts of one walk; every entry goes through `visit`."""

    def __init__(self, tighten: bool, limit: int) -> None:
        self.tighten = tighten
        self.limit = limit
        self.examined = self.loose = self.tightened = self.failed = 0
        self.example: str | None = None
        self.failure: str | None = None
        self.truncated = False

    def result(self) -> StoreModes:
        return StoreModes(examined=self.examined, loose=self.loose, example=self.example,
                          tightened=self.tightened, failed=self.failed, failure=self.failure,
                          truncated=self.truncated)

    def visit(self, parent: int, name: str, path: str, depth: int) -> None:
        """One entry, judged by lstat: a folder is entered, a regular file judged, anything else left."""
        if self.examined >= self.limit:
            self.truncated = True
            return
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return  # gone since it was listed (or never there: config.toml, runs/)
        except OSError as exc:
            self.fail(path, exc.strerror or str(exc))
            return
        self.examined += 1
        if stat.S_ISDIR(info.st_mode):
            self.folder(parent, name, path, depth)
        elif stat.S_ISREG(info.st_mode) and info.st_mode & OPEN_BITS:
            self.file(parent, name, path, info)

    def folder(self, parent: int, name: str, path: str, depth: int) -> None:
        try:
            fd = open_folder(name, parent)
        except (FileNotFoundError, UnsafeEntry):
            return  # gone, or swapped for a link or a file since it was listed: never followed
        except OSError as exc:
            self.fail(path, exc.strerror or str(exc))
            return
        try:
            self.judge(fd, path, folder=True)
            if depth == RUN_DEPTH + 1 and name == WORK_FOLDER:
                return  # the work's files: not the store's to judge or change
            if depth >= DEPTH_MAX:
                self.truncated = True
                return
            with os.scandir(fd) as entries:
                for entry in entries:
                    if self.truncated:
                        break
                    self.visit(fd, entry.name, os.path.join(path, entry.name), depth + 1)
        except OSError as exc:
            self.fail(path, exc.strerror or str(exc))
        finally:
            os.close(fd)

    def file(self, parent: int, name: str, path: str, seen: os.stat_result) -> None:
        """A regular file open to others: counted, and tightened through its own descriptor."""
        if not self.tighten:
            self.open_to_others(path, seen.st_mode)
            return
        try:
            fd = open_file(name, parent)  # refuses a link, a FIFO, and a file with other names
        except FileNotFoundError:
            return
        except UnsafeEntry as exc:
            if _regular(parent, name):  # hard-linked: its other name may be outside the store
                self.open_to_others(path, seen.st_mode)
                self.fail(path, f"{exc.detail}; left as it is")
            return  # otherwise swapped since it was judged: not the file judged, so not changed
        except OSError as exc:
            self.open_to_others(path, seen.st_mode)
            self.fail(path, exc.strerror or str(exc))
            return
        try:
            now = os.fstat(fd)
            if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
                return  # swapped since it was judged: not the file judged, so not changed
            self.judge(fd, path, folder=False)
        finally:
            os.close(fd)

    def judge(self, fd: int, path: str, folder: bool) -> None:
        """Tighten (when asked) or count one open folder or file, through its descriptor."""
        info = os.fstat(fd)
        mode = stat.S_IMODE(info.st_mode)
        if not mode & OPEN_BITS:
            return
        if self.tighten:
            try:
                os.fchmod(fd, mode & ~OPEN_BITS)
                self.tightened += 1
                return
            except OSError as exc:
                self.fail(path, exc.strerror or str(exc))
        self.open_to_others(path, mode)

    def open_to_others(self, path: str, mode: int) -> None:
        self.loose += 1
        if self.example is None:
            self.example = f"{shown(path)} ({stat.S_IMODE(mode):04o})"

    def fail(self, path: str, why: str) -> None:
        self.failed += 1
        if self.failure is None:
            self.failure = f"{shown(path)}: {why}"


def _regular(parent: int, name: str) -> bool:
    """Still a regular file (open_file refused it for its other names, not for what it is)."""
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def shown(path: str) -> str:
    """A path on one line for a person: control characters and undecodable bytes escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)
