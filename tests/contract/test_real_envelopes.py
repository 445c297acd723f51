"""Real `li` answers over a synthetic store follow the published schema strictly: no undocumented field."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.contract.validate import check_envelope
from tests.support import run_li
from tools.synthetic import finished_runs, write_run

UNREADABLE_ID = "20260101T010000-0000ff"
PREPARING_ID = "20260101T010001-0000fe"


@pytest.fixture
def store(li_home: str) -> dict[str, str]:
    done = finished_runs(li_home, 3)[-1]
    write_run(li_home, PREPARING_ID, status="running", spawn_state="preparing",
              submitted_at="2026-01-01T01:00:01.000000+00:00")
    folder = write_run(li_home, UNREADABLE_ID)
    with open(f"{folder}/record.json", "w", encoding="utf-8") as handle:
        handle.write("{ torn")
    return {"done": done, "home": li_home}


def argvs(ids: dict[str, str]) -> list[list[str]]:
    done = ids["done"]
    return [
        ["handshake"], ["--version"], ["--help"], ["job", "status", "--help"],
        ["job", "status", done], ["job", "status", PREPARING_ID], ["job", "status", UNREADABLE_ID],
        ["job", "output", done], ["job", "output", done, "--tail-chars", "0"],
        ["job", "list"], ["job", "list", "--limit", "1"], ["job", "list", "--status", "running"],
        ["job", "kill", done], ["job", "kill", UNREADABLE_ID],
        ["job", "wait", done, PREPARING_ID, UNREADABLE_ID, "20991231T000000-abcdef", "nope",
         "--max-wait", "0"],
        ["job", "prune", "--dry-run"], ["doctor"], ["completion", "bash"], ["completion", "zsh"],
        ["job", "status", "../../etc/passwd"], ["nonsense"], ["job"],
        ["agent", "--detach", "--label", "x", "sh", "true"], ["agent", "sh", "true"],
        ["orchestrate", "fanout", "--detach", "sh", "true", "--legs", "2"],
        ["agent", "--detach", "nosuchmodel", "hi"],
    ]


def test_every_answer_follows_its_schema_with_no_undocumented_field(store: dict[str, str]) -> None:
    for argv in argvs(store):
        result = run_li(*argv, "--machine", home=store["home"])
        assert result.returncode == 0, (argv, result.stderr)
        check_envelope(tuple(argv), result.envelope, strict=True)


def test_the_synthetic_store_is_read_as_written(store: dict[str, str]) -> None:
    data = run_li("job", "status", store["done"], "--machine", home=store["home"]).data
    assert (data["status"], data["terminal"], data["outcome"]) == ("completed", True, "succeeded")
    assert datetime.fromisoformat(data["finished_at"]).tzinfo == UTC
