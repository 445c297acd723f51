"""A run's own git worktree and the changes its work left there: values and rules, pure.

A run submitted with `--worktree` works in a new worktree of the repository it was submitted
from, on a new branch `li/<run-id>` from the base commit. When the work ends the runner commits
what it left there to that branch (author li) and records the commit, the files and the line
counts, and keeps the patch as the artifact `changes.patch`. Where the worktree lives:
`<git common dir>/li-worktrees/<run-id>` — inside the repository's own `.git`, so the person's
tree never shows it, git never tracks it, it is on the repository's filesystem (a cheap
checkout), and it is not under `$LI_HOME`, which confinement hides from the work.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from msgspec import Meta, Struct


def _invalid(message: str, **detail: Any) -> Exception:
    # on a refusal only: the record's read path loads this module
    from lionrun.domain.contract import ContractError, ErrorKind

    return ContractError(ErrorKind.INVALID_INPUT, message, detail or None)

BRANCH_PREFIX = "li/"
WORKTREES_FOLDER = "li-worktrees"  # under the repository's git common dir
LOCK_NAME = "li-worktrees.lock"  # beside it: serialises li's git writes in one repository
PATCH_ARTIFACT = "changes.patch"
INCLUDE_FILE = ".worktreeinclude"  # Claude Code's convention: gitignore syntax, ignored files copied in
AUTHOR_NAME = "li"
AUTHOR_EMAIL = "li@lionrun.invalid"
REF_MAX = 256
SETUP_MAX = 16 * 1024
SESSION_ID_MAX = 256
MESSAGE_LABEL_MAX = 200
INCLUDE_MAX_FILES = 10_000  # files a .worktreeinclude may copy into one worktree

# Reason codes of a worktree's troubles (advisory beside the outcome, D4; D7 for a diff).
SETUP_FAILED = "worktree_setup_failed"
WORKTREE_FAILED = "worktree_failed"
NO_CHANGES_RECORDED = "no_changes_recorded"
PATCH_UNREADABLE = "patch_unreadable"
NOT_A_WORKTREE_RUN = "no_worktree"

_REF = re.compile(r"^[A-Za-z0-9._/@{}^~:+-]{1,256}$")
_SESSION = re.compile(r"^[A-Za-z0-9._:-]{1,256}$")
_RUN_ID = re.compile(r"^\d{8}T\d{6}-[0-9a-f]{6}$")  # domain.run.RUN_ID_PATTERN (run imports this module)

def branch_for(run_id: str, leg: str | None = None) -> str:
    """`li/<run-id>` for a run's one worktree; `li/<run-id>.<leg>` for one leg of a multi-leg run
    (a dot, not a slash: git cannot hold both `li/X` and `li/X/leg`)."""
    return f"{BRANCH_PREFIX}{run_id}" if leg is None else f"{BRANCH_PREFIX}{run_id}.{leg}"


def worktree_path(common_dir: str, run_id: str, leg: str | None = None) -> str:
    """Where a run's worktree lives: `<common dir>/li-worktrees/<run-id>[.<leg>]`."""
    name = run_id if leg is None else f"{run_id}.{leg}"
    return f"{common_dir.rstrip('/')}/{WORKTREES_FOLDER}/{name}"


def run_of_worktree(name: str) -> str | None:
    """The run id a folder under li-worktrees names (a leg's folder names its run), else None."""
    head = name.split(".", 1)[0]
    return head if _RUN_ID.fullmatch(head) else None


def check_base_ref(text: object, where: str = "--base") -> str:
    """A ref or commit git may resolve: no leading dash (never an option), no spaces or control
    characters, at most 256 characters."""
    if not isinstance(text, str) or not _REF.fullmatch(text) or text.startswith("-") or ".." in text:
        raise _invalid(f"{where} must name a git ref or commit, not {str(text)[:80]!r}", argument=where)
    return text


def check_setup(text: object, where: str = "--setup") -> str | None:
    """A setup command (run with `sh -c` in the new worktree): non-blank, no NUL, bounded; None when absent."""
    if text is None:
        return None
    if not isinstance(text, str) or not text.strip() or "\0" in text or len(text.encode()) > SETUP_MAX:
        raise _invalid(f"{where} must be a non-empty shell command of at most {SETUP_MAX} bytes", argument=where)
    return text


