"""The runner always records its end: whatever fails while collecting artifacts or writing the manifest.

The store is wrapped (like `adapters/faults.py` wraps the real one) so that listing artifacts or
writing a file raises; the end must still be recorded, its status decided by the work itself.
"""

from __future__ import annotations

import errno
import io
from typing import Any

import pytest
from dependency_injector import providers

from lionrun.adapters.memory_store import MemoryRunStore
from lionrun.application.orchestrate import LegOutcome
from lionrun.application.ports import ProviderResult
from lionrun.application.work import Workspace
from lionrun.domain.availability import Availability
from lionrun.domain.ending import decide
from lionrun.domain.request import Leg, ModelSpec, RunRequest
from lionrun.domain.run import Run
from tests.unit.test_submit_work import FakeProvider
from tests.worlds import make_world


class FaultyStore:
    """Delegates to the memory store, but listing artifacts or writing chosen files fails as told."""

    def __init__(self, inner: MemoryRunStore) -> None:
        self._inner = inner
        self.listing: BaseException | Availability[list[dict[str, Any]]] | None = None
        self.refused: dict[str, BaseException] = {}  # file name prefix -> what writing it raises

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def artifacts(self, run_id: str) -> Availability[list[dict[str, Any]]]:
        if isinstance(self.listing, BaseException):
            raise self.listing
        if self.listing is not None:
            return self.listing
        found: Availability[list[dict[str, Any]]] = self._inner.artifacts(run_id)
        return found

    def write_text(self, run_id: str, name: str, text: str) -> None:
        failure = next((exc for prefix, exc in self.refused.items() if name.startswith(prefix)), None)
        if failure is not None:
            raise failure
        self._inner.write_text(run_id, name, text)


