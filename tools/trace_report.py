"""Print ADR-0106's traceability table with each scenario's last result, or refresh it in features/README.md.

    .venv/bin/python tools/trace_report.py                  # table + results from build/cucumber.json
    .venv/bin/python tools/trace_report.py --report FILE    # results from another cucumber json
    .venv/bin/python tools/trace_report.py --update-readme  # rewrite the Scenarios column
    .venv/bin/python tools/trace_report.py --check          # exit 1 on gaps, strays or a stale README

Results come from the pytest-bdd cucumber report that a test run writes with
`pytest --cucumber-json=build/cucumber.json`, or — because pytest-bdd writes an empty cucumber
report under pytest-xdist (`-n`) — from a JUnit report, `pytest --junitxml=build/junit.xml`
(`--junit FILE`; used by default when build/cucumber.json is absent or empty).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FEATURES = os.path.join(REPO, "features")
README = os.path.join(FEATURES, "README.md")
DEFAULT_REPORT = os.path.join(REPO, "build", "cucumber.json")
DEFAULT_JUNIT = os.path.join(REPO, "build", "junit.xml")
START, END = "<!-- trace-table:start -->", "<!-- trace-table:end -->"

ID_LIKE = re.compile(r"^(D\d+(\.\d+[a-z]?)?|C\d+[a-z]?|R\d+[a-z]?)$")  # sub-ids: D10.8a
# A sub-id (D10.8a, C5a, R2a) names one part of a statement whose several rules share an id; a
# scenario tagged with it covers the part and the statement (D10.8).
SUB_ID = re.compile(r"^(D\d+\.\d+|C\d+|R\d+)[a-z]$")
DECISIONS = {f"D{n}" for n in range(1, 11)}


@dataclass(frozen=True)
class Requirement:
    id: str
    text: str

    @property
    def statement(self) -> str:
        """The statement this id belongs to: itself, or for a sub-id (D10.8a) its statement (D10.8)."""
        match = SUB_ID.match(self.id)
        return match.group(1) if match else self.id


@dataclass
class Scenario:
    """One scenario (or outline) and every tag it carries, inherited from its Rule and Feature.

    `node` is the scenario as the Gherkin parser gives it (steps, tables, docstrings, examples),
    `backgrounds` the Background blocks that run before it (the feature's, then its Rule's),
    `feature` and `rule` the names of what encloses it: what tools/spec_report.py renders.
    """

    file: str
    name: str
    line: int
    tags: set[str] = field(default_factory=set)
    node: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    backgrounds: tuple[dict[str, Any], ...] = field(default=(), compare=False, repr=False)
    feature: str = field(default="", compare=False)
    rule: str = field(default="", compare=False)

    @property
    def ref(self) -> str:
        return f"{self.file}: {self.name}"


def requirements(readme: str = README) -> list[Requirement]:
    """The ids and their text, from the table in features/README.md (the registry of ids)."""
    with open(readme, encoding="utf-8") as handle:
        text = handle.read()
    body = text[text.index(START) + len(START): text.index(END)]
    rows = []
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and ID_LIKE.match(cells[0]):
            rows.append(Requirement(cells[0], cells[1]))
    return rows


def scenarios(folder: str = FEATURES) -> list[Scenario]:
    """Every scenario of every .feature file under `folder`, with inherited tags."""
    from gherkin.parser import Parser

    found: list[Scenario] = []
    for path in sorted(glob.glob(os.path.join(folder, "**", "*.feature"), recursive=True)):
        with open(path, encoding="utf-8") as handle:
            doc = Parser().parse(handle.read())
        feature = doc.get("feature") or {}
        rel = os.path.relpath(path, folder)
        found += list(_walk(feature.get("children", []), rel, _tags(feature), feature.get("name", "")))
    return found


def _tags(node: dict) -> set[str]:
    return {t["name"].lstrip("@") for t in node.get("tags", [])}


def _walk(children: list[Any], rel: str, inherited: set[str], feature: str = "", rule: str = "",
          backgrounds: tuple[dict[str, Any], ...] = ()) -> Iterable[Scenario]:
    for child in children:
        if "background" in child:
            backgrounds = (*backgrounds, child["background"])
        elif "rule" in child:
            node = child["rule"]
            yield from _walk(node.get("children", []), rel, inherited | _tags(node), feature,
                             node.get("name", ""), backgrounds)
        elif "scenario" in child:
            node = child["scenario"]
            tags = inherited | _tags(node)
            for examples in node.get("examples", []):
                tags |= _tags(examples)
            yield Scenario(rel, node["name"], node["location"]["line"], tags, node, backgrounds,
                           feature, rule)


def coverage(reqs: list[Requirement], scens: list[Scenario]) -> dict[str, list[Scenario]]:
    by_id = {r.id: r for r in reqs}
    table: dict[str, list[Scenario]] = {r.id: [] for r in reqs}
    for scenario in scens:
        covered = {by_id[tag].statement for tag in scenario.tags if tag in by_id} | (scenario.tags & set(by_id))
        for rid in sorted(covered & set(by_id)):
            table[rid].append(scenario)
    return table


def uncovered(reqs: list[Requirement], scens: list[Scenario]) -> list[str]:
    return [rid for rid, covering in coverage(reqs, scens).items() if not covering]


def strays(reqs: list[Requirement], scens: list[Scenario]) -> list[str]:
    """Id-like tags that name no id (a typo, or a bullet the table does not have)."""
    known = {r.id for r in reqs} | DECISIONS
    return sorted({f"{s.ref} (line {s.line}): @{t}" for s in scens for t in s.tags
                   if ID_LIKE.match(t) and t not in known})


# The one domain function that decides each rule: the README's "Domain function"
# column. "—" where the rule is kept outside the domain — the CLI's transport (bootstrap,
# dispatcher), a use case's order of steps, or the consumer's side (the contract client).
# tests/contract/test_traceability.py holds every id here and every name importable.
DOMAIN_FUNCTIONS: dict[str, str] = {
    "D1.1": "—", "D1.2": "—", "D1.3": "—", "D1.4": "—", "D1.5": "—", "D1.6": "—",
    "D2.1": "—", "D2.2": "—", "D2.3": "domain.contract.is_well_formed", "D2.4": "—", "D2.5": "—",
    "D3.1": "—", "D3.2": "domain.contract.is_well_formed", "D3.3": "domain.contract.failure", "D3.4": "—",
    "D3.5": "—", "D3.6": "—",
    "D4.1": "domain.lifecycle.derive", "D4.2": "domain.lifecycle.derive", "D4.3": "domain.lifecycle.classify",
    "D4.4": "domain.lifecycle.classify", "D4.5": "domain.lifecycle.classify", "D4.6": "domain.lifecycle.derive",
    "D4.7": "domain.lifecycle.derive", "D4.8": "domain.lifecycle.resolve",
    "D5.1": "—", "D5.2": "domain.run.make_run_id", "D5.3": "—", "D5.4": "—", "D5.5": "—", "D5.6": "—",
    "D5.7": "domain.lifecycle.derive", "D5.8": "domain.lifecycle.derive", "D5.9": "—", "D5.10": "—",
    "D6.1": "—", "D6.2": "domain.lifecycle.derive", "D6.3": "domain.lifecycle.derive",
    "D6.4": "domain.evidence.judge", "D6.5": "domain.lifecycle.reapable", "D6.6": "domain.lifecycle.fenced_reap",
    "D6.7": "domain.evidence.judge", "D6.8": "domain.evidence.may_signal", "D6.9": "—",
    "D7.1": "—", "D7.2": "—", "D7.3": "—", "D7.4": "—", "D7.5": "—", "D7.6": "—",
    "D8.1": "—", "D8.2": "—", "D8.3": "—", "D8.4": "—",
    "D9.1": "—", "D9.2": "—", "D9.3": "—", "D9.4": "—",
    "D10.1": "domain.partition.partition", "D10.2": "domain.observation.timed_out", "D10.3": "domain.partition.partition",
    "D10.4": "domain.lifecycle.resolve", "D10.5": "domain.lifecycle.resolve", "D10.6": "domain.lifecycle.fenced_reap",
    "D10.7": "domain.lifecycle.resolve", "D10.8": "domain.partition.partition", "D10.8a": "domain.partition.bucket_of",
    "D10.8b": "domain.partition.partition", "D10.8c": "domain.observation.next_sleep",
    "D10.8d": "domain.observation.next_sleep",
    "C1": "—", "C2": "—", "C3": "—", "C4": "—", "C5": "—", "C6": "—", "C7": "—", "C8": "—",
    "R1": "—", "R2": "domain.evidence.judge", "R3": "domain.lifecycle.fenced_reap",
    "R4": "domain.evidence.is_own_host", "R5": "domain.lifecycle.reapable", "R6": "—",
}


def render_table(reqs: list[Requirement], scens: list[Scenario],
                 functions: dict[str, str] | None = None) -> str:
    table = coverage(reqs, scens)
    homes = DOMAIN_FUNCTIONS if functions is None else functions
    lines = ["| Id | Requirement (ADR-0106) | Domain function | Scenarios |", "| --- | --- | --- | --- |"]
    for req in reqs:
        covering = "<br>".join(sorted(s.ref.replace("|", "\\|") for s in table[req.id])) or "—"
        home = homes.get(req.id, "—")
        shown = home if home == "—" else f"`{home}`"
        lines.append(f"| {req.id} | {req.text} | {shown} | {covering} |")
    return "\n".join(lines)


def updated_readme(readme: str = README, folder: str = FEATURES) -> str:
    with open(readme, encoding="utf-8") as handle:
        text = handle.read()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    table = render_table(requirements(readme), scenarios(folder))
    return f"{head}{START}\n{table}\n{END}{tail}"


def results(report: str) -> dict[str, str]:
    """`file: scenario name` -> passed / failed / skipped, from a pytest-bdd cucumber json report.

    A scenario run more than once (parametrised worlds, outline examples) is failed if any run
    failed, skipped if every run skipped, else passed.
    """
    with open(report, encoding="utf-8") as handle:
        features = json.load(handle)
    seen: dict[str, list[str]] = {}
    for feature in features:
        rel = os.path.relpath(os.path.join(REPO, feature.get("uri", "")), FEATURES)
        rel = rel if not rel.startswith("..") else os.path.basename(feature.get("uri", ""))
        for element in feature.get("elements", []):
            statuses = [s.get("result", {}).get("status", "skipped") for s in element.get("steps", [])]
            seen.setdefault(f"{rel}: {element.get('name')}", []).append(_verdict(statuses))
    return {ref: _combine(verdicts) for ref, verdicts in seen.items()}


@dataclass(frozen=True)
class Run:
    """One JUnit testcase of a scenario: `param` is pytest's parametrisation id (world, example row)."""

    test: str
    param: str
    verdict: str  # passed / failed / skipped
    message: str = ""


