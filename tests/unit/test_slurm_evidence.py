"""domain/slurm.py: Slurm's answers parsed safely, and mapped to evidence — never to an outcome."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.evidence import CONCLUSIVE, INCONCLUSIVE, Finding
from lionrun.domain.slurm import (
    ENDED_STATES,
    KNOWN_STATES,
    LIVE_STATES,
    MAX_TEXT_CHARS,
    QUEUED_STATES,
    UNRECOGNISED,
    UNRELIABLE_STATES,
    RecordedJob,
    SlurmJob,
    job_evidence,
    judge_job,
    parse_sacct,
    parse_sbatch,
    parse_scontrol,
    parse_squeue,
    scontrol_fields,
    state_of,
)
from lionrun.domain.vocabulary import OUTCOMES

SUBMIT = "2026-12-03T10:17:45"
RECORDED = RecordedJob("5", SUBMIT)
SLURM_CODES = {"job_ended", "job_alive", "job_queued", "job_state_unreliable", "job_state_unrecognised",
               "job_unknown", "job_id_reused", "job_not_recorded", "cluster_unreachable",
               "identity_not_recorded", "identity_unreadable"}

# Real `scontrol show job -o` output of the test cluster (tools/slurm_local.sh), job name "odd name|x".
RUNNING_LINE = (
    "JobId=5 JobName=odd name|x UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901755 Nice=0 "
    "Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=0 Restarts=0 "
    "BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:02 TimeLimit=UNLIMITED TimeMin=N/A "
    "SubmitTime=2026-12-03T10:17:45 EligibleTime=2026-12-03T10:17:45 AccrueTime=2026-12-03T10:17:45 "
    "StartTime=2026-12-03T10:17:45 EndTime=Unknown Deadline=N/A SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=2026-12-03T10:17:45 Scheduler=Main Partition=local AllocNode:Sid=localhost:25220 "
    "ReqNodeList=(null) ExcNodeList=(null) NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 "
    "NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Socks/Node=* "
    "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) "
    "DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) "
    "WorkDir=/tmp StdErr=/dev/null StdIn=/dev/null StdOut=/dev/null Power= \n"
)
FAILED_LINE = RUNNING_LINE.replace("JobState=RUNNING Reason=None", "JobState=FAILED Reason=JobLaunchFailure") \
    .replace("ExitCode=0:0", "ExitCode=0:15")


def job(state: str, submit: str | None = SUBMIT, job_id: str = "5") -> SlurmJob:
    return SlurmJob(job_id, state, submit)


# --- parsing real answers


def test_sbatch_parsable_gives_the_job_id_and_cluster() -> None:
    assert parse_sbatch("5\n") == ("5", None)
    assert parse_sbatch("123;lionrun\n") == ("123", "lionrun")


@pytest.mark.parametrize("text", ["", "\n", "sbatch: error: Batch job submission failed", "5\n6\n", "5;",
                                  "5;bad cluster", "-5", "x5", "5.batch", "1" * 19, "5\x00"])
def test_anything_else_from_sbatch_is_no_job_id(text: str) -> None:
    assert parse_sbatch(text) is None


def test_scontrol_one_line_a_job_is_read_with_its_state_submit_time_and_exit_code() -> None:
    [running] = parse_scontrol(RUNNING_LINE)
    assert running == SlurmJob("5", "RUNNING", SUBMIT, "0:0", "odd name|x", "None", time_limit="UNLIMITED")
    [failed] = parse_scontrol(FAILED_LINE)
    assert (failed.state, failed.exit_code, failed.reason) == ("FAILED", "0:15", "JobLaunchFailure")
    assert [j.job_id for j in parse_scontrol(RUNNING_LINE + FAILED_LINE.replace("JobId=5", "JobId=6"))] == ["5", "6"]


def test_scontrol_values_with_equals_signs_and_empty_values_are_kept_whole() -> None:
    fields = scontrol_fields(RUNNING_LINE.rstrip("\n"))
    assert fields is not None
    assert fields["TRES"] == "cpu=1,node=1,billing=1" and fields["Power"] == ""
    assert fields["AllocNode:Sid"] == "localhost:25220" and fields["CPUs/Task"] == "1"


def test_a_job_name_that_spells_a_field_makes_the_line_unreadable_not_spoofed() -> None:
    spoof = RUNNING_LINE.replace("JobName=odd name|x", "JobName=x JobState=COMPLETED SubmitTime=2026-12-03T10:17:45")
    assert parse_scontrol(spoof) == (SlurmJob("5", UNRECOGNISED),)
    assert judge_job(RECORDED, parse_scontrol(spoof)).code == "identity_unreadable"


def test_a_job_name_holding_a_whole_fake_line_cannot_end_the_job() -> None:
    fake = f"\nJobId=5 JobName=y JobState=COMPLETED SubmitTime={SUBMIT} ExitCode=0:0\nrest"
    spoof = RUNNING_LINE.replace("JobName=odd name|x", f"JobName={fake}")
    rows = parse_scontrol(spoof)
    assert SlurmJob("5", UNRECOGNISED) in rows  # the real line, cut short by the name's newline
    assert not judge_job(RECORDED, rows).conclusive
    squeue = f"5|RUNNING|{SUBMIT}|x\n5|COMPLETED|{SUBMIT}|y\n"
    assert judge_job(RECORDED, parse_squeue(squeue)).code == "job_alive"


def test_squeue_rows_keep_a_job_name_with_bars_whole() -> None:
    assert parse_squeue("5|RUNNING|2026-12-03T10:17:45|odd name|x\n") == (
        SlurmJob("5", "RUNNING", SUBMIT, None, "odd name|x"),)


def test_sacct_states_with_their_actor_and_job_steps() -> None:
    text = ("5|CANCELLED by 0|2026-12-03T10:17:45|0:15|li-run\n"
            "5.batch|CANCELLED|2026-12-03T10:17:45|0:15|batch\n"
            "Slurm accounting storage is disabled\n")
    assert parse_sacct(text) == (SlurmJob("5", "CANCELLED", SUBMIT, "0:15", "li-run"),)


def test_odd_fields_are_dropped_not_guessed() -> None:
    [row] = parse_squeue("5|running|Unknown|name\x07bell\n")
    assert row == SlurmJob("5", "RUNNING", None, None, None)
    [row] = parse_squeue("5|WEIRD_NEW_STATE|2026-12-03T10:17:45|n\n")
    assert row.state == UNRECOGNISED
    assert parse_squeue("5|RUNNING|2026-12-03T10:17:45\n") == ()  # a column short
    assert parse_squeue("abc|RUNNING|2026-12-03T10:17:45|n\n") == ()


def test_state_words() -> None:
    assert state_of("CANCELLED by 0") == "CANCELLED"
    assert state_of("COMPLETING+") == "COMPLETING"
    assert state_of(" completed ") == "COMPLETED"
    assert state_of("COMPLETED\x1c") == UNRECOGNISED
    assert state_of("") == UNRECOGNISED and state_of(None) == UNRECOGNISED


def test_only_whole_lines_within_the_bound_are_read() -> None:
    row = "5|RUNNING|2026-12-03T10:17:45|n\n"
    filler = "x" * (MAX_TEXT_CHARS - len(row) - 2) + "\n"
    cut = filler + "6|COMPLETED|2026-12-03T10:17:45|n\n"  # the second row crosses the bound
    assert parse_squeue(cut) == ()
    assert parse_squeue(row + "7|COMPLETED|2026-12-03T10:17:45|n" + "y" * MAX_TEXT_CHARS) == (
        SlurmJob("5", "RUNNING", SUBMIT, None, "n"),)


# --- the mapping of issue 17 item 4


@pytest.mark.parametrize("state", ["RUNNING", "COMPLETING", "SUSPENDED"])
def test_running_completing_and_suspended_are_alive(state: str) -> None:
    finding = judge_job(RECORDED, [job(state)])
    assert (finding.code, finding.alive, finding.conclusive) == ("job_alive", True, False)


@pytest.mark.parametrize("state", sorted(ENDED_STATES))
def test_an_ended_state_of_the_recorded_job_id_and_submit_time_is_conclusive(state: str) -> None:
    finding = judge_job(RECORDED, [job(state)])
    assert (finding.code, finding.alive, finding.conclusive) == ("job_ended", False, True)


@pytest.mark.parametrize("state", ["NODE_FAIL", "PREEMPTED"])
def test_node_fail_and_preempted_are_inconclusive(state: str) -> None:
    finding = judge_job(RECORDED, [job(state)])
    assert (finding.code, finding.conclusive) == ("job_state_unreliable", False)


def test_a_job_neither_squeue_nor_sacct_knows_is_inconclusive() -> None:
    assert judge_job(RECORDED, []).code == "job_unknown"
    assert judge_job(RECORDED, [job("COMPLETED", job_id="55")]).code == "job_unknown"
    assert not judge_job(RECORDED, []).conclusive


def test_an_ended_job_with_another_submit_time_is_another_job() -> None:
    finding = judge_job(RECORDED, [job("COMPLETED", submit="2026-12-01T00:00:00")])
    assert (finding.code, finding.conclusive) == ("job_id_reused", False)


def test_an_unread_submit_time_is_never_an_end() -> None:
    assert judge_job(RECORDED, [job("COMPLETED", submit=None)]).code == "identity_unreadable"
    assert judge_job(RecordedJob("5", None), [job("COMPLETED")]).code == "identity_not_recorded"
    assert judge_job(RecordedJob("5", "yesterday"), [job("COMPLETED")]).code == "identity_not_recorded"
    # one source ended, another's row for the id unreadable: it may be ours and still running
    assert judge_job(RECORDED, [job("COMPLETED"), job("RUNNING", submit=None)]).code == "identity_unreadable"


def test_sources_that_disagree_are_never_conclusive_unless_all_ended() -> None:
    assert judge_job(RECORDED, [job("COMPLETED"), job("RUNNING")]).code == "job_alive"
    assert judge_job(RECORDED, [job("FAILED"), job("NODE_FAIL")]).code == "job_state_unreliable"
    assert judge_job(RECORDED, [job("FAILED"), job("PENDING")]).code == "job_queued"
    assert judge_job(RECORDED, [job("FAILED"), job(UNRECOGNISED)]).code == "job_state_unrecognised"
    assert judge_job(RECORDED, [job("CANCELLED"), job("FAILED")]).code == "job_ended"
    # an older job that had the same id (state reset) does not stand in the way of ours
    assert judge_job(RECORDED, [job("RUNNING", submit="2026-01-01T00:00:00"), job("FAILED")]).code == "job_ended"


def test_no_record_of_a_job_or_no_answer_from_the_cluster() -> None:
    assert judge_job(None, [job("COMPLETED")]).code == "job_not_recorded"
    assert judge_job(RecordedJob(None), [job("COMPLETED")]).code == "job_not_recorded"
    assert judge_job(RecordedJob("5 "), [job("COMPLETED")]).code == "job_not_recorded"
    assert judge_job(RECORDED, None).code == "cluster_unreachable"


def test_the_evidence_names_slurm_s_state_and_exit_code() -> None:
    seen = parse_scontrol(FAILED_LINE)
    finding = judge_job(RECORDED, seen)
    evidence = job_evidence(finding, RECORDED, seen, cluster="lionrun")
    assert evidence == {
        "finding": "job_ended",
        "recorded": {"executor": "slurm", "cluster": "lionrun", "job_id": "5", "submit_time": SUBMIT},
        "observed": [{"job_id": "5", "state": "FAILED", "submit_time": SUBMIT, "exit_code": "0:15",
                      "reason": "JobLaunchFailure"}],
    }


def test_every_known_state_has_one_class() -> None:
    classes = [LIVE_STATES, QUEUED_STATES, UNRELIABLE_STATES, ENDED_STATES]
    assert sum(len(c) for c in classes) == len(KNOWN_STATES) == 24


# --- properties

states = st.sampled_from(sorted(KNOWN_STATES) + [UNRECOGNISED])
times = st.sampled_from([SUBMIT, "2026-12-01T00:00:00", None])
ids = st.sampled_from(["5", "6", "5_1"])
rows = st.lists(st.builds(SlurmJob, job_id=ids, state=states, submit_time=times), max_size=5)
recorded_jobs = st.one_of(st.none(), st.builds(RecordedJob, job_id=st.sampled_from(["5", None, "x"]),
                                               submit_time=st.sampled_from([SUBMIT, None, "bad"])))


@given(recorded_jobs, st.one_of(st.none(), rows))
def test_a_finding_is_never_an_outcome_and_conclusive_only_on_an_all_ended_match(
        recorded: RecordedJob | None, seen: list[SlurmJob] | None) -> None:
    finding = judge_job(recorded, seen)
    assert isinstance(finding, Finding) and finding.local
    assert finding.code in SLURM_CODES and finding.code in CONCLUSIVE | INCONCLUSIVE
    assert finding.code not in OUTCOMES
    if finding.conclusive:
        assert recorded is not None and seen is not None
        mine = [j for j in seen if j.job_id == recorded.job_id]
        assert mine and all(j.submit_time is not None for j in mine)
        ours = [j for j in mine if j.submit_time == recorded.submit_time]
        assert ours and all(j.state in ENDED_STATES for j in ours)


@given(rows, st.sampled_from(sorted(LIVE_STATES | QUEUED_STATES | UNRELIABLE_STATES) + [UNRECOGNISED]))
def test_one_unended_row_of_the_recorded_job_keeps_any_observation_inconclusive(
        seen: list[SlurmJob], state: str) -> None:
    for position in range(len(seen) + 1):
        observed = [*seen[:position], job(state), *seen[position:]]
        assert not judge_job(RECORDED, observed).conclusive


@given(st.text(max_size=300))
def test_parsers_take_any_text(text: str) -> None:
    for parse in (parse_scontrol, parse_squeue, parse_sacct):
        for row in parse(text):
            assert row.state in KNOWN_STATES | {UNRECOGNISED}
            assert row.submit_time is None or len(row.submit_time) == 19
    result = parse_sbatch(text)
    assert result is None or result[0].replace("_", "").replace("+", "").isdigit()


@given(st.text(max_size=80))
def test_no_job_name_turns_a_running_job_into_an_ended_one(name: str) -> None:
    line = RUNNING_LINE.replace("JobName=odd name|x", f"JobName={name}")
    assert not judge_job(RECORDED, parse_scontrol(line)).conclusive
    row = f"5|RUNNING|{SUBMIT}|{name}\n"
    assert not judge_job(RECORDED, parse_squeue(row)).conclusive
    assert not judge_job(RECORDED, parse_sacct(f"5|RUNNING|{SUBMIT}|0:0|{name}\n")).conclusive
