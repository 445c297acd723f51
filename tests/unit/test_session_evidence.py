"""A run is its runner's whole session: members found by session id and start time keep it alive."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.evidence import (
    CONCLUSIVE,
    CREATE_TIME_TOLERANCE,
    INCONCLUSIVE,
    Finding,
    HostFacts,
    ProcessObservation,
    SessionMember,
    is_member,
    judge,
    may_request,
    may_signal,
    members,
    wants_session,
)
from lionrun.domain.lifecycle import derive, reap
from lionrun.domain.run import STARTED, Incarnation, Run

HERE = HostFacts("host-a", "boot-1")
LEADER = 4242
BORN = 1000.0
OURS = Incarnation("host-a", "boot-1", LEADER, BORN, LEADER)
NOW = datetime(2026, 8, 3, tzinfo=UTC)


def member(pid: int, create_time: float | None = BORN + 1, session: int = LEADER, zombie: bool = False) -> SessionMember:
    return SessionMember(pid, session, create_time, zombie)


def gone(*session: SessionMember, zombie_leader: bool = False) -> ProcessObservation:
    """The leader absent (or a zombie of ours), and the scan of its session."""
    if zombie_leader:
        return ProcessObservation(LEADER, True, BORN, zombie=True, session=tuple(session))
    return ProcessObservation(LEADER, False, session=tuple(session))


def started() -> Run:
    return Run("20260803T000000-abcdef", "agent", "running", "2026-08-03T00:00:00.000000+00:00",
               spawn_state=STARTED, pid=LEADER, incarnation=OURS, generation=2)


def test_a_gone_leader_whose_session_was_not_looked_at_is_not_conclusive() -> None:
    finding = judge(OURS, LEADER, ProcessObservation(LEADER, False), HERE)
    assert (finding.code, finding.conclusive, finding.alive) == ("session_unexamined", False, None)
    assert wants_session(finding)


def test_a_gone_leader_whose_work_still_runs_is_alive_and_never_conclusive() -> None:
    finding = judge(OURS, LEADER, gone(member(5000)), HERE)
    assert (finding.code, finding.conclusive, finding.alive) == ("session_alive", False, True)
    assert reap(started(), finding, NOW, {}) is None
    d = derive(started(), finding, NOW)
    assert (d.status, d.terminal, d.alive, d.stopped) == ("running", False, True, False)


def test_a_zombie_leader_whose_work_still_runs_is_alive() -> None:
    finding = judge(OURS, LEADER, gone(member(LEADER, BORN, zombie=True), member(5000), zombie_leader=True), HERE)
    assert (finding.code, finding.alive) == ("session_alive", True)


def test_a_gone_leader_with_no_member_left_is_conclusive() -> None:
    assert judge(OURS, LEADER, gone(), HERE).code == "pid_absent"
    assert judge(OURS, LEADER, gone(member(LEADER, BORN, zombie=True), zombie_leader=True), HERE).code == \
        "process_zombie"


def test_a_live_leader_needs_no_scan() -> None:
    finding = judge(OURS, LEADER, ProcessObservation(LEADER, True, BORN), HERE)
    assert finding.code == "alive" and not wants_session(finding)


def test_a_recycled_leader_pid_makes_its_session_a_strangers() -> None:
    # The leader's pid names another process: its session (and the setsid'd decoy's children) is not ours.
    decoy = ProcessObservation(LEADER, True, BORN + 500, session=(member(LEADER, BORN + 500), member(5000, BORN + 501)))
    assert judge(OURS, LEADER, decoy, HERE).code == "pid_recycled"
    raced = gone(member(LEADER, BORN + 500), member(5000, BORN + 501))  # the pid was taken after the probe
    assert members(OURS, raced.session or ()) == ()
    assert judge(OURS, LEADER, raced, HERE).code == "pid_absent"


def test_a_process_that_started_before_the_leader_is_not_a_member() -> None:
    assert not is_member(OURS, member(5000, BORN - 5))
    assert not is_member(OURS, member(5000, BORN - CREATE_TIME_TOLERANCE - 0.01))
    assert is_member(OURS, member(5000, BORN - CREATE_TIME_TOLERANCE / 2))  # the same clock tick
    assert judge(OURS, LEADER, gone(member(5000, BORN - 5)), HERE).code == "pid_absent"


def test_zombies_never_count() -> None:
    assert judge(OURS, LEADER, gone(member(5000, zombie=True), member(5001, zombie=True)), HERE).code == "pid_absent"


def test_another_sessions_process_never_counts() -> None:
    assert judge(OURS, LEADER, gone(member(5000, session=5000)), HERE).code == "pid_absent"


def test_a_process_whose_start_time_cannot_be_read_never_counts() -> None:
    assert judge(OURS, LEADER, gone(member(5000, None)), HERE).code == "pid_absent"


def test_init_is_never_a_member() -> None:
    assert not is_member(OURS, member(1))


def test_a_record_without_a_start_time_cannot_tell_members_and_stays_as_before() -> None:
    partial = Incarnation("host-a", "boot-1", LEADER, None, LEADER)
    finding = judge(partial, LEADER, ProcessObservation(LEADER, False), HERE)
    assert finding.code == "pid_absent" and not wants_session(finding)
    assert members(partial, (member(5000),)) == ()


def test_an_unreadable_process_table_leaves_the_run_unjudged() -> None:
    finding = judge(OURS, LEADER, ProcessObservation(LEADER, False, session=None), HERE)
    assert (finding.code, finding.conclusive) == ("session_unexamined", False)


def test_members_are_oldest_first() -> None:
    found = members(OURS, (member(7000, BORN + 3), member(5000, BORN + 2), member(LEADER, BORN)))
    assert [m.pid for m in found] == [LEADER, 5000, 7000]


def test_a_reap_records_the_session_it_found_empty() -> None:
    seen = gone()
    finding = judge(OURS, LEADER, seen, HERE)
    assert finding.evidence(OURS, seen, HERE)["observed"]["session_members"] == []
    unscanned = ProcessObservation(LEADER, True, BORN)
    assert finding.evidence(OURS, unscanned, HERE)["observed"]["session_members"] is None


def test_kill_may_signal_only_a_proven_live_member_of_a_local_run_leading_its_group() -> None:
    from msgspec.structs import replace

    assert may_signal(OURS, Finding("alive", True))
    assert may_signal(OURS, Finding("session_alive", True))
    assert not may_signal(OURS, Finding("pid_absent", False))
    assert not may_signal(OURS, Finding("access_denied", None))
    assert not may_signal(OURS, Finding("foreign_host", None, local=False))
    assert not may_signal(None, Finding("alive", True))
    for group in (0, 1, -7, 5151):
        assert not may_signal(replace(OURS, pgid=group), Finding("alive", True))


def test_kill_may_only_request_of_a_run_of_another_host_never_signal_it() -> None:
    theirs = Incarnation("host-b", "boot-9", LEADER, BORN, LEADER)
    assert may_request(theirs, judge(theirs, LEADER, None, HERE))
    assert not may_signal(theirs, judge(theirs, LEADER, None, HERE))
    # Our own run, alive or gone, or a reader that cannot tell its host: never a request.
    assert not may_request(OURS, Finding("alive", True))
    assert not may_request(OURS, Finding("pid_absent", False))
    assert not may_request(theirs, judge(theirs, LEADER, None, HostFacts(None, None)))
    assert not may_request(None, Finding("foreign_host", None, local=False))


@given(st.sampled_from(sorted(CONCLUSIVE | INCONCLUSIVE)), st.booleans())
def test_kill_never_both_signals_and_requests(code: str, local: bool) -> None:
    finding = Finding(code, True if code in ("alive", "session_alive") else None, local=local)
    assert not (may_signal(OURS, finding) and may_request(OURS, finding))


# Properties over any scan: only the leader's session, since its start, never zombies, never a decoy's.

pids = st.sampled_from([1, LEADER, 5000, 5001, 6000])
starts = st.one_of(st.none(), st.sampled_from([BORN, BORN - 0.05, BORN - 0.2, BORN - 50, BORN + 3, BORN + 900]),
                   st.floats(allow_nan=True, allow_infinity=True))
scans = st.lists(st.builds(SessionMember, pids, st.sampled_from([LEADER, 5000, 1]), starts, st.booleans()),
                 max_size=6).map(tuple)
leaders = st.one_of(
    st.builds(ProcessObservation, st.just(LEADER), st.just(False), session=st.one_of(st.none(), scans)),
    st.builds(ProcessObservation, st.just(LEADER), st.just(True), st.sampled_from([BORN, BORN + 500]),
              st.booleans(), session=st.one_of(st.none(), scans)),
)


@given(scans)
def test_every_member_is_of_the_session_since_its_start_and_alive(scan: tuple[SessionMember, ...]) -> None:
    for m in members(OURS, scan):
        assert m in scan and m.session == LEADER and not m.zombie and m.pid > 1
        assert m.create_time is not None and m.create_time >= BORN - CREATE_TIME_TOLERANCE


@given(scans, st.lists(st.builds(SessionMember, st.sampled_from([5000, 7000]), st.just(LEADER), starts,
                                 st.just(True)), max_size=3))
def test_adding_zombies_never_changes_a_finding(scan: tuple[SessionMember, ...], zombies: list[SessionMember]) -> None:
    before = judge(OURS, LEADER, gone(*scan), HERE)
    assert judge(OURS, LEADER, gone(*scan, *zombies), HERE) == before


@given(scans, st.floats(min_value=BORN + 1, max_value=BORN + 10_000))
def test_a_scan_showing_the_leader_pid_under_another_start_has_no_members(
        scan: tuple[SessionMember, ...], other: float) -> None:
    assert members(OURS, (*scan, member(LEADER, other))) == ()
    assert judge(OURS, LEADER, gone(*scan, member(LEADER, other)), HERE).conclusive


@given(leaders)
def test_a_session_finding_is_conclusive_only_when_no_member_lives(seen: ProcessObservation) -> None:
    finding = judge(OURS, LEADER, seen, HERE)
    assert finding.code in CONCLUSIVE | INCONCLUSIVE
    if finding.conclusive:
        assert seen.session is not None or finding.code == "pid_recycled"
        assert finding.code == "pid_recycled" or members(OURS, seen.session or ()) == ()
    if finding.code == "session_alive":
        assert finding.alive is True and members(OURS, seen.session or ()) != ()
        assert reap(started(), finding, NOW, {}) is None


# -- the run is every process its work started ------------------------------------------

def test_a_process_outside_the_session_that_is_the_run_s_keeps_it_alive() -> None:
    escaped = SessionMember(5001, 5001, BORN + 2, tagged=True)  # an agent's shell tool, in a session of its own
    finding = judge(OURS, LEADER, gone(escaped), HERE)
    assert (finding.code, finding.conclusive, finding.alive) == ("session_alive", False, True)
    assert reap(started(), finding, NOW, {}) is None
    assert members(OURS, (escaped,)) == (escaped,)


def test_a_process_outside_the_session_not_shown_the_run_s_is_a_stranger() -> None:
    stranger = SessionMember(5001, 5001, BORN + 2)
    assert not is_member(OURS, stranger)
    assert judge(OURS, LEADER, gone(stranger), HERE).conclusive


def test_a_tagged_process_older_than_the_runner_or_a_zombie_is_not_the_run_s() -> None:
    assert not is_member(OURS, SessionMember(5001, 5001, BORN - 5, tagged=True))
    assert not is_member(OURS, SessionMember(5001, 5001, BORN + 2, zombie=True, tagged=True))