class FullLiLog(io.StringIO):
    """A li log whose disk filled up once the work had written its output: the runner's lines fail."""

    def write(self, text: str) -> int:
        if text.startswith("li runner"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(text)


@pytest.fixture
def store() -> FaultyStore:
    return FaultyStore(MemoryRunStore())


def run_work(store: FaultyStore, answer: ProviderResult, legs: tuple[Leg, ...] | None = None,
             kind: str = "agent", li_log: io.StringIO | None = None, cancel: bool = False,
             hook: Any = None) -> tuple[Run | None, str, str]:
    """Submit one run over the faulty memory store and perform its work; (ended record, li log, run
    id). The console holds the work's bytes alone (the fake providers' lines), never li's."""
    world = make_world("memory", "/nonexistent")
    world.container.core.store.override(providers.Object(store))
    registry = {name: FakeProvider(name, lambda prompt, model: answer) for name in ("sh", "claude", "codex")}
    world.container.submit.provider_registry.override(providers.Object(registry))
    legs = legs or (Leg("main", ModelSpec("sh")),)
    request = RunRequest(kind=kind, instruction="do it", legs=legs, cwd="/tmp")
    run_id = world.container.submit.submitter().submit(request).run_id
    work = world.container.submit.work(after_end=hook) if hook is not None else world.container.submit.work()
    if cancel:
        work.cancel()
    console = io.StringIO()
    li_log = li_log if li_log is not None else io.StringIO()
    ended = work.perform(run_id, Workspace(console, {"LI_RUN_ID": run_id}, li_log))
    work_lines = {"running do it", *(f"[{leg.id}] running do it" for leg in legs)}  # a fanout's legs prefixed
    assert set(console.getvalue().splitlines()) <= work_lines, console.getvalue()
    return ended, li_log.getvalue(), run_id


def manifest_of(store: FaultyStore, run_id: str) -> dict[str, Any]:
    found = store.manifest(run_id)
    assert found.available, found
    value: dict[str, Any] = found.value
    return value


def test_a_listing_that_raises_still_records_the_end_and_the_work_that_exited_0_completed(store) -> None:
    store.listing = RuntimeError("digesting /proc went wrong")  # not an OSError
    ended, console, run_id = run_work(store, ProviderResult(0, answer=None))
    assert ended is not None
    assert (ended.status, ended.outcome, ended.reason_code, ended.exit_code) == (
        "completed", "succeeded", "artifacts_unavailable", 0)
    assert store.read(run_id).finished_at == ended.finished_at and ended.terminal_source == "runner"
    artifacts = manifest_of(store, run_id)["artifacts"]
    assert (artifacts["available"], artifacts["value"], artifacts["reason_code"]) == (False, None, "unreadable")
    assert "RuntimeError" in artifacts["detail"] and "digesting /proc" in artifacts["detail"]
    assert "artifacts are unavailable (unreadable)" in console and "digesting /proc" in console


def test_an_unavailable_listing_is_never_read_as_work_that_produced_nothing(store) -> None:
    store.listing = Availability.unavailable("not_a_directory", "artifacts is a symbolic link, not a folder")
    ended, console, run_id = run_work(store, ProviderResult(0, answer=None))
    assert ended is not None and (ended.status, ended.reason_code) == ("completed", "artifacts_unavailable")
    artifacts = manifest_of(store, run_id)["artifacts"]
    assert (artifacts["available"], artifacts["reason_code"]) == (False, "not_a_directory")
    assert "symbolic link" in artifacts["detail"] and "symbolic link" in console


def test_failed_work_stays_failed_when_its_artifacts_cannot_be_listed(store) -> None:
    store.listing = ValueError("a listing that is not one")
    ended, _, run_id = run_work(store, ProviderResult(3, answer=None))
    assert ended is not None
    assert (ended.status, ended.outcome, ended.reason_code, ended.exit_code) == ("failed", "failed", "exit_nonzero", 3)
    assert store.read(run_id).end_recorded


def test_a_cancelled_run_stays_cancelled_when_its_artifacts_cannot_be_listed(store) -> None:
    store.listing = RuntimeError("boom")
    ended, _, _ = run_work(store, ProviderResult(0, answer="a"), cancel=True)
    assert ended is not None and (ended.status, ended.outcome) == ("cancelled", "cancelled")


def test_an_answer_that_cannot_be_written_leaves_the_leg_completed_and_says_why(store) -> None:
    store.refused["artifacts/"] = OSError(errno.ELOOP, "Too many levels of symbolic links")
    ended, console, run_id = run_work(store, ProviderResult(0, answer="the answer"))
    assert ended is not None
    assert (ended.status, ended.outcome, ended.reason_code) == ("completed", "succeeded", "artifacts_unavailable")
    found = manifest_of(store, run_id)
    (leg,) = found["legs"]
    assert (leg["status"], leg["artifact"]) == ("completed", None)
    assert "artifacts/response.md could not be written" in leg["artifact_error"]
    assert (found["artifacts"]["available"], found["artifacts"]["reason_code"]) == (False, "unwritable")
    assert "response.md could not be written" in console


def test_an_answer_write_that_raises_anything_fails_no_other_leg(store) -> None:
    store.refused["artifacts/leg-1"] = RuntimeError("store bug")
    legs = (Leg("leg-1", ModelSpec("sh")), Leg("leg-2", ModelSpec("claude")))
    ended, _, run_id = run_work(store, ProviderResult(0, answer="x"), legs=legs, kind="fanout")
    assert ended is not None and (ended.status, ended.reason_code) == ("completed", "artifacts_unavailable")
    legs_written = {leg["id"]: leg["artifact"] for leg in manifest_of(store, run_id)["legs"]}
    assert legs_written == {"leg-1": None, "leg-2": "artifacts/leg-2.md"}
    assert store.read_text(run_id, "artifacts/leg-2.md") == "x"


@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "No space left on device"), RuntimeError("store bug")])
def test_a_manifest_that_cannot_be_written_never_costs_the_end(store, failure: BaseException) -> None:
    store.refused["manifest.json"] = failure
    ended, console, run_id = run_work(store, ProviderResult(0, answer="a"))
    assert ended is not None and (ended.status, ended.outcome) == ("completed", "succeeded")
    assert store.read(run_id).end_recorded
    assert store.manifest(run_id).available is False
    assert "manifest.json not written" in console and str(failure) in console


def test_everything_failing_at_once_still_records_the_end_and_runs_the_hook(store) -> None:
    store.listing = RuntimeError("listing bug")
    store.refused.update({"artifacts/": RuntimeError("write bug"), "manifest.json": OSError(errno.EIO, "I/O")})
    hooked: list[Run] = []
    ended, _, run_id = run_work(store, ProviderResult(0, answer="a"), li_log=FullLiLog(), hook=hooked.append)
    assert ended is not None and ended.status == "completed"
    assert store.read(run_id).end_recorded and [r.run_id for r in hooked] == [run_id]


def test_a_listing_that_works_is_recorded_in_the_manifest(store) -> None:
    ended, _, run_id = run_work(store, ProviderResult(0, answer="a"))
    assert ended is not None and (ended.status, ended.reason_code) == ("completed", None)
    assert manifest_of(store, run_id)["artifacts"] == {
        "available": True, "value": ["response.md"], "reason_code": None, "detail": None}


def test_uncollectable_artifacts_decide_completed_never_completed_empty() -> None:
    outcomes = [LegOutcome(Leg("l", ModelSpec("sh")), "completed", None, ProviderResult(0))]
    end = decide(outcomes, False, None, None)
    assert (end.status, end.reason_code, end.exit_code) == ("completed", "artifacts_unavailable", 0)
    failed = [LegOutcome(Leg("l", ModelSpec("sh")), "failed", "exit_nonzero", ProviderResult(2))]
    assert decide(failed, False, None, None).status == "failed"
    assert decide(outcomes, False, False, None).status == "completed_empty"
