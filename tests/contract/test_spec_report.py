"""tools/spec_report.py on a features folder, a test module and a JUnit report of our own.

The fixture binds scenarios as pytest-bdd does (one module, two feature files, a name taken twice,
an outline, a Rule, a Background), and the JUnit report has passed, failed, skipped and missing
testcases; each assertion names the scenario a testcase must land on, so a broken mapping fails.
"""

from __future__ import annotations

import datetime
import os
import re
import stat
from pathlib import Path

from tools.spec_report import build, handshake, render
from tools.trace_report import junit_results, junit_runs, scenarios

README = """intro
<!-- trace-table:start -->
| Id | Requirement (ADR-0106) | Scenarios |
| --- | --- | --- |
| D4.1 | `status` is open | — |
| D4.2 | terminal | — |
| D10.8a | the floor is paid once | — |
| D10.8b | never for max_wait 0 | — |
| C5 | never none | — |
<!-- trace-table:end -->
"""

D04 = """@D4
Feature: D4 — status is opaque
  Background:
    Given a fresh li home

  Rule: status is open
    @D4.1 @cli
    Scenario: an unknown status is carried verbatim
      Given a run whose status is "<script>alert(1)</script>"
      Then the status is shown verbatim:
        \"\"\"
        <b>verbatim</b>
        \"\"\"

  @C5
  Rule: never none
    Scenario Outline: an unreadable manifest is <what>
      Given a manifest that is <state>
      Then it reads <what>
      Examples:
        | state      | what        |
        | unreadable | unavailable |
        | empty      | none        |

    @D4.2
    Scenario: the same name in two files
      Given a run
"""

D10 = """Feature: D10 — Bounded observation
  @D10.8a
  Rule: the floor
    Scenario: the same name in two files
      Given a batch
        | id | state   |
        | a  | stopped |

  @D10.8b
  Rule: no floor at zero
    Background:
      Given a window of 0 seconds

    Scenario: nothing is paid at zero
      Given a batch
"""

MODULE = 'from pytest_bdd import scenarios\n\nscenarios("d04.feature", "d10.feature")\n'

# pytest-bdd names: test_<python name>, `_1` when the module already has the name; outline
# rows and worlds are parametrisation ids.
JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="2" skipped="1" tests="7"
 timestamp="2026-12-03T07:00:00">
<properties><property name="li_bin" value="/nowhere/li"/></properties>
<testcase classname="fixture.test_mod" name="test_an_unknown_status_is_carried_verbatim"/>
<testcase classname="fixture.test_mod" name="test_an_unreadable_manifest_is_what[memory-unreadable-unavailable]"/>
<testcase classname="fixture.test_mod" name="test_an_unreadable_manifest_is_what[memory-empty-none]">
  <failure message="AssertionError: expected none&#10;got &lt;img src=x onerror=alert(1)&gt;&#10;line 3">long traceback</failure>
</testcase>
<testcase classname="fixture.test_mod" name="test_the_same_name_in_two_files[fs]"/>
<testcase classname="fixture.test_mod" name="test_the_same_name_in_two_files_1">
  <failure message="the floor was paid twice">trace</failure>
</testcase>
<testcase classname="fixture.test_mod" name="test_nothing_is_paid_at_zero">
  <skipped type="pytest.skip" message="not applicable to $LI_BIN">d10.py:3: not applicable</skipped>
