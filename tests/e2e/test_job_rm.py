"""Item 5: `li job rm RUN...` removes ended runs by id; a live one is refused with the
kill hint, `--force` or not; nothing is removed unless every named run can be."""

from __future__ import annotations

import os

from tests.contract.validate import check_envelope
from tests.support import machine, run_li, status_data, wait_terminal


def ended(home: str) -> str:
    run_id = machine("agent", "--detach", "sh", "echo hi", home=home).data["run_id"]
    assert wait_terminal(home, run_id, timeout=60)["terminal"]
    return run_id


def runs(home: str) -> set[str]:
    return set(os.listdir(os.path.join(home, "runs")))


def test_rm_removes_ended_runs_by_id_and_short_form(li_home: str) -> None:
    first, second, third = ended(li_home), ended(li_home), ended(li_home)
    result = run_li("job", "rm", first, second[-6:], home=li_home)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"removed {first}", f"removed {second}"]
    assert first not in runs(li_home) and second not in runs(li_home) and third in runs(li_home)


def test_rm_under_machine_is_one_envelope_of_the_rm_schema(li_home: str) -> None:
    run_id = ended(li_home)
    result = machine("job", "rm", run_id, home=li_home)
    assert result.data == {"removed": [run_id], "kept": []}
    check_envelope(["job", "rm", run_id, "--machine"], result.envelope, strict=True)


def test_rm_refuses_a_live_run_with_the_kill_hint_even_with_force(li_home: str) -> None:
    done = ended(li_home)
    live = machine("agent", "--detach", "sh", "sleep 60", home=li_home).data["run_id"]
    try:
        for force in ([], ["--force"]):
            result = run_li("job", "rm", done, live, *force, home=li_home)
            assert result.returncode == 4, result.stderr
            assert result.stderr.startswith("li: conflict:") and f"li job kill {live}" in result.stderr
            assert {done, live} <= runs(li_home)  # nothing removed: not even the ended one
            error = machine("job", "rm", live, *force, home=li_home).error
            assert error["kind"] == "conflict" and error["detail"]["reason_code"] == "not_ended"
        assert status_data(li_home, live)["status"] == "running"
    finally:
        machine("job", "kill", live, home=li_home)


def test_rm_of_an_unknown_run_is_not_found(li_home: str) -> None:
    done = ended(li_home)
    result = run_li("job", "rm", done, "20200101T000000-abcdef", home=li_home)
    assert result.returncode == 3 and result.stderr.startswith("li: not_found:"), result.stderr
    assert done in runs(li_home)
    assert machine("job", "rm", "not-an-id", home=li_home).error["kind"] == "invalid_input"
