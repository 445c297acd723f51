"""Every ADR-0106 id has a scenario, every id-like tag names an id, and features/README.md is current."""

from __future__ import annotations

import json
import os
from collections import Counter

from tools.trace_report import (
    DOMAIN_FUNCTIONS,
    check,
    coverage,
    render_table,
    requirements,
    results,
    scenarios,
    strays,
    uncovered,
    updated_readme,
)

# How many "Exact semantics" bullets each decision has in ADR-0106, in order (D1: normative sentences).
BULLETS = {"D1": 6, "D2": 5, "D3": 6, "D4": 8, "D5": 10, "D6": 9, "D7": 6, "D8": 4, "D9": 4, "D10": 8,
           "C": 8, "R": 6}


def test_the_table_numbers_every_bullet_of_the_adr_in_order() -> None:
    ids = [r.id for r in requirements() if r.statement == r.id]
    assert len(ids) == len(set(ids))
    counts = Counter(i.split(".")[0] if i.startswith("D") else i[0] for i in ids)
    assert dict(counts) == BULLETS
    for prefix, count in BULLETS.items():
        expected = [f"{prefix}.{n}" if prefix.startswith("D") else f"{prefix}{n}" for n in range(1, count + 1)]
        assert [i for i in ids if (i.split(".")[0] if i.startswith("D") else i[0]) == prefix] == expected


def test_a_sub_id_follows_its_statement_and_covers_it() -> None:
    reqs = requirements()
    ids = [r.id for r in reqs]
    subs = [r for r in reqs if r.statement != r.id]
    assert [r.id for r in subs] == ["D10.8a", "D10.8b", "D10.8c", "D10.8d"]
    for sub in subs:
        assert ids.index(sub.statement) < ids.index(sub.id)
    table = coverage(reqs, scenarios())
    assert {s.ref for sub in subs for s in table[sub.id]} <= {s.ref for s in table["D10.8"]}


def test_every_statement_of_a_feature_rule_has_its_own_id() -> None:
    """No two `Rule:` blocks carry one id: a statement with several rules splits into sub-ids."""
    import glob
    import re

    for path in glob.glob(os.path.join("features", "*.feature")):
        with open(path, encoding="utf-8") as handle:
            ids = re.findall(r"^\s*Rule: (\S+) —", handle.read(), re.M)
        assert [i for i, n in Counter(ids).items() if n > 1] == [], path


def test_every_id_is_covered_by_a_scenario() -> None:
    gaps = uncovered(requirements(), scenarios())
    assert gaps == [], f"{len(gaps)} ids have no scenario tagged with them: {', '.join(gaps)}"


def test_no_scenario_tag_names_an_id_that_does_not_exist() -> None:
    assert strays(requirements(), scenarios()) == []


def test_the_readme_table_names_the_scenarios_that_cover_each_id() -> None:
    with open(os.path.join("features", "README.md"), encoding="utf-8") as handle:
        current = handle.read()
    assert current == updated_readme(), "run `.venv/bin/python tools/trace_report.py --update-readme`"


def test_every_id_names_its_domain_function_and_each_name_is_one() -> None:
    """The "Domain function" column: every id has an entry ("—" where the rule is not the
    domain's), no entry names an id the table lacks, and each name is a function of domain/."""
    import importlib

    ids = [r.id for r in requirements()]
    assert sorted(DOMAIN_FUNCTIONS) == sorted(ids)
    for rid, home in DOMAIN_FUNCTIONS.items():
        if home == "—":
            continue
        module, _, name = home.rpartition(".")
        assert module.startswith("domain."), (rid, home)
        function = getattr(importlib.import_module(module), name, None)
        assert callable(function) and getattr(function, "__module__", "") == module, (rid, home)


# --- the checker itself, on a features folder of our own -------------------------------------


def write(folder: str, name: str, text: str) -> None:
    with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
        handle.write(text)


README = """intro
<!-- trace-table:start -->
| Id | Requirement (ADR-0106) | Scenarios |
| --- | --- | --- |
| D4.1 | status is open | — |
| D4.2 | terminal | — |
| D4.2a | terminal, first part | — |
| C5 | never none | — |
<!-- trace-table:end -->
tail
"""

FEATURE = """@D4
Feature: D4 — status is opaque
  Rule: status is open
    @D4.1 @cli
    Scenario: an unknown status is carried verbatim
      Given a run

  @C5
  Rule: never none
    Scenario Outline: an unreadable manifest is not none
      Given <thing>
      Examples:
        | thing |
        | x     |

    @D4.9
    Scenario: a typo in a tag
      Given a run

  Rule: terminal, first part
    @D4.2a
    Scenario: a part of a statement
      Given a run
"""