</testcase>
<testcase classname="tests.unit.test_other" name="test_not_a_scenario"/>
</testsuite></testsuites>
"""


def fixture(tmp_path: Path) -> tuple[str, str, str, str]:
    features = tmp_path / "features"
    features.mkdir()
    (features / "README.md").write_text(README, encoding="utf-8")
    (features / "d04.feature").write_text(D04, encoding="utf-8")
    (features / "d10.feature").write_text(D10, encoding="utf-8")
    (tmp_path / "fixture").mkdir()
    (tmp_path / "fixture" / "test_mod.py").write_text(MODULE, encoding="utf-8")
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT, encoding="utf-8")
    li = tmp_path / "li"
    li.write_text('#!/bin/sh\necho \'{"ok": true, "contract_version": 1, "data": {"contract_version": 1, '
                  '"min_supported_version": 1, "implementation": "other<li>", "implementation_version": '
                  '"0.36.0", "module": "x"}, "error": null}\'\n', encoding="utf-8")
    li.chmod(li.stat().st_mode | stat.S_IXUSR)
    return str(features), str(features / "README.md"), str(junit), str(li)


def test_testcases_land_on_the_scenarios_pytest_bdd_bound_them_to(tmp_path: Path) -> None:
    features, _, junit, _ = fixture(tmp_path)
    scens = scenarios(features)
    runs = junit_runs(junit, scens, str(tmp_path))
    verdicts = {ref: [(r.param, r.verdict) for r in rs] for ref, rs in runs.items()}
    assert verdicts == {
        "d04.feature: an unknown status is carried verbatim": [("", "passed")],
        "d04.feature: an unreadable manifest is <what>": [("memory-unreadable-unavailable", "passed"),
                                                          ("memory-empty-none", "failed")],
        "d04.feature: the same name in two files": [("fs", "passed")],
        "d10.feature: the same name in two files": [("", "failed")],
        "d10.feature: nothing is paid at zero": [("", "skipped")],
    }
    failed = runs["d04.feature: an unreadable manifest is <what>"][1]
    assert failed.message == "AssertionError: expected none\ngot <img src=x onerror=alert(1)>\nline 3"
    assert runs["d10.feature: nothing is paid at zero"][0].message == "not applicable to $LI_BIN"
    # trace_report's verdicts come from the same mapping
    assert junit_results(junit, scens)["d04.feature: an unreadable manifest is <what>"] == "failed"


def test_the_page_shows_statements_scenarios_results_and_counts(tmp_path: Path) -> None:
    features, readme, junit, li = fixture(tmp_path)
    now = datetime.datetime(2026, 12, 3, 7, 30, tzinfo=datetime.UTC)
    spec = build(junit, readme, features, li=li, root=str(tmp_path), now=now)
    page = render(spec)

    assert [d.key for d in spec.decisions] == ["D4", "D10", "C"]
    assert [d.title for d in spec.decisions] == ["status is opaque", "Bounded observation",
                                                 "Consumer obligations"]
    for statement_id in ("D4.1", "D4.2", "D10.8a", "D10.8b", "C5"):
        assert f'data-id="{statement_id}"' in page
    # per decision: each scenario once, by its combined verdict; and its testcases
    d4, d10, c = spec.decisions
    assert dict(spec.counts(d4)) == {"passed": 2}
    assert dict(spec.run_counts(d4)) == {"passed": 2}
    assert dict(spec.counts(d10)) == {"failed": 1, "skipped": 1}
    assert dict(spec.counts(c)) == {"failed": 1, "passed": 1}
    assert dict(spec.run_counts(c)) == {"passed": 2, "failed": 1}
    assert ('data-key="C" data-passed="1" data-failed="1" data-skipped="0" data-not-run="0" '
            'data-runs-passed="2" data-runs-failed="1" data-runs-skipped="0"') in page
    # statements with no passing scenario, at the top, in table order
    assert [r.id for r in spec.unproven()] == ["D10.8a", "D10.8b"]
    top = page[: page.index('<section class="decision"')]
    assert re.findall(r'href="#s-([^"]+)"', top) == ["D10-8a", "D10-8b"]
    # the header: the implementation's own handshake and the date
    assert "other&lt;li&gt;" in page and "0.36.0" in page and "2026-12-03 07:30 UTC" in page
    assert "The last test run drove <code>/nowhere/li</code>" in page
    # Gherkin: background, rule, docstring, data table, examples with each row's result
    assert "Given</span> a fresh li home" in page
    zero = page[page.index("nothing is paid at zero"):]
    assert zero.index("a window of 0 seconds") < zero.index("a batch")  # the Rule's Background first
    assert "Rule: never none" in page
    assert "&lt;b&gt;verbatim&lt;/b&gt;" in page
    assert "<td>stopped</td>" in page
    assert re.search(r"<td>empty</td><td>none</td><td class=\"r\"><span class=\"badge failed\">", page)
    # untrusted text is escaped everywhere
    assert "<script>" not in page and "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "not applicable to $LI_BIN" in page


def test_a_scenario_without_a_testcase_is_not_run_and_a_missing_report_runs_nothing(tmp_path: Path) -> None:
    features, readme, _, li = fixture(tmp_path)
    spec = build(str(tmp_path / "absent.xml"), readme, features, li=li, root=str(tmp_path))
    assert {spec.verdict(s) for s in scenarios(features)} == {"not run"}
    assert len(spec.unproven()) == 5
    assert "does not exist" in render(spec)


def test_an_li_that_cannot_answer_is_named_in_the_header_not_guessed_over(tmp_path: Path) -> None:
    broken = tmp_path / "li"
    broken.write_text("#!/bin/sh\necho 'not json'; exit 3\n", encoding="utf-8")
    broken.chmod(0o700)
    found = handshake(str(broken))
    assert found.name == "unknown" and "exited 3" in found.problem
    assert "could not run" in handshake(str(tmp_path / "missing")).problem


def test_the_script_writes_the_page(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "spec" / "index.html"
    tool = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "spec_report.py")
    done = subprocess.run([sys.executable, tool, "--junit", str(tmp_path / "none.xml"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert "not run" in done.stdout


# A statement with two sub-ids (one Rule each), as features/README.md has D10.8 and D10.8a … d.
PARTS_README = README.replace("| C5 |", """| D7.1 | one statement, two rules | — |
| D7.1a | the first rule | — |
| D7.1b | the second rule | — |
| C5 |""")

D07 = """Feature: D7 — Parts
  @D7.1
  Scenario: the whole statement at once
    Given a run

  Rule: D7.1a — the first rule
    @D7.1a
    Scenario: the first rule holds
      Given a run

    @D7.1a @D7.1b
    Scenario: both rules in one scenario
      Given a run

  Rule: D7.1b — the second rule
    @D7.1b
    Scenario: the second rule breaks
      Given a run
