"""The real `git`, run as a subprocess, behind the GitWorktrees port.

Every command that writes (worktree add/remove, commit, branch -D, apply) holds an exclusive
`flock` on `<git common dir>/li-worktrees.lock` for the repository, so two runs ending at once
in one repository never race git's own lock files (index.lock, ref locks, worktrees/); a lock
file git left behind is retried a few times before it is reported. `gc.auto` is off for li's
commits: no run pays for (or races) a repack.

Every process li's git starts runs with the store hidden, as a run's work does: a
repository's config and attributes are the work's to write (its worktree's git dir is inside the
repository), and name programs git runs — `core.fsmonitor`, a `filter.*.clean` driver, a
`diff.external`, `gpg.program`. li's git, run at a run's end, for `li job diff`, `apply` or `rm`,
would otherwise run them as the store's owner with the store in reach: a way around the
confinement. So each git (and each worktree setup command, unless the run is `--confine off`)
is started in a mount namespace of its own with a read-only empty `$LI_HOME`
(`adapters/confinement.py`), and with none of li's own environment (the shared store's URL, libpq's
variables). Where the kernel will not confine a process, git runs as before: the work of a run
there is not confined either, and a `--confine required` run is refused before its worktree is
made.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from lionrun.adapters import proctree, safe_open
from lionrun.application.ports import Committed, GitRefused, Repository
from lionrun.domain.evidence import KILL_GRACE
from lionrun.domain.run import the_works_environment
from lionrun.domain.worktree import (
    AUTHOR_EMAIL,
    AUTHOR_NAME,
    INCLUDE_FILE,
    INCLUDE_MAX_FILES,
    LOCK_NAME,
    WORKTREES_FOLDER,
)

GIT_TIMEOUT = 300.0
LOCK_RETRIES = 5
SIGNAL_RETRIES = 3  # a git of the run's end killed by a signal meant for the work is run again
SETUP_POLL = 0.1
SETUP_STOP_GRACE = KILL_GRACE  # the one grace of a run's stops
SETUP_OUTPUT_WAIT = 1.0
_LOCKED = ("index.lock", "cannot lock ref", "Unable to create", ".lock': File exists")


# What li's own git never runs, whatever a repository's config (which the work can write, its
# worktree's git dir being inside the repository) or the work's attributes name: hooks,
# the file-system monitor, pagers and editors, credential and signing programs, ssh and proxies.
# `core.fsmonitor` takes a boolean or a command: false turns it off on every git li has met.
SAFE_CONFIG = (
    "gc.auto=0", "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.pager=cat", "core.editor=:",
    "core.askPass=", "core.sshCommand=", "core.gitProxy=", "core.alternateRefsCommand=",
    "gpg.program=", "gpg.openpgp.program=", "gpg.x509.program=",
    "gpg.ssh.program=", "credential.helper=", "submodule.recurse=false", "protocol.allow=never",
    "diff.external=", "sequence.editor=:", "core.untrackedCache=false",
)
# Keys whose driver names the work chooses (in .gitattributes and in config): each one the
# repository's config holds is set empty for li's git, so no filter, textconv, diff or merge
# driver of the work's runs. (`diff --no-ext-diff --no-textconv` besides, on every diff.)
_DRIVER_KEYS = (("filter.", (".clean", ".smudge", ".process")),
                ("diff.", (".command", ".textconv")),
                ("merge.", (".driver",)))
_EXEC_KEYS = ("core.fsmonitor", "core.hookspath", "core.pager", "core.editor", "core.askpass",
              "core.sshcommand", "core.gitproxy", "core.alternaterefscommand", "diff.external",
              "gpg.program", "credential.helper")
DIFF_SAFE = ("--no-ext-diff", "--no-textconv", "--no-color")


def overrides(names: str) -> list[str]:
    """`-c KEY=` for each key of `git config --list --name-only -z` that names a program li's git
    must not run (a driver of a filter, a textconv, an external diff or merge; a pager of a
    command); the fixed SAFE_CONFIG covers the keys git knows by name."""
    found: list[str] = []
    for key in dict.fromkeys(k for k in names.split("\0") if k):
        low = key.lower()
        if (any(low.startswith(head) and low.endswith(tails) for head, tails in _DRIVER_KEYS)
                or low.startswith("pager.") or low in _EXEC_KEYS
                or (low.startswith("gpg.") and low.endswith(".program"))
                or (low.startswith("credential.") and low.endswith(".helper"))):
            found += ["-c", f"{key}="]
    return found


def _env() -> dict[str, str]:
    """git's environment: li as author and committer (a person's config may name nobody), no
    prompts, no pager, the C locale for messages li reads; none of li's own (what git runs for a
    repository's config is the work's choice)."""
    env = {k: v for k, v in the_works_environment(os.environ).items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME=AUTHOR_NAME, GIT_AUTHOR_EMAIL=AUTHOR_EMAIL, GIT_COMMITTER_NAME=AUTHOR_NAME,
               GIT_COMMITTER_EMAIL=AUTHOR_EMAIL, GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", LC_ALL="C")
    return env


class Git:
    """GitWorktrees over the `git` executable."""

    def __init__(self, executable: str = "git", hide: str | None = None, marker: str | None = None) -> None:
        self.executable = executable
        self.hide = hide  # the store's home, hidden from every process git starts; None: nothing hidden
        self.marker = marker  # the file that tells an `li` in there the store is hidden, not empty
        self._confine: tuple[Callable[[], None] | None] | None = None

    def pre_exec(self) -> Callable[[], None] | None:
        """What each child does between fork and exec: hide the store (None when there is none to
        hide, or the kernel will not; asked of the kernel once, by a forked probe)."""
        if self._confine is None:
            step = None
            if self.hide is not None and os.path.isdir(self.hide):
                from lionrun.adapters import confinement

                if confinement.probe(self.hide) is None:
                    confinement.load()  # in this process: the forked child only calls into libc
                    home, marker = os.path.realpath(self.hide), self.marker

                    def step() -> None:
                        confinement.confine(home, None, marker)
            self._confine = (step,)
        return self._confine[0]

    def _entering(self, cwd: str, confined: bool = True) -> tuple[str | None, Callable[[], None] | None]:
        """(Popen's cwd, its pre-exec step): confined, the child enters `cwd` only after the store
        is hidden, else Popen enters it as usual."""
        step = self.pre_exec() if confined else None
        if step is None:
            return cwd, None
        from lionrun.adapters.confinement import check_folder, entering

        check_folder(cwd)
        return None, entering(step, cwd)

    # --- plumbing -----------------------------------------------------------------------------

    def _run(self, cwd: str, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        for _attempt in range(SIGNAL_RETRIES):
            done = self._once(cwd, *args, stdin=stdin)
            # git is a process of the run (the runner's child): a kill's sweeps, meant for the work,
            # may reach the git that commits the work's end. Killed by a signal, it is run again:
            # what li runs is read-only or made so it can run twice (add, commit once staged).
            if done.returncode >= 0:
                break
        if check and done.returncode != 0:
            raise GitRefused(_first_line(done.stderr) or f"git {args[0]} exited {done.returncode}")
        return done

    def _once(self, cwd: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        try:
            enter, step = self._entering(cwd)
            safe = [part for pair in SAFE_CONFIG for part in ("-c", pair)]
            if args[0] not in ("rev-parse", "config", "symbolic-ref"):  # those run no program
                safe += self._planted(cwd, enter, step, safe)
            return subprocess.run([self.executable, *safe, *args],
                                  cwd=enter, env=_env(), input=stdin, capture_output=True, text=True,
                                  errors="surrogateescape", timeout=GIT_TIMEOUT, check=False,
                                  preexec_fn=step)
        except FileNotFoundError:
            raise GitRefused("git is not installed or not on PATH") from None
        except subprocess.SubprocessError as exc:  # the confinement refused in the child: git never ran
            raise GitRefused(f"git {args[0]} could not be started with the store hidden: {exc}") from None
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GitRefused(f"git {args[0]} could not be run: {exc}") from None

    def _planted(self, cwd: str, enter: str | None, step: Callable[[], None] | None,
                 safe: list[str]) -> list[str]:
        """The `-c KEY=` that unset every program the repository's config (as git reads it in
        `cwd`: local, worktree, included files) names for a driver li's git could meet."""
        listed = subprocess.run([self.executable, *safe, "config", "--list", "--name-only", "-z"],
                                cwd=enter, env=_env(), capture_output=True, text=True, errors="surrogateescape",
                                timeout=GIT_TIMEOUT, check=False, preexec_fn=step)
        return overrides(listed.stdout) if listed.returncode == 0 else []

    def _write(self, cwd: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """A writing command, retried while another git holds one of its lock files."""
        for attempt in range(LOCK_RETRIES):
            done = self._run(cwd, *args, check=False, stdin=stdin)
            if done.returncode == 0 or not any(m in done.stderr for m in _LOCKED) or attempt == LOCK_RETRIES - 1:
                break
            time.sleep(0.05 * 2 ** attempt)
        if done.returncode != 0:
            raise GitRefused(_first_line(done.stderr) or f"git {args[0]} exited {done.returncode}")
        return done

    @contextmanager
    def _locked(self, somewhere: str) -> Iterator[None]:
        """The repository's li lock (a flock: released by the kernel when the holder dies)."""
        common = self._common_dir(somewhere)
        fd = os.open(os.path.join(common, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _common_dir(self, somewhere: str) -> str:
        out = self._run(somewhere, "rev-parse", "--path-format=absolute", "--git-common-dir").stdout.strip()
        return out

    # --- the port -----------------------------------------------------------------------------

    def locate(self, path: str) -> Repository | None:
        done = self._run(path, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir",
                         check=False)
        lines = done.stdout.splitlines()
        if done.returncode != 0 or len(lines) != 2:
            return None
        return Repository(toplevel=lines[0], common_dir=lines[1])

    def resolve(self, repository: str, ref: str) -> str:
        done = self._run(repository, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}",
                         check=False)
        if done.returncode != 0:
            raise GitRefused(f"{ref!r} names no commit in {repository}")
        return done.stdout.strip()

    def add(self, repository: str, path: str, branch: str, base: str) -> None:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with self._locked(repository):
            self._write(repository, "worktree", "add", "--quiet", "-b", branch, path, base)

    def head(self, worktree: str) -> str:
        return self._run(worktree, "rev-parse", "HEAD").stdout.strip()

    def copy_included(self, repository: str, worktree: str) -> list[str]:
        include = os.path.join(repository, INCLUDE_FILE)
        if not os.path.isfile(include):
            return []
        listed = self._run(repository, "ls-files", "-z", "--others", "--ignored", f"--exclude-from={include}").stdout
        candidates = [p for p in listed.split("\0") if p][:INCLUDE_MAX_FILES]
        if not candidates:
            return []
        # Only what git ignores is copied (Claude Code's rule): a tracked file is in the checkout
        # already, an untracked one not ignored would end up in li's commit.
        ignored = self._run(repository, "check-ignore", "-z", "--stdin", check=False,
                            stdin="\0".join(candidates) + "\0").stdout
        copied = []
        for relative in sorted(p for p in ignored.split("\0") if p):
            if _copy_regular(repository, worktree, relative):
                copied.append(relative)
        return copied

    def run_setup(self, worktree: str, command: str, env: Mapping[str, str], console: Any,
                  stopped: Callable[[], bool] | None = None, confined: bool = True) -> int:
        """`sh -c COMMAND` in the worktree, in a process group of its own, its output copied to
        `console`; its exit status (negative: the signal that ended it). While it runs, `stopped`
        is asked every SETUP_POLL seconds: once it says so (a kill, the run's time run out), the
        setup's group is sent SIGTERM, then SIGKILL after SETUP_STOP_GRACE seconds. `confined`:
        with the store hidden, as the work will be (a setup installs what the repository names)."""
        try:
            enter, step = self._entering(worktree, confined)
            child = subprocess.Popen(["/bin/sh", "-c", command], cwd=enter, env=dict(env),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, preexec_fn=step)
        except subprocess.SubprocessError as exc:
            raise OSError(f"the store could not be hidden from it: {exc}") from None
        out = child.stdout
        assert out is not None

        def copy() -> None:
            for raw in out:
                console.write(raw.decode("utf-8", "replace"))
                console.flush()

        copier = threading.Thread(target=copy, name="li-setup-output", daemon=True)
        copier.start()
        try:
            while True:
                try:
                    code = child.wait(SETUP_POLL)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if stopped is not None and stopped():
                    code = _stop_group(child)
                    break
        except BaseException:
            _stop_group(child)
            raise
        # A process the setup left behind may hold its output open: what came before the setup
        # ended is copied, and the setup is over when it is.
        copier.join(SETUP_OUTPUT_WAIT)
        return code

    def ensure_own(self, worktree: str, repository: str, branch: str) -> None:
        """GitRefused(why) unless `worktree` is still the worktree li made: a folder (no
        link) at its own real path under the repository's git dir, whose git dir is its own
        (`<common dir>/worktrees/...`, pointing back at it), of that repository, on `branch`. A
        work that put a link to the person's checkout in its place, or pointed its `.git` or HEAD
        elsewhere, gets nothing committed anywhere."""
        def refuse(why: str) -> GitRefused:
            return GitRefused(f"the worktree {worktree} is no longer li's own: {why}; nothing was committed")

        try:
            info = os.lstat(worktree)
        except OSError as exc:
            raise refuse(f"it cannot be read ({exc.strerror})") from None
        if not stat.S_ISDIR(info.st_mode):
            raise refuse("something else (a link, a file) took its place")
        common = os.path.realpath(self._common_dir(repository))
        real = os.path.realpath(worktree)
        if os.path.dirname(real) != os.path.join(common, WORKTREES_FOLDER):
            raise refuse(f"its real path is {real}, outside {os.path.join(common, WORKTREES_FOLDER)}")
        found = self._run(worktree, "rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir",
                          "--git-common-dir", "--symbolic-full-name", "HEAD", check=False)
        lines = found.stdout.splitlines()
        if found.returncode != 0 or len(lines) != 4:
            raise refuse(f"git does not see a worktree there ({_first_line(found.stderr) or 'no answer'})")
        top, git_dir, its_common, head = lines
        if os.path.realpath(top) != real:
            raise refuse(f"git's top level there is {top}")
        if os.path.realpath(its_common) != common:
            raise refuse(f"it belongs to the repository at {its_common}")
        if os.path.dirname(os.path.realpath(git_dir)) != os.path.join(common, "worktrees"):
            raise refuse(f"its git dir is {git_dir}, not one of the repository's worktrees")
        back = _gitdir_of(git_dir)
        if back is None or os.path.realpath(back) != os.path.join(real, ".git"):
            raise refuse(f"its git dir {git_dir} belongs to another worktree")
        if head != f"refs/heads/{branch}":
            raise refuse(f"it is on {head or 'a detached HEAD'}, not on {branch}")

    def commit_all(self, worktree: str, base: str, message: str) -> Committed:
        with self._locked(worktree):
            self._write(worktree, "add", "--all", "--", ".")
            staged = self._run(worktree, "diff", *DIFF_SAFE, "--cached", "--quiet", check=False)
            if staged.returncode != 0:
                self._write(worktree, "commit", "--quiet", "--no-verify", "--no-gpg-sign", "-F", "-", stdin=message)
        head = self.head(worktree)  # the work may have committed on the branch itself
        if head == base:
            return Committed(commit=None, numstat="", patch="")
        return self.diff(worktree, base, head)

    def diff(self, worktree_or_repo: str, base: str, commit: str) -> Committed:
        numstat = self._run(worktree_or_repo, "diff", *DIFF_SAFE, "--numstat", "--no-renames", base, commit,
                            "--").stdout
        patch = self._run(worktree_or_repo, "diff", *DIFF_SAFE, "--binary", "--no-renames", base, commit,
                          "--").stdout
        return Committed(commit=commit, numstat=numstat, patch=patch)

    def status(self, worktree: str) -> str:
        return self._run(worktree, "status", "--porcelain", "--untracked-files=all").stdout

    def apply(self, target: str, patch: str) -> None:
        touched = self._run(target, "apply", "--numstat", "-z", "-", stdin=patch).stdout
        paths = [part.split("\t")[-1] for part in touched.split("\0") if "\t" in part]
        paths += [part for part in touched.split("\0") if part and "\t" not in part]  # renames' second names
        with self._locked(target):
            if paths:
                dirty = self._run(target, "status", "--porcelain", "--untracked-files=all", "--", *paths).stdout
                if dirty.strip():
                    first = dirty.splitlines()[0][3:]
                    raise GitRefused(f"{first} has uncommitted changes here; commit or stash them first", conflict=True)
            checked = self._run(target, "apply", "--check", "-", check=False, stdin=patch)
            if checked.returncode != 0:
                raise GitRefused(_first_line(checked.stderr) or "the patch does not apply", conflict=True)
            self._write(target, "apply", "-", stdin=patch)

    def remove(self, repository: str, worktree: str, branch: str | None) -> None:
        with self._locked(repository):
            if os.path.isdir(worktree):
                self._write(repository, "worktree", "remove", "--force", worktree)
            else:
                self._write(repository, "worktree", "prune")
            if branch is not None:
                done = self._run(repository, "branch", "-D", "--", branch, check=False)
                if done.returncode != 0 and "not found" not in done.stderr:
                    raise GitRefused(_first_line(done.stderr))

    def listed(self, repository: str) -> list[str]:
        out = self._run(repository, "worktree", "list", "--porcelain").stdout
        return [line[len("worktree "):] for line in out.splitlines() if line.startswith("worktree ")]

    def shared_fingerprint(self, common_dir: str) -> dict[str, str]:
        return shared_fingerprint(common_dir)


def shared_fingerprint(common_dir: str) -> dict[str, str]:
    """domain.worktree's fingerprint of `config`, `hooks/` and `info/` under `common_dir`: every
    entry lstat'ed (never followed), a regular file opened with O_NOFOLLOW|O_NONBLOCK and hashed
    up to its bound, a folder walked depth-first without following links, at most the bound's paths."""
    import hashlib

    from lionrun.domain.worktree import (
        FINGERPRINT_CUT,
        FINGERPRINT_MAX_BYTES,
        FINGERPRINT_MAX_ENTRIES,
    )

    top = common_dir.rstrip("/")
    prints: dict[str, str] = {}
    pending = ["config", "hooks", "info"]
    while pending:
        relative = pending.pop()
        if len(prints) >= FINGERPRINT_MAX_ENTRIES:
            prints[FINGERPRINT_CUT] = f"cut at {FINGERPRINT_MAX_ENTRIES}"
            break
        path = f"{top}/{relative}"
        try:
            found = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            prints[relative] = f"unreadable {exc.errno}"
            continue
        mode = stat.S_IMODE(found.st_mode)
        if stat.S_ISLNK(found.st_mode):
            try:
                prints[relative] = f"link {os.readlink(path)}"
            except OSError as exc:
                prints[relative] = f"link unreadable {exc.errno}"
        elif stat.S_ISDIR(found.st_mode):
            prints[relative] = f"dir {mode:o}"
            try:
                names = sorted(os.listdir(path), reverse=True)
            except OSError as exc:
                prints[relative] = f"dir {mode:o} unreadable {exc.errno}"
                continue
            pending.extend(f"{relative}/{name}" for name in names[:FINGERPRINT_MAX_ENTRIES + 1])
        elif stat.S_ISREG(found.st_mode):
            prints[relative] = f"file {mode:o} {_hash_file(path, found, hashlib.sha256(), FINGERPRINT_MAX_BYTES)}"
        else:
            prints[relative] = f"other {stat.S_IFMT(found.st_mode):o} {mode:o}"
    return prints


def _hash_file(path: str, seen: os.stat_result, digest: Any, bound: int) -> str:
    """The sha256 of a regular file's first `bound` bytes and its size (a file swapped between the
    lstat and the open, or unreadable, says so)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"unreadable {exc.errno}"
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (seen.st_dev, seen.st_ino):
            return "swapped"
        left = bound
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
        return f"{digest.hexdigest()} {opened.st_size}"
    except OSError as exc:
        return f"unreadable {exc.errno}"
    finally:
        os.close(fd)


def _stop_group(child: subprocess.Popen[bytes]) -> int:
    """SIGTERM the setup's process group, SIGKILL what is left of it after the grace (or at once
    once its shell has ended); the setup's exit status."""
    return proctree.stop_group(child, SETUP_STOP_GRACE, then_kill=True)


def _gitdir_of(git_dir: str) -> str | None:
    """The worktree a worktree's git dir names (its `gitdir` file), read without following a link."""
    try:
        folder = os.open(git_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return safe_open.read_file("gitdir", folder, 1 << 16).decode("utf-8", "surrogateescape").strip()
    except (OSError, ValueError):
        return None
    finally:
        os.close(folder)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line.removeprefix("fatal: ").removeprefix("error: ")[:300]
    return ""


def _copy_regular(repository: str, worktree: str, relative: str) -> bool:
    """Copy one regular file of the repository into the worktree at the same path, keeping its
    mode; False for anything else. Never through a link on either side: each folder of the path
    is opened from the one above it without following a link, so a folder of the checkout that is
    a committed link (to `$LI_HOME`, say) ends the copy instead of writing where it points; never
    over anything already there."""
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return False
    opened: list[int] = []
    made = None
    try:
        source_dir = _folder_below(repository, parts[:-1], opened, make=False)
        target_dir = _folder_below(worktree, parts[:-1], opened, make=True)
        source = safe_open.open_file(parts[-1], source_dir)
        opened.append(source)
        target = safe_open.open_file(parts[-1], target_dir, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        opened.append(target)
        made = (parts[-1], target_dir)
        while chunk := os.read(source, 1 << 20):
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view):]
        os.fchmod(target, stat.S_IMODE(os.fstat(source).st_mode))
        made = None
        return True
    except OSError:  # safe_open.UnsafeEntry too: a link, a FIFO, a second name
        if made is not None:
            with contextlib.suppress(OSError):
                os.unlink(made[0], dir_fd=made[1])
        return False
    finally:
        for fd in reversed(opened):
            os.close(fd)


def _folder_below(root: str, names: list[str], opened: list[int], make: bool) -> int:
    """The folder `root/names...`, each step opened from the one above it and never through a link
    (made 0700 where missing when `make`); every descriptor opened is added to `opened`."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    opened.append(fd)
    for name in names:
        fd = safe_open.make_folder(name, fd) if make else safe_open.open_folder(name, fd)
        opened.append(fd)
    return fd


__all__: Sequence[str] = ("Git",)
