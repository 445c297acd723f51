"""`li store copy`: move the runs of one store (a filesystem store) into another (PostgreSQL).

Each run goes in whole, in one import, or not at all: a copy that stops half-way leaves every run
either copied or absent, and copying again takes in only what is missing (idempotent, resumable).
A record the source cannot read is skipped and reported, never guessed; a run that has not ended
is skipped too (copying a live run would split its authority between two stores).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from lionrun.application.ports import (
    ArtifactBytes,
    ImportedArtifact,
    RunFiles,
    RunImport,
    RunNotFound,
    RunRecords,
)
from lionrun.domain.availability import MISSING, TOO_LARGE, UNREADABLE
from lionrun.domain.run import RecordUnusable

RUN_FILES = ("instruction.txt", "request.json", "manifest.json")
SKIPPED_SHOWN_MAX = 100  # the answer names at most this many skipped runs (the count is always whole)
NOT_ENDED = "not_ended"
CONSOLE_CHUNK = 64 * 1024


class CopySource(RunRecords, RunFiles, ArtifactBytes, Protocol):
    """The store copied from."""


@dataclass(frozen=True)
class SkippedRun:
    run_id: str
    reason_code: str
    detail: str


@dataclass
class CopyOutcome:
    copied: int = 0
    already_there: int = 0
    skipped: int = 0
    skipped_runs: list[SkippedRun] = field(default_factory=list)

    def skip(self, run_id: str, reason_code: str, detail: str) -> None:
        self.skipped += 1
        if len(self.skipped_runs) < SKIPPED_SHOWN_MAX:
            self.skipped_runs.append(SkippedRun(run_id, reason_code, detail))


class Unreadable(Exception):
    def __init__(self, reason_code: str, detail: str) -> None:
        super().__init__(detail)
        self.reason_code = reason_code
        self.detail = detail


def copy_runs(source: CopySource, target: RunImport) -> CopyOutcome:
    """Copy every ended run of `source` that `target` lacks. Raises StoreRefused when the target
    refuses (the runs imported before stay whole; a re-run resumes)."""
    outcome = CopyOutcome()
    for run_id in list(source.run_ids()):
        try:
            run = source.read(run_id)
        except RunNotFound:
            continue  # removed since it was listed
        except RecordUnusable as exc:
            outcome.skip(run_id, exc.reason_code, exc.detail)
            continue
        if not run.end_recorded:
            outcome.skip(run_id, NOT_ENDED, "the run has not recorded an end; copy it once it has")
            continue
        try:
            files = _files(source, run_id)
            console = _stream(source.console_bytes, run_id, "console.log")
            li_log = _stream(source.li_log_bytes, run_id, "li.log")
            artifacts = _artifacts(source, run_id, target.artifact_body_max)
        except Unreadable as exc:
            outcome.skip(run_id, exc.reason_code, exc.detail)
            continue
        try:
            imported = target.import_run(run, files, console, artifacts, li_log)
        except Unreadable as exc:  # the console failed mid-way: the import was undone
            outcome.skip(run_id, exc.reason_code, exc.detail)
            continue
        if imported:
            outcome.copied += 1
        else:
            outcome.already_there += 1
    return outcome


def _files(source: CopySource, run_id: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for name in RUN_FILES:
        try:
            files[name] = source.read_text(run_id, name)
        except FileNotFoundError:
            continue  # a run without it (a spawn failure has no manifest)
        except (OSError, RecordUnusable, RunNotFound) as exc:
            raise Unreadable(getattr(exc, "reason_code", UNREADABLE), f"{name}: {exc}") from None
    return files


Read = Callable[[str, int, int], tuple[bytes, int]]


def _stream(read: Read, run_id: str, name: str) -> Iterator[bytes] | None:
    """A stream's bytes (the console, or the li log) a chunk at a time (never all of it in
    memory), None when there is none."""
    try:
        _, size = read(run_id, 0, 0)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(getattr(exc, "reason_code", UNREADABLE), f"{name}: {exc}") from None
    return _chunks(read, run_id, name, size)


def _chunks(read: Read, run_id: str, name: str, size: int) -> Iterator[bytes]:
    offset = 0
    while offset < size:  # the size when the copy began: an ended run's console does not grow
        try:
            chunk, _ = read(run_id, offset, min(CONSOLE_CHUNK, size - offset))
        except OSError as exc:
            raise Unreadable(getattr(exc, "reason_code", UNREADABLE), f"{name}: {exc}") from None
        if not chunk:
            raise Unreadable(UNREADABLE, f"{name} shrank below {size} bytes while it was copied")
        yield chunk
        offset += len(chunk)


def _artifacts(source: CopySource, run_id: str, body_max: int) -> list[ImportedArtifact] | None:
    listing = source.artifacts(run_id)
    if not listing.available:
        if listing.reason_code == MISSING:
            return None
        raise Unreadable(listing.reason_code or UNREADABLE, listing.detail or "artifacts/ cannot be listed")
    out: list[ImportedArtifact] = []
    for entry in listing.value or []:
        stored: dict[str, Any] = dict(entry)
        body: bytes | None = None
        if entry.get("type") == "file" and entry.get("sha256"):
            if int(entry.get("size") or 0) > body_max:
                stored.update(available=False, reason_code=TOO_LARGE)
            else:
                try:
                    body = source.artifact_bytes(run_id, str(entry["name"]), body_max)
                except OSError as exc:
                    stored.update(available=False, reason_code=getattr(exc, "reason_code", UNREADABLE))
                if body is not None and hashlib.sha256(body).hexdigest() != entry["sha256"]:
                    body = None  # changed since it was listed: never kept under another digest
                    stored.update(available=False, reason_code=UNREADABLE)
        out.append(ImportedArtifact(stored, body))
    return out
