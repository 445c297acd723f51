"""What a person or an agent writes is checked by pydantic (domain/written.py), and only there: a
read and an `li agent` submit never import it; a bad flow spec is one line in li's words."""

from __future__ import annotations

from tests.e2e.test_startup_imports import imported_top_levels
from tests.support import machine, run_li


def imports(home: str, *argv: str, stdin: str | None = None) -> set[str]:
    result = run_li(*argv, home=home, stdin=stdin, env={"PYTHONPROFILEIMPORTTIME": "1"})
    names = imported_top_levels(result.stderr)
    assert "lionrun" in names, "importtime produced no report; the check would prove nothing"
    return names


def test_an_agent_submit_and_the_reads_never_import_pydantic(li_home: str) -> None:
    assert "pydantic" not in imports(li_home, "agent", "sh", "true", "--detach", "--machine")
    run_id = machine("job", "list", home=li_home).data["runs"][0]["run_id"]
    for argv in (("job", "status", run_id), ("job", "list"), ("job", "wait", run_id, "--max-wait", "5")):
        assert "pydantic" not in imports(li_home, *argv, "--machine"), argv


def test_a_flow_submit_checks_its_spec_with_pydantic(li_home: str) -> None:
    spec = "steps:\n  - id: a\n    prompt: echo a\n"
    assert "pydantic" in imports(li_home, "orchestrate", "flow", "-", "--detach", "--machine", stdin=spec)


def test_a_malformed_flow_spec_is_one_line_in_lis_words(li_home: str) -> None:
    spec = "steps:\n  - id: a\n    prompt: echo a\n  - id: b\n    promt: echo b\n"
    refused = machine("orchestrate", "flow", "-", "--detach", home=li_home, stdin=spec).error
    assert refused["kind"] == "invalid_input"
    assert refused["message"] == "flow spec: step 2 `promt` is not a key li knows (and 1 more problem)"
    person = run_li("orchestrate", "flow", "-", "--detach", home=li_home, stdin=spec)
    assert person.returncode != 0 and person.stdout == ""
    assert person.stderr.count("\n") == 1 and "step 2 `promt` is not a key li knows" in person.stderr
