"""resolve(): one pure step from a record and a finding to li's answer and the end to publish.

The property pins resolve() to the path the Observer took before it existed: judge eligibility,
build the reap, derive the answer from the reaped record (or from the record as read).
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain import Derivation, Finding, Run, resolve
from lionrun.domain.lifecycle import derive, reap, reapable
from lionrun.domain.run import iso
from tests.unit.test_lifecycle import NOW, SUBMITTED, findings, phases, recorded_outcomes, statuses

kills = st.none() | st.just(iso(NOW - timedelta(seconds=5)))
ages = st.sampled_from([0.0, 30.0, 599.0, 600.0, 7200.0])
ends = st.none() | st.just(iso(NOW))


def a_run(status: str, end: str | None, phase: str | None, outcome: str | None, kill: str | None,
          age: float) -> Run:
    return Run(run_id="20260725T175010-97f334", kind="agent", status=status,
               submitted_at=iso(NOW - timedelta(seconds=age)) if age else SUBMITTED,
               spawn_state=phase,  # type: ignore[arg-type]  # hostile records carry anything
               finished_at=end, outcome=outcome, pid=4242, kill_requested_at=kill)


def old_path(run: Run, finding: Finding | None, evidence: dict[str, object]) -> tuple[Derivation, Run | None]:
    """What the Observer did before resolve(): reapable, then reap, then derive the published record."""
    reaped = reap(run, finding, NOW, evidence) if finding is not None and reapable(run, finding) else None
    return derive(reaped or run, finding, NOW), reaped


@given(statuses, ends, phases, recorded_outcomes, kills, ages, findings)
def test_resolve_agrees_with_derive_and_reap_as_the_observer_composed_them(
    status: str, end: str | None, phase: str | None, outcome: str | None, kill: str | None, age: float,
    finding: Finding | None,
) -> None:
    record = a_run(status, end, phase, outcome, kill, age)
    evidence: dict[str, object] = {"judged_generation": record.generation}
    resolved = resolve(record, finding, NOW, evidence=evidence)
    assert (resolved.derivation, resolved.reap) == old_path(record, finding, evidence)
    assert resolved.as_read == derive(record, finding, NOW)


@given(statuses, ends, phases, recorded_outcomes, kills, ages, findings)
def test_a_reap_is_an_end_and_without_one_the_answer_is_the_record_as_read(
    status: str, end: str | None, phase: str | None, outcome: str | None, kill: str | None, age: float,
    finding: Finding | None,
) -> None:
    record = a_run(status, end, phase, outcome, kill, age)
    resolved = resolve(record, finding, NOW)
    if resolved.reap is None:
        assert resolved.derivation == resolved.as_read
        return
    assert not record.end_recorded and record.spawn_state == "started"
    assert resolved.reap.end_recorded and resolved.reap.terminal_source == "reaper"
    assert resolved.derivation.terminal
    assert resolved.derivation.outcome == ("cancelled" if kill is not None else "indeterminate")
    assert resolve(resolved.reap, finding, NOW).reap is None  # an end is never reaped again


def test_resolve_is_what_a_test_author_imports_from_the_domain() -> None:
    from lionrun import domain

    assert {"Run", "resolve", "derive", "Derivation", "Availability", "make_run_id", "Outcome",
            "SpawnState", "to_wire", "StatusData", "decide"} <= set(domain.__all__)


def test_no_export_of_the_domain_shares_its_name_with_a_submodule() -> None:
    """`from lionrun.domain import X` gives the same object whatever was imported before: an export named as
    a submodule would be replaced by the module as soon as that submodule is imported."""
    import pkgutil

    from lionrun import domain

    submodules = {info.name for info in pkgutil.iter_modules(domain.__path__)}
    assert submodules and set(domain.__all__) & submodules == set()
