"""`li usage` and the COST column through the real `li`, with the fake claude CLI that
reports a cost and `sh`, which reports none."""

from __future__ import annotations

import os

from tests.support import machine, run_li, wait_terminal

FAKES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fakes", "bin")


def fakes() -> dict[str, str]:
    return {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}"}


def test_usage_totals_what_was_reported_and_shows_the_rest_as_unreported(li_home: str) -> None:
    ids = [machine("agent", "--detach", "--label", "paid", "claude", "say hi", home=li_home, env=fakes()).data["run_id"]
           for _ in range(2)]
    ids.append(machine("agent", "--detach", "sh", 'echo x > "$LI_ARTIFACTS_DIR/a"', home=li_home).data["run_id"])
    for run_id in ids:
        assert wait_terminal(li_home, run_id)["terminal"]
    data = machine("usage", "--by", "model", "--since", "1h", home=li_home).data
    groups = {g["key"]: g for g in data["groups"]}
    assert groups["claude"]["runs"] == 2 and groups["claude"]["cost_usd"] == 0.0246
    assert groups["claude"]["cost_unreported"] == 0
    assert (groups["sh"]["cost_usd"], groups["sh"]["cost_unreported"]) == (None, 1)  # unreported, never 0
    assert data["total"]["runs"] == 3 and data["total"]["cost_unreported"] == 1
    assert groups["claude"]["wall_seconds"] is not None
    by_label = {g["key"]: g["runs"] for g in machine("usage", "--by", "label", home=li_home).data["groups"]}
    assert by_label == {"(none)": 1, "paid": 2}
    person = run_li("usage", "--by", "model", home=li_home)
    assert person.returncode == 0 and "unreported" in person.stdout and "$0.02" in person.stdout
    assert "$0.00" not in person.stdout


def test_job_list_shows_a_cost_column_where_a_provider_reported_one(li_home: str) -> None:
    paid = machine("agent", "--detach", "claude", "say hi", home=li_home, env=fakes()).data["run_id"]
    free = machine("agent", "--detach", "sh", 'echo x > "$LI_ARTIFACTS_DIR/a"', home=li_home).data["run_id"]
    wait_terminal(li_home, paid)
    wait_terminal(li_home, free)
    rows = {r["run_id"]: r for r in machine("job", "list", home=li_home).data["runs"]}
    assert rows[paid]["cost_usd"] == 0.0123 and rows[free]["cost_usd"] is None
    assert machine("job", "status", paid, home=li_home).data["cost_usd"] == 0.0123
    table = run_li("job", "list", "--wide", home=li_home).stdout.splitlines()
    assert "COST" in table[0]
    assert any(paid in line and "$0.01" in line for line in table)


def test_usage_refuses_what_it_cannot_group_by(li_home: str) -> None:
    error = machine("usage", "--by", "colour", home=li_home).error
    assert error["kind"] == "invalid_input" and error["detail"]["argument"] == "--by"
    assert machine("usage", "--since", "soon", home=li_home).error["kind"] == "invalid_input"
    assert machine("usage", home=li_home).data["total"]["runs"] == 0