def check_session_id(text: object) -> str:
    """A session id an agent CLI may be given back: a short token of letters, digits and `._:-`."""
    if not isinstance(text, str) or not _SESSION.fullmatch(text) or text.startswith("-"):
        raise _invalid("the run's session id cannot be passed to its CLI", session_id=str(text)[:80])
    return text


def resume_arguments(provider: str, session_id: str | None) -> list[str]:
    """The argv that makes `provider` resume `session_id` (nothing when there is none): its CLI's
    own (`domain/agents/`; Codex's `resume ID` subcommand comes last among its arguments)."""
    resume = _resume_of(provider)
    return [*resume, session_id] if session_id is not None and resume else []


def _resume_of(provider: str | None) -> tuple[str, ...]:
    """The argv before a session id that makes `provider` resume it; () for a provider that cannot."""
    from lionrun.domain.agents import agent, is_agent

    return agent(provider).resume if provider is not None and is_agent(provider) else ()


def commit_message(run_id: str, label: str | None, status: str | None = None, leg: str | None = None) -> str:
    """The message of the commit li makes of a run's work: the run (and the leg, in a run of
    several legs), its label, how it ended."""
    shown = "" if not label else " " + "".join(" " if ord(c) < 32 else c for c in label[:MESSAGE_LABEL_MAX])
    of_leg = "" if leg is None else f" {leg}"
    subject = f"li run {run_id}{of_leg}{shown}"
    whose = f"run {run_id}" if leg is None else f"leg {leg} of run {run_id}"
    return f"{subject}\n\nThe changes the work of {whose} left in its worktree" + (
        f" (it ended {status})." if status else ".")


def patch_artifact_for(leg: str | None = None) -> str:
    """The artifact holding the patch: `changes.patch` for a run's one worktree,
    `changes-<leg>.patch` for each leg's of a run of several legs."""
    return PATCH_ARTIFACT if leg is None else f"changes-{leg}.patch"


NonEmpty = Annotated[str, Meta(min_length=1)]
Count = Annotated[int, Meta(ge=0)]


class Worktree(Struct, frozen=True):
    """Where a run works: the repository (its top level), the commit it started from, its branch
    and the worktree's path."""

    repository: NonEmpty
    base_commit: NonEmpty
    branch: NonEmpty
    path: NonEmpty

    @classmethod
    def from_dict(cls, data: object) -> Worktree:
        if not isinstance(data, dict):
            raise TypeError("worktree must be an object")
        values = {k: data.get(k) for k in ("repository", "base_commit", "branch", "path")}
        if not all(isinstance(v, str) and v for v in values.values()):
            raise TypeError("worktree fields must be non-empty strings")
        return cls(**values)  # type: ignore[arg-type]  # checked above


class Changes(Struct, frozen=True):
    """What the work left, as li committed it: the commit (None when it left nothing), the files
    changed, the lines inserted and deleted, and the artifact holding the patch."""

    commit: str | None
    files: Count
    insertions: Count
    deletions: Count
    patch_artifact: str | None

    @classmethod
    def from_dict(cls, data: object) -> Changes:
        if not isinstance(data, dict):
            raise TypeError("changes must be an object")
        counts = [data.get(k) for k in ("files", "insertions", "deletions")]
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
            raise TypeError("changes counts must be whole numbers")
        commit, patch = data.get("commit"), data.get("patch_artifact")
        if not all(v is None or isinstance(v, str) for v in (commit, patch)):
            raise TypeError("changes commit and patch_artifact must be strings")
        return cls(commit, counts[0], counts[1], counts[2], patch)  # type: ignore[arg-type]

    @property
    def empty(self) -> bool:
        return self.commit is None


NO_CHANGES = Changes(commit=None, files=0, insertions=0, deletions=0, patch_artifact=None)


class LegWorktree(Struct, frozen=True):
    """One leg's (a fanout's leg, a flow's step) own worktree in a run of several legs, and what
    li committed of that leg's work there (None until the leg's end was committed)."""

    leg: NonEmpty
    worktree: Worktree
    changes: Changes | None = None


