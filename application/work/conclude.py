"""After a run's legs: what they left stopped, the worktree committed, artifacts and manifest kept, the end recorded."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from lionrun.application.busy import retry_busy
from lionrun.application.orchestrate import LegOutcome
from lionrun.application.ports import (
    RunNotFound,
    StoreBusy,
    StoreRefused,
)
from lionrun.application.work.manifest import build_manifest, meter, produced, vendor_facts
from lionrun.application.work.parts import (
    UNWRITABLE,
    ArtifactNames,
    Workspace,
    failure_text,
)
from lionrun.application.work.state import WorkState
from lionrun.application.worktrees import RunWorktrees
from lionrun.domain.availability import UNREADABLE, Availability
from lionrun.domain.budget import (
    BUDGET_EXCEEDED,
    budget_value,
    spend_of,
    total,
)
from lionrun.domain.ending import End, decide
from lionrun.domain.lifecycle import classify, exit_code_of
from lionrun.domain.request import AGENT_PROVIDERS, RunRequest
from lionrun.domain.run import END_NOT_WRITTEN_BY_RUNNER, RecordUnusable, Run, iso
from lionrun.domain.worktree import (
    SHARED_FINGERPRINT,
    repository_changes,
)

if TYPE_CHECKING:
    from lionrun.domain.slurm import AnnouncedStop


class Concluding(WorkState):
    """Records what the work left and how it ended."""

    def _conclude(self, run_id: str, request: RunRequest | None, outcomes: list[LegOutcome], error: str | None,
                  began: float, workspace: Workspace) -> Run | None:
        """After the legs: what of the work still lives stopped, the worktree's changes committed, the artifacts collected, the
        manifest written, the end recorded."""
        # The work has ended (its legs are gone): its time is taken now, before anything that may
        # wait out an outage of the store (the end's time never includes the outage).
        wall = self.clock.monotonic() - began
        ended_at = iso(self.clock.now())
        self._compare_shared(run_id, workspace)
        self._commit_worktree(run_id, workspace)
        if self.stop_strays is not None:
            try:
                self.stop_strays(lambda text: self._say(workspace, text))
            except Exception as exc:  # noqa: BLE001 - the end is still recorded
                self._say(workspace, f"li runner: the work's leftover processes were not looked for: {failure_text(exc)}\n")
        announced = self._announced() if self.cancelled else None
        artifacts = self._collect(run_id, outcomes, workspace)
        end = decide(outcomes, self.cancelled, produced(artifacts, outcomes), error, over_budget=self._spent())
        if announced is not None and end.status == "cancelled":
            end = End(status=announced.status, reason_code="timeout" if announced.status == "timed_out"
                      else end.reason_code, exit_code=exit_code_of(announced.status))
        self._write_manifest(run_id, request, outcomes, artifacts, wall, workspace)
        cost = meter(outcomes, wall)["cost_usd"]
        budget = self._budget_record(request, outcomes, end)
        return self._finish(run_id, end, workspace, cost["value"] if cost.get("available") else None,
                            vendor_facts(end, outcomes, self.clock.now), budget=budget, tokens=self._tokens(outcomes, budget),
                            ended_at=ended_at,
                            evidence=None if announced is None else announced.evidence)

    def _compare_shared(self, run_id: str, workspace: Workspace) -> None:
        """After the work: the shared paths fingerprinted before it, compared with what they are now;
        any change is named on the record (`repository_changes`) and on the console."""
        if self.git is None:
            return
        try:
            before = json.loads(self.files.read_text(run_id, SHARED_FINGERPRINT))
        except (OSError, ValueError, StoreRefused):
            return  # nothing fingerprinted: the shared paths were read-only to the work (or no worktree)
        try:
            if not isinstance(before, dict) or not isinstance(before.get("fingerprint"), dict):
                raise ValueError("the fingerprint taken before the work is unreadable")
            changed = repository_changes(before["fingerprint"],
                                         self.git().shared_fingerprint(str(before["common_dir"])))
        except Exception as exc:  # noqa: BLE001 - the end is still recorded
            self._say(workspace, f"li runner: the repository's config and hooks could not be compared: {failure_text(exc)}\n")
            return
        if changed:
            self._say(workspace, f"li runner: the work changed the repository's shared config or hooks: "
                                 f"{', '.join(changed)} (under {before['common_dir']})\n")
        with suppress(Exception):
            self.store.update(run_id, lambda current: current.evolve(repository_changes=changed))

    def _commit_worktree(self, run_id: str, workspace: Workspace) -> None:
        """Commit what the work left in the run's worktree (any outcome); a commit that fails is said
        on the console and leaves the worktree as it is, for `li job diff` to recover. A run of
        several legs has each leg's worktree committed to that leg's branch."""
        try:
            run = self.store.read(run_id)
        except Exception:  # noqa: BLE001 - the end is still recorded
            return
        if run.leg_worktrees and self.git is not None:
            self._commit_legs(run, workspace)
            return
        if run.worktree is None or run.changes is not None or self.git is None:
            return
        try:
            status = "cancelled" if self.cancelled else None
            self._changes = RunWorktrees(self.git(), self.store, self.files).conclude(run, status)
            changes = self._changes
            self._say(workspace, f"li runner: committed {changes.commit[:12]} on {run.worktree.branch}: "
                                 f"{changes.files} files, +{changes.insertions} -{changes.deletions}\n"
                      if changes.commit else "li runner: the work left no changes in its worktree\n")
        except Exception as exc:  # noqa: BLE001 - never costs the end; the worktree keeps the work
            self._say(workspace, f"li runner: the worktree's changes could not be committed: {failure_text(exc)}; "
                                 f"they stay in {run.worktree.path}\n")

    def _commit_legs(self, run: Run, workspace: Workspace) -> None:
        """Each leg's worktree committed to its branch and recorded on its entry (`leg_worktrees`);
        one leg's commit failing is said and never stops another's."""
        assert self.git is not None
        status = "cancelled" if self.cancelled else None
        for entry in run.leg_worktrees or []:
            if entry.changes is not None:
                continue
            try:
                changes = RunWorktrees(self.git(), self.store, self.files).conclude_leg(run, entry, status)
                self._say(workspace, f"li runner: committed {changes.commit[:12]} on {entry.worktree.branch}: "
                                     f"{changes.files} files, +{changes.insertions} -{changes.deletions}\n"
                          if changes.commit else f"li runner: {entry.leg} left no changes in its worktree\n")
            except Exception as exc:  # noqa: BLE001 - never costs the end; the worktree keeps the work
                self._say(workspace, f"li runner: the changes of {entry.leg} could not be committed: {failure_text(exc)}; "
                                     f"they stay in {entry.worktree.path}\n")

    def _announced(self) -> AnnouncedStop | None:
        """What the batch system said of the stop (never raises: the runner's verdict then stands)."""
        if self.stop_cause is None:
            return None
        try:
            return self.stop_cause()
        except Exception:  # noqa: BLE001 - an unreadable answer leaves the end `cancelled`
            return None

    def _tokens(self, outcomes: list[LegOutcome], budget: dict[str, Any] | None) -> int | None:
        """The tokens the run's agents reported (a queue's budget counts them), else None."""
        if budget is not None:
            return int(budget["spent_tokens"])
        ran = [o.result.usage for o in outcomes if o.result is not None and o.leg.model.provider in AGENT_PROVIDERS]
        return total([spend_of(usage) for usage in ran]).tokens if ran else None

    def _budget_record(self, request: RunRequest | None, outcomes: list[LegOutcome], end: End) -> dict[str, Any] | None:
        """The record's `budget` at the end: the limits, the spend (the legs' streams as counted while
        they ran, else their final usage) and which limit stopped the run."""
        if request is None or request.budget is None:
            return None
        watch = self._budget
        spent = watch.spent() if watch is not None else total([spend_of(o.result.usage) for o in outcomes
                                                              if o.result is not None])
        exceeded = watch.exceeded if watch is not None else None
        if exceeded is None and end.reason_code == BUDGET_EXCEEDED:
            exceeded = spent.crossed(request.budget) or "cost"  # the CLI stopped itself at its own cap
        return budget_value(request.budget, spent, exceeded)

    def _collect(self, run_id: str, outcomes: list[LegOutcome], workspace: Workspace) -> ArtifactNames:
        """The regular files the run left under artifacts/, or why that cannot be established (D7).

        Nothing here may stop the end from being recorded: a lost answer, a store that raises, a
        listing that is not one all become `available: false`, said on the console too.
        """
        found = self._artifact_names(run_id, outcomes)
        if not found.available:
            self._say(workspace, f"li runner: the artifacts are unavailable ({found.reason_code}): {found.detail}\n")
        return found

    def _artifact_names(self, run_id: str, outcomes: list[LegOutcome]) -> ArtifactNames:
        lost = [o.artifact_error for o in outcomes if o.artifact_error]
        if lost:
            return Availability.unavailable(UNWRITABLE, "; ".join(lost))
        try:
            # A shared store takes the work's files in now (waiting out an outage of its server).
            self.outage.call("the artifacts", lambda: self.files.seal_artifacts(run_id))
            listing = self.files.artifacts(run_id)
            if not listing.available:
                return Availability.unavailable(listing.reason_code or UNREADABLE, listing.detail)
            # A link, a FIFO or a folder is not output the work produced.
            return Availability.of(sorted(str(e["name"]) for e in listing.value or []
                                          if e.get("type", "file") == "file"))
        except Exception as exc:  # noqa: BLE001 - whatever the store does, the end is still recorded
            return Availability.unavailable(UNREADABLE, f"artifacts/ could not be listed: {failure_text(exc)}")

    def _write_manifest(self, run_id: str, request: RunRequest | None, outcomes: list[LegOutcome],
                        artifacts: ArtifactNames, wall: float, workspace: Workspace) -> None:
        try:
            manifest = build_manifest(run_id, request, outcomes, wall, artifacts)
            text = json.dumps(manifest, indent=1, sort_keys=True, default=repr)
            self.outage.call("the manifest", lambda: self.files.write_text(run_id, "manifest.json", text))
        except Exception as exc:  # noqa: BLE001 - a manifest that cannot be written never costs the end
            self._say(workspace, f"li runner: manifest.json not written: {failure_text(exc)}\n")

    def end_unstarted(self, run_id: str, workspace: Workspace, reason_code: str,
                      noted: Mapping[str, Any] | None = None) -> Run | None:
        """End a run whose work never started (killed while it waited for other runs, or
        one of them ended otherwise than asked): `cancelled` with `reason_code`, and `noted` kept
        in the record's extra (the dependency that ended it)."""
        self._workspace = workspace
        end = End(status="cancelled", reason_code=reason_code, exit_code=exit_code_of("cancelled"))
        return self._finish(run_id, end, workspace, noted=noted)

    def _finish(self, run_id: str, end: End, workspace: Workspace, cost_usd: float | None = None,
                facts: Mapping[str, str | None] | None = None, noted: Mapping[str, Any] | None = None,
                ended_at: str | None = None, evidence: Mapping[str, Any] | None = None,
                budget: dict[str, Any] | None = None, tokens: int | None = None) -> Run | None:
        """Record the end (with the cost the providers reported, for a listing's COST column), at
        `ended_at` (when the work ended; now when not given), with the batch system's word on a
        stop it announced as `terminal_evidence`, and `noted` kept in the record's extra."""
        now = ended_at or iso(self.clock.now())
        told: dict[str, Any] = _known(facts)
        mine: list[Run] = []
        found: list[Run] = []

        def change(current: Run) -> Run | None:
            reason = "kill_requested" if end.status == "cancelled" and current.kill_requested_at else end.reason_code
            if evidence is not None and not current.end_recorded:
                told["terminal_evidence"] = dict(evidence)
            if current.end_recorded:
                if current.terminal_source == "runner" and current.finished_at == now:
                    mine.append(current)  # this end, written by an attempt whose answer was lost
                    return None
                if current.runner_end is not None:
                    return None  # already said, by an attempt whose answer was lost
                # An end this runner did not write, while it was alive to write its own: never
                # relabelled, never kept silently either. What the runner saw is
                # recorded beside it, for every reader to show.
                found.append(current)
                return current.evolve(runner_end={
                    "status": end.status, "outcome": classify(end.status), "exit_code": end.exit_code,
                    "reason_code": END_NOT_WRITTEN_BY_RUNNER, "work_reason_code": reason, "finished_at": now,
                    "found": {"status": current.status, "outcome": current.outcome,
                              "exit_code": current.exit_code, "terminal_source": current.terminal_source}})
            extra = _end_extra(current.extra, cost_usd, noted, tokens)
            spent: dict[str, Any] = {} if budget is None else {"budget": budget}
            if self._attempts:  # the last attempt ends with the run
                last = {**self._attempts[-1], "ended_at": now, "status": end.status, "reason_code": reason,
                        "next_at": None}
                spent["attempts"] = [*self._attempts[:-1], last]
            return current.evolve(**spent,status=end.status, outcome=classify(end.status), reason_code=reason,
                                  exit_code=end.exit_code, finished_at=now, terminal_source="runner", extra=extra,
                                  changes=self._changes if self._changes is not None else current.changes, **told)

        ended = self._update(run_id, change, workspace)
        if found:
            self._say(workspace, f"li runner: the work ended {end.status} (exit {end.exit_code}), but the record "
                                 f"already held an end this runner did not write ({found[-1].status}); "
                                 f"recorded as runner_end ({END_NOT_WRITTEN_BY_RUNNER})\n")
            return None  # not this runner's end: no notice of it, and the runner does not exit by it
        if ended is None and mine:
            ended = mine[-1]
        if ended is not None:
            self._say(workspace, f"li runner: {ended.status}"
                                 f"{f' ({ended.reason_code})' if ended.reason_code else ''}\n")
            try:
                self.after_end(ended)
            except Exception as exc:  # noqa: BLE001 - a notice failing never unrecords the end
                self._say(workspace, f"li runner: after-end hook failed: {type(exc).__name__}: {exc}\n")
        return ended

    def _update(self, run_id: str, change: Callable[[Run], Run | None], workspace: Workspace) -> Run | None:
        """The fenced write of the end: a busy store is tried again (application/busy.py), a store
        that is unavailable is waited for (`outage`), a store that refuses stops it at once."""
        try:
            return retry_busy(lambda: self.outage.call("the end", lambda: self.store.update(run_id, change)),
                              self.clock.sleep)
        except StoreBusy:
            self._say(workspace, "li runner: the end could not be recorded: the record stayed locked\n")
        except (StoreRefused, RunNotFound, RecordUnusable, OSError) as exc:
            self._say(workspace, f"li runner: the end could not be recorded: {exc}\n")
        return None


def _end_extra(extra: dict[str, Any], cost_usd: float | None, noted: Mapping[str, Any] | None,
               tokens: int | None) -> dict[str, Any]:
    """The record's extra at the end: the cost the providers reported, what the end notes (the
    dependency that ended it) and the tokens the run's agents reported."""
    extra = extra if cost_usd is None else {**extra, "cost_usd": cost_usd}
    if noted:
        extra = {**extra, **noted}
    return extra if not tokens else {**extra, "tokens": tokens}


def _known(facts: Mapping[str, str | None] | None) -> dict[str, Any]:
    """The vendor's facts that are known (a fact it did not tell is not written)."""
    return {k: v for k, v in (facts or {}).items() if v is not None}
