"""judge(): conclusive findings end a run; every other finding leaves it alone (ADR-0107 evidence)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.evidence import (
    CONCLUSIVE,
    INCONCLUSIVE,
    HostFacts,
    ProcessObservation,
    is_own_host,
    judge,
    worth_probing,
)
from lionrun.domain.lifecycle import derive, reap, reapable
from lionrun.domain.run import STARTED, Incarnation, Run

HERE = HostFacts("host-a", "boot-1")
OURS = Incarnation("host-a", "boot-1", 4242, 1000.0, 4242)
NOW = datetime(2026, 8, 3, tzinfo=UTC)


def seen(exists: bool = True, create_time: float | None = 1000.0, **kw: object) -> ProcessObservation:
    return ProcessObservation(4242, exists, create_time, **kw)  # type: ignore[arg-type]


def started(incarnation: Incarnation | None = OURS, pid: int | None = 4242) -> Run:
    return Run("20260803T000000-abcdef", "agent", "running", "2026-08-03T00:00:00.000000+00:00",
               spawn_state=STARTED, pid=pid, incarnation=incarnation, generation=2)


def test_an_absent_pid_is_conclusive() -> None:
    assert judge(OURS, 4242, seen(exists=False, session=()), HERE).code == "pid_absent"


def test_a_live_process_with_another_create_time_is_a_recycled_pid() -> None:
    finding = judge(OURS, 4242, seen(create_time=1500.0), HERE)
    assert (finding.code, finding.conclusive, finding.alive) == ("pid_recycled", True, False)


def test_a_live_process_with_the_recorded_create_time_is_alive_and_never_conclusive() -> None:
    finding = judge(OURS, 4242, seen(create_time=1000.05), HERE)
    assert (finding.code, finding.conclusive, finding.alive) == ("alive", False, True)


def test_a_create_time_just_beyond_the_tolerance_is_recycled() -> None:
    assert judge(OURS, 4242, seen(create_time=1000.2), HERE).code == "pid_recycled"


def test_the_same_host_with_another_boot_id_has_rebooted() -> None:
    finding = judge(OURS, 4242, None, HostFacts("host-a", "boot-2"))
    assert (finding.code, finding.conclusive) == ("host_rebooted", True)


def test_a_zombie_of_ours_is_conclusive() -> None:
    assert judge(OURS, 4242, seen(zombie=True, session=()), HERE).code == "process_zombie"


def test_a_zombie_with_another_create_time_is_a_recycled_pid_not_ours() -> None:
    assert judge(OURS, 4242, seen(create_time=7.0, zombie=True), HERE).code == "pid_recycled"


def test_a_zombie_whose_identity_cannot_be_read_is_not_conclusive() -> None:
    finding = judge(OURS, 4242, seen(create_time=None, zombie=True), HERE)
    assert (finding.code, finding.conclusive) == ("identity_unreadable", False)


def test_another_hosts_record_is_foreign_and_not_ours_to_judge() -> None:
    finding = judge(OURS, 4242, seen(exists=False), HostFacts("host-b", "boot-1"))
    assert (finding.code, finding.conclusive, finding.local) == ("foreign_host", False, False)


def test_a_reader_that_cannot_tell_its_own_host_judges_nothing() -> None:
    finding = judge(OURS, 4242, seen(exists=False), HostFacts(None, None))
    assert (finding.code, finding.conclusive, finding.local) == ("identity_unreadable", False, False)


def test_access_denied_is_not_evidence_of_death() -> None:
    finding = judge(OURS, 4242, ProcessObservation(4242, True, access_denied=True), HERE)
    assert (finding.code, finding.conclusive, finding.alive) == ("access_denied", False, None)


def test_a_record_from_before_identity_existed_is_never_conclusive() -> None:
    finding = judge(None, 4242, seen(exists=False), HERE)
    assert (finding.code, finding.conclusive, finding.alive) == ("identity_not_recorded", False, False)


def test_an_incarnation_without_a_host_id_is_identity_not_recorded() -> None:
    legacy = Incarnation(None, None, 4242, None, None)
    assert judge(legacy, 4242, seen(), HERE).code == "identity_not_recorded"


def test_an_unrecorded_create_time_cannot_tell_a_recycled_pid() -> None:
    partial = Incarnation("host-a", "boot-1", 4242, None, 4242)
    assert judge(partial, 4242, seen(create_time=5.0), HERE).code == "identity_not_recorded"


def test_a_probe_error_is_identity_unreadable() -> None:
    assert judge(OURS, 4242, seen(error="EIO"), HERE).code == "identity_unreadable"
    assert judge(OURS, 4242, None, HERE).code == "identity_unreadable"


def test_a_malformed_recorded_create_time_is_never_conclusive() -> None:
    weird = Incarnation("host-a", "boot-1", 4242, "yesterday", 4242)  # type: ignore[arg-type]
    assert not judge(weird, 4242, seen(create_time=1.0), HERE).conclusive


def test_no_pid_at_all_is_no_process_recorded() -> None:
    assert judge(None, None, None, HERE).code == "no_process_recorded"


def test_another_hosts_pid_is_never_probed_here() -> None:
    assert not worth_probing(OURS, 4242, HostFacts("host-b", "boot-1"))
    assert not worth_probing(OURS, 4242, HostFacts("host-a", "boot-9"))
    assert worth_probing(OURS, 4242, HERE)
    assert is_own_host(None, HERE) is None


# Properties: the only road to a terminal runs through a conclusive, local finding.

hosts = st.sampled_from(["host-a", "host-b", None])
boots = st.sampled_from(["boot-1", "boot-2", None])
times = st.one_of(st.none(), st.floats(allow_nan=True), st.sampled_from([1000.0, 1000.05, 999.0]))
incarnations = st.one_of(st.none(), st.builds(Incarnation, hosts, boots, st.just(4242), times, st.none()))
observations = st.one_of(st.none(), st.builds(
    ProcessObservation, st.just(4242), st.booleans(), times, st.booleans(), st.booleans(),
    st.one_of(st.none(), st.just("EIO"))))
here_facts = st.builds(HostFacts, hosts, boots)


@given(incarnations, observations, here_facts)
def test_judge_is_total_and_every_finding_is_named(inc: Incarnation | None, obs: ProcessObservation | None,
                                                    here: HostFacts) -> None:
    finding = judge(inc, None if inc is None and obs is None else 4242, obs, here)
    assert finding.code in CONCLUSIVE | INCONCLUSIVE
    assert finding.conclusive == (finding.code in CONCLUSIVE)


@given(incarnations, observations, here_facts)
def test_only_conclusive_findings_lead_to_a_terminal(inc: Incarnation | None, obs: ProcessObservation | None,
                                                     here: HostFacts) -> None:
    run = started(inc)
    finding = judge(inc, 4242, obs, here)
    reaped = reap(run, finding, NOW, {})
    assert (reaped is not None) == finding.conclusive == reapable(run, finding)
    if reaped is not None:
        assert derive(reaped, None, NOW).terminal and reaped.outcome == "indeterminate"
    assert derive(run, finding, NOW).terminal is False  # observing alone never ends a run


@given(incarnations.filter(lambda i: i is not None and i.host_id is not None), observations, boots)
def test_a_foreign_host_is_never_conclusive_and_never_called_stopped(
        inc: Incarnation, obs: ProcessObservation | None, boot: str | None) -> None:
    assert inc.host_id is not None
    here = HostFacts("elsewhere-" + inc.host_id, boot)
    finding = judge(inc, 4242, obs, here)
    assert not finding.conclusive and not finding.local
    derivation = derive(started(inc), finding, NOW)
    assert not derivation.stopped and not derivation.possibly_orphaned and not derivation.terminal


@given(times, boots, hosts)
def test_a_live_process_with_the_recorded_create_time_is_never_conclusive_on_its_boot(
        create_time: float | None, boot: str | None, host: str | None) -> None:
    inc = Incarnation(host, boot, 4242, create_time, 4242)
    same = ProcessObservation(4242, True, create_time)
    assert not judge(inc, 4242, same, HostFacts(host, boot)).conclusive