def with_leg_changes(entries: list[LegWorktree], leg: str, changes: Changes) -> list[LegWorktree] | None:
    """`entries` with `leg`'s changes recorded; None when that leg has none to record (no such
    leg, or its changes are recorded already: the first commit recorded stays)."""
    if not any(e.leg == leg and e.changes is None for e in entries):
        return None
    return [LegWorktree(e.leg, e.worktree, changes) if e.leg == leg else e for e in entries]


def several_legs_refusal(verb: str, run_id: str, legs: list[str]) -> str:
    """The one line that asks for --leg on a run whose legs each have a worktree of their own."""
    shown = ", ".join(legs[:20]) + (" …" if len(legs) > 20 else "")
    return (f"{run_id} has {len(legs)} legs, each with its own worktree and changes; name one: "
            f"li job {verb} {run_id} --leg LEG (its legs: {shown})")


def parse_numstat(text: str) -> tuple[int, int, int]:
    """(files, insertions, deletions) of `git diff --numstat` output; a binary file (`-\t-`) counts
    as a file with no lines."""
    files = insertions = deletions = 0
    for line in text.splitlines():
        parts = line.split("\t", 2)
        if len(parts) < 3:
            continue
        files += 1
        insertions += int(parts[0]) if parts[0].isdigit() else 0
        deletions += int(parts[1]) if parts[1].isdigit() else 0
    return files, insertions, deletions


def changes_column(changes: Changes | None) -> str:
    """What `li job list`'s CHANGES column shows: `+12 −3, 2 files`; blank for a run without a worktree."""
    if changes is None:
        return ""
    if changes.files == 0:
        return "none"
    return f"+{changes.insertions} \u2212{changes.deletions}, {changes.files} file{'s' if changes.files != 1 else ''}"


def legs_changes_column(changes: list[Changes | None]) -> str:
    """CHANGES for a run of several legs, each in a worktree of its own: what li committed of the
    legs ended so far, summed (a file two legs changed counts in each), and of how many legs:
    `+12 −3, 4 files in 2 of 3 legs`; blank while no leg's changes are committed."""
    committed = [c for c in changes if c is not None]
    if not committed:
        return ""
    files = sum(c.files for c in committed)
    of = f"{len(committed)} of {len(changes)} legs" if len(committed) < len(changes) else f"{len(changes)} legs"
    if files == 0:
        return f"none in {of}"
    insertions, deletions = sum(c.insertions for c in committed), sum(c.deletions for c in committed)
    return f"+{insertions} \u2212{deletions}, {files} file{'s' if files != 1 else ''} in {of}"


def removable(status_lines: str) -> bool:
    """A worktree may be removed only when `git status --porcelain` says nothing is left in it
    that li did not commit (ignored files, such as those copied in from .worktreeinclude, aside)."""
    return not any(line.strip() for line in status_lines.splitlines())


def reply_refusal(kind: str | None, provider: str | None, session_id: str | None, terminal: bool) -> str | None:
    """Why a run cannot be replied to (None when it can): it must be a one-leg agent run of an
    agent CLI that recorded the session id its stream carried, and it must have ended."""
    if kind != "agent":
        return "only a one-leg agent run can be replied to"
    if provider == "sh" or not _resume_of(provider):
        return "an sh run has no conversation to continue" if provider == "sh" else \
            f"the {provider} provider cannot resume a session"
    if not terminal:
        return "the run has not ended; reply once it has (li job wait RUN)"
    if not session_id:
        return "the run's event stream carried no session id, so its conversation cannot be resumed"
    return None