MESSAGE_LINES, MESSAGE_CHARS = 12, 2000


def junit_runs(report: str, scens: list[Scenario], root: str = REPO) -> dict[str, list[Run]]:
    """`file: scenario name` -> its testcases in a JUnit report, each with verdict and message.

    A testcase is matched to its scenario as pytest-bdd named it: `scenarios("a.feature", ...)` in
    the module its classname names binds each scenario of those files, in order, to
    `test_<python name>`, suffixed `_1`, `_2` … when a name is taken (the same scenario name in two
    files of one module). A classname whose module cannot be read falls back to the bare name.
    """
    import xml.etree.ElementTree as ET

    bindings: dict[str, dict[str, Scenario] | None] = {}
    out: dict[str, list[Run]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        run = _run(case)
        classname = case.get("classname", "")
        if classname not in bindings:
            bindings[classname] = _bound(classname, scens, root)
        bound = bindings[classname]
        matched = [bound[run.test]] if bound and run.test in bound else [] if bound else _by_name(run.test, scens)
        for scenario in matched:
            out.setdefault(scenario.ref, []).append(run)
    return out


def junit_results(report: str, scens: list[Scenario]) -> dict[str, str]:
    """`file: scenario name` -> verdict, matching pytest-bdd's test names (`test_<python name>`)."""
    return {ref: _combine([r.verdict for r in runs]) for ref, runs in junit_runs(report, scens).items()}


def _run(case: Any) -> Run:
    test, _, param = case.get("name", "").partition("[")
    param = param[:-1] if param.endswith("]") else param
    for tag in ("failure", "error"):
        element = case.find(tag)
        if element is not None:
            return Run(test, param, "failed", _message(element))
    element = case.find("skipped")
    if element is not None:
        return Run(test, param, "skipped", _message(element))
    return Run(test, param, "passed")


def _message(element: Any) -> str:
    text = (element.get("message") or element.text or "").strip()
    lines = text.splitlines()
    short = "\n".join(lines[:MESSAGE_LINES])[:MESSAGE_CHARS]
    return short + (" …" if short != text else "")


def _bound(classname: str, scens: list[Scenario], root: str) -> dict[str, Scenario] | None:
    """The test names a pytest-bdd module (`tests.features.test_d05`) gives its scenarios, or None."""
    import ast

    from pytest_bdd.scenario import get_python_name_generator

    path = os.path.join(root, *classname.split(".")) + ".py"
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return None
    files = [os.path.normpath(arg.value) for node in ast.walk(tree) if isinstance(node, ast.Call)
             and getattr(node.func, "id", getattr(node.func, "attr", None)) == "scenarios"
             for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    if not files:
        return None
    bound: dict[str, Scenario] = {}
    for file in files:
        by_name: dict[str, Scenario] = {}
        for scenario in scens:
            if scenario.file == file:
                by_name[scenario.name] = scenario  # pytest-bdd keys a feature's scenarios by name
        for name, scenario in by_name.items():
            test = next(t for t in get_python_name_generator(name) if t not in bound)
            bound[test] = scenario
    return bound


def _by_name(test: str, scens: list[Scenario]) -> list[Scenario]:
    from pytest_bdd.scenario import make_python_name

    return [s for s in scens if (base := f"test_{make_python_name(s.name)}") == test
            or re.fullmatch(rf"{re.escape(base)}_\d+", test)]


def _verdict(statuses: list[str]) -> str:
    if any(s == "failed" for s in statuses):
        return "failed"
    if statuses and all(s == "passed" for s in statuses):
        return "passed"
    return "skipped"


def _combine(verdicts: list[str]) -> str:
    if "failed" in verdicts:
        return "failed"
    return "passed" if "passed" in verdicts else "skipped"


def last_results(report: str, junit: str, scens: list[Scenario]) -> dict[str, str]:
    found = results(report) if os.path.exists(report) else {}
    if not found and os.path.exists(junit):
        found = junit_results(junit, scens)
    if not found:
        print(f"(no results: neither {report} nor {junit} holds any; run pytest with "
              f"--cucumber-json={os.path.relpath(report, REPO)} or --junitxml={os.path.relpath(junit, REPO)})\n")
    return found


def print_report(report: str, junit: str = DEFAULT_JUNIT) -> int:
    reqs, scens = requirements(), scenarios()
    table = coverage(reqs, scens)
    last = last_results(report, junit, scens)
    counts = {"passed": 0, "failed": 0, "skipped": 0, "not run": 0, "uncovered": 0}
    for req in reqs:
        print(f"{req.id:6} {req.text}")
        if not table[req.id]:
            counts["uncovered"] += 1
            print("       UNCOVERED: no scenario carries this id")
        for scenario in sorted(table[req.id], key=lambda s: s.ref):
            verdict = last.get(scenario.ref, "not run")
            counts[verdict] += 1
            print(f"       [{verdict.upper():7}] {scenario.ref}")
    for stray in strays(reqs, scens):
        print(f"STRAY TAG: {stray}")
    print("\n" + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 1 if counts["failed"] or counts["uncovered"] else 0


def check() -> list[str]:
    reqs, scens = requirements(), scenarios()
    problems = [f"uncovered: {rid}" for rid in uncovered(reqs, scens)]
    problems += [f"stray tag: {s}" for s in strays(reqs, scens)]
    with open(README, encoding="utf-8") as handle:
        if handle.read() != updated_readme():
            problems.append("features/README.md: the Scenarios column is stale "
                            "(run tools/trace_report.py --update-readme)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", default=DEFAULT_REPORT, help="pytest-bdd cucumber json report")
    parser.add_argument("--junit", default=DEFAULT_JUNIT, help="JUnit xml report (works under xdist)")
    parser.add_argument("--update-readme", action="store_true", help="rewrite the Scenarios column")
    parser.add_argument("--check", action="store_true", help="exit 1 on gaps, strays or a stale table")
    args = parser.parse_args(argv)
    if args.update_readme:
        text = updated_readme()
        with open(README, "w", encoding="utf-8") as handle:
            handle.write(text)
        print("features/README.md updated")
        return 0
    if args.check:
        problems = check()
        print("\n".join(problems) or "traceability: complete")
        return 1 if problems else 0
    return print_report(args.report, args.junit)


if __name__ == "__main__":
    sys.exit(main())