def test_the_checker_finds_gaps_strays_and_rule_tags(tmp_path: object) -> None:
    folder = str(tmp_path)
    write(folder, "README.md", README)
    write(folder, "d04.feature", FEATURE)
    reqs, scens = requirements(os.path.join(folder, "README.md")), scenarios(folder)
    assert [s.name for s in scens] == ["an unknown status is carried verbatim",
                                       "an unreadable manifest is not none", "a typo in a tag",
                                       "a part of a statement"]
    assert uncovered(reqs, scens) == []
    assert [s.name for s in coverage(reqs, scens)["D4.2"]] == ["a part of a statement"]
    assert strays(reqs, scens) == ["d04.feature: a typo in a tag (line 17): @D4.9"]
    assert [s.name for s in coverage(reqs, scens)["C5"]] == ["an unreadable manifest is not none",
                                                             "a typo in a tag"]
    table = render_table(reqs, scens)
    assert "| D4.1 | status is open | `domain.lifecycle.derive` | d04.feature: an unknown status is carried verbatim |" \
        in table
    assert "| D4.2 | terminal | `domain.lifecycle.derive` | d04.feature: a part of a statement |" in table
    assert "| D4.2a | terminal, first part | — | d04.feature: a part of a statement |" in table
    assert updated_readme(os.path.join(folder, "README.md"), folder).endswith("<!-- trace-table:end -->\ntail\n")


def test_results_are_read_from_a_cucumber_report(tmp_path: object) -> None:
    report = os.path.join(str(tmp_path), "cucumber.json")
    passed = {"result": {"status": "passed"}}
    failed = {"result": {"status": "failed"}}
    with open(report, "w", encoding="utf-8") as handle:
        json.dump([{"uri": "features/d04.feature", "elements": [
            {"name": "a", "steps": [passed, passed]},
            {"name": "b", "steps": [passed, failed]},
            {"name": "c", "steps": [passed]},
            {"name": "c", "steps": [failed]},
        ]}], handle)
    assert results(report) == {"d04.feature: a": "passed", "d04.feature: b": "failed",
                               "d04.feature: c": "failed"}


def test_check_reports_nothing_when_complete() -> None:
    problems = check()
    assert problems == [] or all(p.startswith(("uncovered", "stray", "features/README.md")) for p in problems)


def test_results_are_read_from_a_junit_report_as_written_under_xdist(tmp_path: object) -> None:
    from tools.trace_report import Scenario, junit_results

    report = os.path.join(str(tmp_path), "junit.xml")
    with open(report, "w", encoding="utf-8") as handle:
        handle.write("""<testsuites><testsuite>
<testcase classname="tests.features.test_d04" name="test_a_run_ends[memory]"/>
<testcase classname="tests.features.test_d04" name="test_a_run_ends[fs]"><failure message="x"/></testcase>
<testcase classname="tests.features.test_d04" name="test_another_one"/>
<testcase classname="tests.features.test_d04" name="test_skipped_one"><skipped/></testcase>
</testsuite></testsuites>""")
    scens = [Scenario("d04.feature", "A run ends", 3), Scenario("d04.feature", "Another one!", 9),
             Scenario("d04.feature", "Skipped one", 12), Scenario("d04.feature", "Never ran", 15)]
    assert junit_results(report, scens) == {"d04.feature: A run ends": "failed",
                                            "d04.feature: Another one!": "passed",
                                            "d04.feature: Skipped one": "skipped"}


def test_the_run_state_glossary_is_the_builders_table() -> None:
    """features/README.md lists exactly tests/builders.py's RunState names, in the same order."""
    import re

    from tests.builders import RunState

    with open(os.path.join("features", "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    body = text[text.index("<!-- run-states:start -->"): text.index("<!-- run-states:end -->")]
    names = [m.group(1).strip() for m in re.finditer(r"^\| ([^|]+) \|", body, re.M)][2:]
    assert names == [state.value for state in RunState]


def test_every_run_state_a_feature_names_is_in_the_glossary() -> None:
    """A state in a `that is …` step or a wait batch's state column must be a RunState name."""
    import glob
    import re

    from tests.builders import NOT_RUNS, RunState

    known = {state.value for state in RunState} | set(NOT_RUNS)
    seen: set[str] = set()
    for path in glob.glob(os.path.join("features", "*.feature")):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        for match in re.finditer(r'^ +(?:Given|And) a run (?:"[^"]+" )?that is ([^\n<]+)', text, re.M):
            state = re.split(r", (?:submitted \d+ seconds ago|with a notice configured|its recorded pid gone)$",
                             match.group(1).strip())[0]
            seen.add(state)
        for table in re.finditer(r"^ +\| name +\| state +\|\n((?: +\|.*\|\n)+)", text, re.M):
            seen |= {row.split("|")[2].strip() for row in table.group(1).splitlines()}
        for outline in re.finditer(r"^ +\| state +\|\n((?: +\|.*\|\n)+)", text, re.M):
            seen |= {re.split(r", submitted", row.split("|")[1].strip())[0] for row in outline.group(1).splitlines()}
    assert {state for state in seen if not state.startswith("<")} - known == set()
    assert len(seen) > 10
