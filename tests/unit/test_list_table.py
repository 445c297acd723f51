"""The person's `li job list` table: the HOST column (shown on a shared store, or when the rows name
more than one host) and the short form of a host."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

import pytest

from lionrun.entrypoints.verbs import job_list

A = "0123456789abcdef0123456789abcdef"
B = "fedcba9876543210fedcba9876543210"


def row(run_id: str, host: str | None, **fields: Any) -> dict[str, Any]:
    return {"run_id": run_id, "kind": "agent", "model": "sh", "status": "completed", "possibly_orphaned": False,
            "outcome": "succeeded", "terminal": True, "exit_code": 0, "submitted_at": "2026-12-03T10:00:00+00:00",
            "started_at": "2026-12-03T10:00:00+00:00", "finished_at": "2026-12-03T10:00:05+00:00",
            "label": "", "command": "true", "host": host, "error": None, **fields}


def unreadable(run_id: str) -> dict[str, Any]:
    return {**dict.fromkeys(row(run_id, None)), "run_id": run_id,
            "error": {"reason_code": "corrupt", "message": "not json"}}


def table(capsys: pytest.CaptureFixture[str], rows: list[dict[str, Any]]) -> list[str]:
    job_list.show({"runs": rows, "truncated": False, "limit": 50}, Namespace(wide=True))
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(("rows", "shared", "shown"), [
    ([row("r1", A), row("r2", A)], False, False),  # one host on this host's own store: nothing to tell apart
    ([row("r1", A), row("r2", None)], False, False),  # a record naming no host is not a second host
    ([], False, False),
    ([row("r1", A), row("r2", B)], False, True),  # two hosts' runs, whatever the store
    ([row("r1", A)], True, True),  # a shared store always shows it, so the table keeps one shape
    ([], True, True),
])
def test_the_host_column_is_shown_on_a_shared_store_or_when_rows_name_more_than_one_host(
        rows: list[dict[str, Any]], shared: bool, shown: bool) -> None:
    assert job_list.show_host(rows, shared) is shown


@pytest.mark.parametrize(("host", "short"), [
    (A, "01234567"), (None, "-"), ("", "-"), ("hostname:build-7", "build-7"), ("not-a-machine-id", "not-a-machine-id"),
    (A.upper(), A.upper()),  # not the lower-case hex form /etc/machine-id holds: shown whole, never guessed short
])
def test_a_host_is_shown_short_as_a_person_reads_it(host: str | None, short: str) -> None:
    assert job_list.short_host(host) == short


def test_on_a_filesystem_store_with_one_host_the_table_has_no_host_column(
        capsys: pytest.CaptureFixture[str]) -> None:
    lines = table(capsys, [row("20261203T100000-aaaaaa", A)])
    assert lines[0].split() == ["RUN", "ID", "KIND", "MODEL", "STATUS", "OUTCOME", "EXIT", "AGE", "STARTED",
                                "DURATION", "LABEL", "COMMAND"]


def test_a_shared_store_shows_each_rows_host_short_before_the_label(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LI_STORE", "postgresql://postgres@127.0.0.1:1/lionrun")  # never connected to
    lines = table(capsys, [row("20261203T100001-bbbbbb", B, label="nightly"), row("20261203T100000-aaaaaa", A),
                           unreadable("20261203T095959-cccccc")])
    heads = lines[0].split()
    assert heads[heads.index("DURATION") + 1:] == ["HOST", "LABEL", "COMMAND"]
    at = lines[0].index("HOST")
    assert [line[at:at + 8].strip() for line in lines[1:]] == ["fedcba98", "01234567", ""]
    assert lines[1][at:].split()[:2] == ["fedcba98", "nightly"]
    assert A not in "\n".join(lines) and B not in "\n".join(lines)  # the short form, not the whole id


def test_two_hosts_runs_on_any_store_show_the_host_column(capsys: pytest.CaptureFixture[str]) -> None:
    lines = table(capsys, [row("20261203T100001-bbbbbb", B), row("20261203T100000-aaaaaa", A)])
    assert "HOST" in lines[0].split()
    assert [line.split()[-2] for line in lines[1:]] == ["fedcba98", "01234567"]


def test_a_narrow_terminal_drops_the_host_column_after_the_command_label_kind_and_start(
        capsys: pytest.CaptureFixture[str]) -> None:
    heads = job_list.columns(with_host=True)
    drops = sorted((c for c in heads if c.drop), key=lambda c: -c.drop)
    assert [c.name for c in drops] == ["COMMAND", "LABEL", "KIND", "STARTED", "HOST", "AGE", "MODEL", "DURATION",
                                       "EXIT"]
    assert [c.name for c in job_list.columns()] == [c.name for c in heads if c.name != "HOST"]


def test_the_age_column_says_how_long_ago_each_run_was_submitted(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import UTC, datetime

    from dependency_injector import providers

    from lionrun.entrypoints.container import get_container

    class Clock:
        def now(self) -> datetime:
            return datetime(2026, 12, 3, 13, 0, 5, tzinfo=UTC)

    get_container().core.clock.override(providers.Object(Clock()))  # conftest drops the container after
    lines = table(capsys, [row("20261203T125958-bbbbbb", A, submitted_at="2026-12-03T12:59:58+00:00"),
                           row("20261203T100000-aaaaaa", A), row("20261201T100000-cccccc", A,
                                                                 submitted_at="2026-12-01T10:00:00+00:00"),
                           unreadable("20261203T095959-dddddd")])
    at = lines[0].index("AGE")
    assert [line[at:].split()[0] if line[at:].strip() else "" for line in lines[1:]][:3] == ["7s", "3h", "2d"]
    assert lines[4][at:at + 3].strip() == ""  # an unreadable row has no age to tell


def test_at_60_columns_the_age_stays_and_started_goes(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lionrun.entrypoints.table.stdout_width", lambda: 60)
    job_list.show({"runs": [row("20261203T100000-aaaaaa", A, label="nightly", outcome="indeterminate")],
                   "truncated": False, "limit": 50}, Namespace(wide=False))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "MODEL", "STATUS", "OUTCOME", "EXIT", "AGE", "DURATION"], lines
    assert all(len(line) <= 60 for line in lines), lines