class WorktreePlan(Struct, frozen=True):
    """What a submit asks of the runner's worktree (in request.json): the repository (its top level
    and common git dir, found before anything was written), the base commit `--base` (else HEAD)
    resolved to, the setup command, and, for a reply, the worktree it continues in (`reuse`)."""

    repository: str
    common_dir: str
    base_commit: str
    setup: str | None = None
    reuse: Worktree | None = None
    leg: str | None = None  # set on the copy a leg of a multi-leg run works with

    def to_dict(self) -> dict[str, Any]:
        reuse = self.reuse
        return {"repository": self.repository, "common_dir": self.common_dir, "base_commit": self.base_commit,
                "setup": self.setup, "reuse": None if reuse is None else {
                    "repository": reuse.repository, "base_commit": reuse.base_commit, "branch": reuse.branch,
                    "path": reuse.path}}

    @classmethod
    def from_dict(cls, data: object) -> WorktreePlan:
        if not isinstance(data, dict):
            raise TypeError("worktree must be an object")
        texts = [data.get(k) for k in ("repository", "common_dir", "base_commit")]
        if not all(isinstance(t, str) and t for t in texts):
            raise TypeError("worktree repository, common_dir and base_commit must be strings")
        setup = data.get("setup")
        if setup is not None and not isinstance(setup, str):
            raise TypeError("worktree setup must be a string")
        reuse = data.get("reuse")
        return cls(texts[0], texts[1], texts[2], setup,  # type: ignore[arg-type]
                   None if reuse is None else Worktree.from_dict(reuse))

    def target(self, run_id: str) -> Worktree:
        """The worktree this plan makes for `run_id` (or the one it reuses)."""
        if self.reuse is not None:
            return self.reuse
        return Worktree(repository=self.repository, base_commit=self.base_commit,
                        branch=branch_for(run_id, self.leg), path=worktree_path(self.common_dir, run_id, self.leg))


def shared_git_paths(common_dir: str) -> tuple[str, ...]:
    """What of a repository every worktree shares and a run's work must not change: its
    config (programs git runs for the person: `core.fsmonitor`, filters), its hooks and its info
    (attributes, excludes). A folder's path ends with `/`."""
    top = common_dir.rstrip("/")
    return (f"{top}/config", f"{top}/hooks/", f"{top}/info/")


# The fallback where the shared git paths cannot be made read-only to the work
# (`--confine off`, or the kernel refused confinement), li fingerprints them before the work and
# after it. A fingerprint maps each path under the common dir (`config`, `hooks/pre-commit`, ...)
# to what it is: `file <mode> <sha256>`, `link <target>`, `dir <mode>`, or `other <mode>`; an
# absent path is simply not a key. Bounded: FINGERPRINT_MAX_ENTRIES paths, FINGERPRINT_MAX_BYTES
# hashed per file (the rest counted by size); the cut is a key of its own (FINGERPRINT_CUT).
FINGERPRINT_MAX_ENTRIES = 4096
FINGERPRINT_MAX_BYTES = 4 * 1024 * 1024
FINGERPRINT_CUT = "…"  # key present when more paths existed than were fingerprinted
REPOSITORY_CHANGES_MAX = 50  # paths named on a run's record
SHARED_FINGERPRINT = "repository.fingerprint.json"  # the run file holding the fingerprint taken before


def repository_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The shared paths whose fingerprint differs (added, removed or changed), sorted, at most
    REPOSITORY_CHANGES_MAX; an empty list when nothing changed. Pure: two fingerprints in."""
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    return changed[:REPOSITORY_CHANGES_MAX]


def patch_files(patch: str) -> list[dict[str, Any]]:
    """Each file a `git diff` patch touches, with its inserted and deleted lines (None for a binary
    file), read from the patch alone: no repository needed, so any host of a shared store can."""
    rows: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    in_hunk = False
    for line in patch.split("\n"):
        if line.startswith("diff --git "):
            head = line[len("diff --git "):]
            path = head.split(" b/", 1)[1] if " b/" in head else head
            current = {"path": path, "insertions": 0, "deletions": 0}
            rows.append(current)
            in_hunk = False
        elif current is None:
            continue
        elif line.startswith("@@"):
            in_hunk = True
        elif line.startswith("GIT binary patch") or line.startswith("Binary files "):
            current["insertions"] = current["deletions"] = None
        elif in_hunk and line.startswith("+") and current["insertions"] is not None:
            current["insertions"] += 1
        elif in_hunk and line.startswith("-") and current["deletions"] is not None:
            current["deletions"] += 1
    return rows