"""

PARTS_JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="5">
<testcase classname="fixture.test_d07" name="test_the_whole_statement_at_once"/>
<testcase classname="fixture.test_d07" name="test_the_first_rule_holds[memory]"/>
<testcase classname="fixture.test_d07" name="test_the_first_rule_holds[fs]"/>
<testcase classname="fixture.test_d07" name="test_both_rules_in_one_scenario">
  <skipped type="pytest.skip" message="not here">x</skipped>
</testcase>
<testcase classname="fixture.test_d07" name="test_the_second_rule_breaks">
  <failure message="the second rule broke">trace</failure>
</testcase>
</testsuite></testsuites>
"""


def test_a_statement_with_sub_ids_shows_and_counts_each_scenario_once_under_its_sub_id(tmp_path: Path) -> None:
    features, readme, _, li = fixture(tmp_path)
    Path(readme).write_text(PARTS_README, encoding="utf-8")
    (Path(features) / "d07.feature").write_text(D07, encoding="utf-8")
    (tmp_path / "fixture" / "test_d07.py").write_text('from pytest_bdd import scenarios\n\nscenarios("d07.feature")\n',
                                                     encoding="utf-8")
    junit = tmp_path / "parts.xml"
    junit.write_text(PARTS_JUNIT, encoding="utf-8")
    spec = build(str(junit), readme, features, li=li, root=str(tmp_path))
    page = render(spec)

    names = ["the whole statement at once", "the first rule holds", "both rules in one scenario",
             "the second rule breaks"]
    for name in names:
        assert page.count(f'<span class="sname">{name}</span>') == 1, name
    d7 = next(d for d in spec.decisions if d.key == "D7")
    assert [r.id for r in d7.statements] == ["D7.1"]  # the sub-ids are parts of it, not statements
    # inside D7.1's article, in order: its own scenario, then each sub-id's heading and scenarios
    article = page[page.index('data-id="D7.1"'):page.index('data-key="C"')]
    at = [article.index(marker) for marker in (
        "the whole statement at once", 'data-id="D7.1a"', "the first rule", "the first rule holds",
        "both rules in one scenario", 'data-id="D7.1b"', "the second rule", "the second rule breaks")]
    assert at == sorted(at)
    assert "(shown under D7.1a)" in article[article.index('data-id="D7.1b"'):]
    # each scenario counted once, each testcase once
    assert dict(spec.counts(d7)) == {"passed": 2, "skipped": 1, "failed": 1}
    assert dict(spec.run_counts(d7)) == {"passed": 3, "skipped": 1, "failed": 1}
    assert 'data-key="D7" data-passed="2" data-failed="1" data-skipped="1" data-not-run="0"' in page
    # D7.1 is judged by its sub-ids: D7.1b has no passing scenario, so D7.1 has none to show for it
    unproven = [r.id for r in spec.unproven()]
    assert "D7.1" in unproven and "D7.1a" not in unproven and "D7.1b" not in unproven
    top = page[: page.index('<section class="decision"')]
    # (this report runs none of d04/d10's scenarios; a sub-id with no statement row stays a statement)
    assert re.findall(r'href="#s-([^"]+)"', top) == ["D4-1", "D4-2", "D10-8a", "D10-8b", "D7-1", "C5"]
    assert 'class="chip failed" href="#s-D7-1"' in top
    assert "6 of 6 statements have no passing scenario" in top
