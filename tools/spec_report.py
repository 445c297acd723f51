"""Build the living spec: ADR-0106's statements, their scenarios as Gherkin, and the last run's results.

    .venv/bin/pytest -n 2                          # or: LI_BIN=/abs/path/li .venv/bin/pytest -m cli
    .venv/bin/python tools/spec_report.py          # writes build/spec/index.html

One self-contained page (inline CSS, no script, no network) for the people who review the spec:
for each decision, each normative statement with its id and text (features/README.md), under it
every scenario tagged with that id (features/*.feature) with its result in build/junit.xml
(passed; failed with the failure's first lines; skipped with the reason; not run). A statement
with sub-ids (D10.8a … D10.8d) shows each scenario once, under its sub-id's heading, and counts
as proven when every sub-id has a passing scenario. The header
names the implementation under test from its own `li handshake --machine`: `--li`, else `LI_BIN`,
else the `li` the last test run drove (recorded in the junit report), else the `li` beside this
interpreter. Statements are read by tools/trace_report.py, the one parser of the features and
the id table; this file only renders.
"""

from __future__ import annotations

import argparse
import datetime
import html
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

if __package__ in (None, ""):  # run as a script: make `tools` importable from the checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.trace_report import (  # noqa: E402
    DEFAULT_JUNIT,
    FEATURES,
    README,
    REPO,
    Requirement,
    Run,
    Scenario,
    coverage,
    junit_runs,
    requirements,
    scenarios,
)

DEFAULT_OUT = os.path.join(REPO, "build", "spec", "index.html")
VERDICTS = ("passed", "failed", "skipped", "not run")
GROUP_TITLES = {"C": "Consumer obligations", "R": "The orphan reaper (ADR-0107)"}
LI_BIN_PROPERTY = "li_bin"  # a testsuite property the test run records (tests/conftest.py)


# --- the model --------------------------------------------------------------------------------


@dataclass
class Implementation:
    li: str
    name: str = "unknown"
    version: str = "unknown"
    contract_version: str = "unknown"
    problem: str = ""  # why the handshake could not be read, when it could not


@dataclass
class Decision:
    key: str  # D4, C, R
    title: str
    statements: list[Requirement] = field(default_factory=list)


@dataclass
class Spec:
    decisions: list[Decision]
    table: dict[str, list[Scenario]]  # statement id -> its scenarios (a statement's include its sub-ids')
    runs: dict[str, list[Run]]  # scenario ref -> its testcases
    implementation: Implementation
    junit: str
    junit_li: str
    junit_summary: dict[str, str]
    generated: str
    parts: dict[str, list[Requirement]] = field(default_factory=dict)  # statement id -> its sub-ids

    def proven(self, req: Requirement) -> bool:
        """A passing scenario carries the id; a statement with sub-ids needs one for each sub-id."""
        if self.parts.get(req.id):
            return all(self.proven(part) for part in self.parts[req.id])
        return any(self.verdict(s) == "passed" for s in self.table[req.id])

    def verdict(self, scenario: Scenario) -> str:
        verdicts = {r.verdict for r in self.runs.get(scenario.ref, [])}
        if not verdicts:
            return "not run"
        return "failed" if "failed" in verdicts else "passed" if "passed" in verdicts else "skipped"

    def scenarios_of(self, decision: Decision) -> list[Scenario]:
        seen: dict[str, Scenario] = {}
        for statement in decision.statements:
            for scenario in self.table[statement.id]:
                seen.setdefault(scenario.ref, scenario)
        return list(seen.values())

    def counts(self, decision: Decision) -> Counter[str]:
        """Scenario verdicts of the decision (each scenario once, however many of its ids it carries)."""
        return Counter(self.verdict(s) for s in self.scenarios_of(decision))

    def run_counts(self, decision: Decision) -> Counter[str]:
        """The decision's JUnit testcases (a scenario on two worlds, or an outline row, is one each)."""
        return Counter(r.verdict for s in self.scenarios_of(decision) for r in self.runs.get(s.ref, []))

    def totals(self) -> Counter[str]:
        """Verdicts of every scenario that carries a statement id, each once."""
        unique = {s.ref: s for covering in self.table.values() for s in covering}
        return Counter(self.verdict(s) for s in unique.values())

    def unproven(self) -> list[Requirement]:
        """Statements with no passing scenario (for one with sub-ids: a sub-id with none)."""
        return [r for d in self.decisions for r in d.statements if not self.proven(r)]


def decision_key(statement_id: str) -> str:
    return statement_id.split(".", 1)[0] if statement_id.startswith("D") else statement_id[0]


def split_parts(reqs: list[Requirement]) -> tuple[list[Requirement], dict[str, list[Requirement]]]:
    """The statements, and each statement's sub-ids in table order; a sub-id whose statement has no
    row of its own stays a statement."""
    ids = {r.id for r in reqs}
    parts: dict[str, list[Requirement]] = {}
    for req in reqs:
        if req.statement != req.id and req.statement in ids:
            parts.setdefault(req.statement, []).append(req)
    sub = {p.id for ps in parts.values() for p in ps}
    return [r for r in reqs if r.id not in sub], parts


def group(reqs: list[Requirement], table: dict[str, list[Scenario]]) -> list[Decision]:
    """Statements by decision, in the table's order, each titled by the feature most of its scenarios are in."""
    decisions: dict[str, Decision] = {}
    for req in reqs:
        key = decision_key(req.id)
        decisions.setdefault(key, Decision(key, GROUP_TITLES.get(key, key))).statements.append(req)
    for decision in decisions.values():
        features = Counter(s.feature for r in decision.statements for s in table[r.id] if s.feature)
        if not features:
            continue
        name = features.most_common(1)[0][0]
        stated = re.match(rf"^{re.escape(decision.key)}\s*[—–:-]\s*(.+)$", name)
        if stated:
            decision.title = stated.group(1).strip().strip('"')
        elif decision.key not in GROUP_TITLES:
            decision.title = name
    return list(decisions.values())


def li_under_test(explicit: str | None, junit_li: str) -> str:
    if explicit:
        return explicit
    env = os.environ.get("LI_BIN", "")
    if env and os.path.isabs(env):
        return env
    if junit_li:
        return junit_li
    return os.path.join(os.path.dirname(sys.executable), "li")


def handshake(li: str, timeout: float = 30.0) -> Implementation:
    """The implementation's own account of itself; a failure to ask is shown, never guessed over."""
    found = Implementation(li)
    try:
        done = subprocess.run([li, "handshake", "--machine"], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        found.problem = f"could not run {li}: {exc}"
        return found
    try:
        envelope = json.loads(done.stdout)
        data = envelope["data"]
        found.name = str(data["implementation"])
        found.version = str(data["implementation_version"])
        found.contract_version = str(data["contract_version"])
    except (ValueError, KeyError, TypeError) as exc:
        found.problem = (f"`{li} handshake --machine` exited {done.returncode} without a readable "
                         f"handshake ({type(exc).__name__}: {exc}); stdout began "
                         f"{done.stdout[:200]!r}")
    return found


def junit_facts(junit: str) -> tuple[str, dict[str, str]]:
    """The li the run recorded, and the run's totals and time, from a JUnit report."""
    if not os.path.exists(junit):
        return "", {}
    root = ET.parse(junit).getroot()
    li = ""
    for prop in root.iter("property"):
        if prop.get("name") == LI_BIN_PROPERTY:
            li = prop.get("value", "")
    totals: Counter[str] = Counter()
    stamp = ""
    for suite in root.iter("testsuite"):
        for key in ("tests", "failures", "errors", "skipped"):
            totals[key] += int(suite.get(key, "0") or 0)
        stamp = stamp or suite.get("timestamp", "")
    summary = {k: str(v) for k, v in totals.items()}
    if stamp:
        summary["timestamp"] = stamp
    return li, summary


def build(junit: str = DEFAULT_JUNIT, readme: str = README, features: str = FEATURES,
          li: str | None = None, root: str = REPO, now: datetime.datetime | None = None) -> Spec:
    reqs, scens = requirements(readme), scenarios(features)
    table = coverage(reqs, scens)
    runs = junit_runs(junit, scens, root) if os.path.exists(junit) else {}
    junit_li, summary = junit_facts(junit)
    implementation = handshake(li_under_test(li, junit_li))
    when = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    statements, parts = split_parts(reqs)
    return Spec(group(statements, table), table, runs, implementation, junit, junit_li, summary, when, parts)


# --- the page ---------------------------------------------------------------------------------


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


def prose(text: str) -> str:
    """Escaped text with markdown `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", e(text))


def anchor(statement_id: str) -> str:
    return "s-" + re.sub(r"[^A-Za-z0-9_-]", "-", statement_id)


def counts_line(counts: Counter[str], total_label: str) -> str:
    total = sum(counts.values())
    parts = [f'<span class="n {v.replace(" ", "-")}" data-verdict="{e(v)}">{counts.get(v, 0)} {e(v)}</span>'
             for v in VERDICTS if counts.get(v, 0) or v in ("passed", "failed")]
    return f'<span class="total">{total} {e(total_label)}</span> ' + " ".join(parts)


def badge(verdict: str) -> str:
    return f'<span class="badge {verdict.replace(" ", "-")}">{e(verdict)}</span>'


def gherkin_table(rows: list[dict[str, Any]], header: dict[str, Any] | None = None,
                  results: list[str] | None = None) -> str:
    out = ['<table class="data">']
    if header is not None:
        cells = "".join(f"<th>{e(c.get('value', ''))}</th>" for c in header.get("cells", []))
        extra = "<th class=\"r\">result</th>" if results is not None else ""
        out.append(f"<thead><tr>{cells}{extra}</tr></thead>")
    out.append("<tbody>")
    for i, row in enumerate(rows):
        cells = "".join(f"<td>{e(c.get('value', ''))}</td>" for c in row.get("cells", []))
        extra = f'<td class="r">{badge(results[i])}</td>' if results is not None else ""
        out.append(f"<tr>{cells}{extra}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def step(node: dict[str, Any]) -> str:
    text = e(node.get("text", ""))
    text = re.sub(r"&lt;([^&\s]+?)&gt;", r'<span class="ph">&lt;\1&gt;</span>', text)
    body = f'<div class="step"><span class="kw">{e(node.get("keyword", "").strip())}</span> {text}</div>'
    if node.get("dataTable"):
        body += gherkin_table(node["dataTable"].get("rows", []))
    if node.get("docString"):
        body += f'<pre class="doc">{e(node["docString"].get("content", ""))}</pre>'
    return body


def row_results(examples: dict[str, Any], runs: list[Run]) -> list[str]:
    """Each example row's verdict: pytest-bdd ids a row by its values joined with '-'."""
    out = []
    for row in examples.get("tableBody", []):
        row_id = "-".join(c.get("value", "") for c in row.get("cells", []))
        mine = [r.verdict for r in runs if _in_rows(r, [row_id])]
        out.append("not run" if not mine else "failed" if "failed" in mine
                   else "passed" if "passed" in mine else "skipped")
    return out


def render_scenario(spec: Spec, scenario: Scenario) -> str:
    node, runs = scenario.node, spec.runs.get(scenario.ref, [])
    verdict = spec.verdict(scenario)
    tags = " ".join(f"@{e(t)}" for t in sorted(scenario.tags))
    keyword = e(node.get("keyword", "Scenario").strip() or "Scenario")
    out = [f'<details class="scenario {verdict.replace(" ", "-")}" open data-verdict="{e(verdict)}">',
           f'<summary>{badge(verdict)} <span class="kw">{keyword}:</span> '
           f'<span class="sname">{e(scenario.name)}</span></summary>',
           f'<div class="where">{e(scenario.file)}:{scenario.line}'
           + (f' · Rule: {e(scenario.rule)}' if scenario.rule else "")
           + (f' · <span class="tags">{tags}</span>' if tags else "") + "</div>",
           '<div class="gherkin">']
    for background in scenario.backgrounds:
        out.append('<div class="background"><div class="step"><span class="kw">Background:</span> '
                   f'{e(background.get("name", ""))}</div>')
        out += [step(s) for s in background.get("steps", [])]
        out.append("</div>")
    out += [step(s) for s in node.get("steps", [])]
    for examples in node.get("examples", []):
        out.append(f'<div class="step examples"><span class="kw">{e(examples.get("keyword", "Examples"))}:</span> '
                   f'{e(examples.get("name", ""))}</div>')
        out.append(gherkin_table(examples.get("tableBody", []), examples.get("tableHeader"),
                                 row_results(examples, runs)))
    out.append("</div>")
    rows = ["-".join(c.get("value", "") for c in row.get("cells", []))
            for examples in node.get("examples", []) for row in examples.get("tableBody", [])]
    out.append(render_runs(runs, rows))
    out.append("</details>")
    return "\n".join(out)


def render_runs(runs: list[Run], rows: list[str]) -> str:
    """Each run that says something: a message in full; plain passes in one line, unless the
    Examples table already shows them (`rows` are the outline's row ids)."""
    if not runs:
        return '<p class="runs none">not run: the last test run has no testcase for this scenario</p>'
    if len(runs) == 1 and not runs[0].param:  # the one run's verdict is the scenario's badge
        return f'<pre class="msg {runs[0].verdict}">{e(runs[0].message)}</pre>' if runs[0].message else ""
    quiet = [r for r in runs if not r.message and r.verdict == "passed" and not _in_rows(r, rows)]
    loud = [r for r in runs if r.message or r.verdict != "passed"]
    items = []
    if quiet:
        items.append(f'<li class="run passed">{badge("passed")} '
                     + " ".join(f"<code>{e(r.param or '—')}</code>" for r in quiet) + "</li>")
    for run in loud:
        message = f'<pre class="msg {run.verdict}">{e(run.message)}</pre>' if run.message else ""
        items.append(f'<li class="run {run.verdict}">{badge(run.verdict)} <code>{e(run.param or "—")}</code>'
                     f"{message}</li>")
    return f'<ul class="runs">{"".join(items)}</ul>' if items else ""


def _in_rows(run: Run, rows: list[str]) -> bool:
    return any(run.param == row or run.param.startswith(row + "-") or run.param.endswith("-" + row)
               for row in rows)


def in_order(scens: list[Scenario]) -> list[Scenario]:
    return sorted(scens, key=lambda s: (s.file, s.line))


def render_statement(spec: Spec, req: Requirement) -> str:
    parts = spec.parts.get(req.id, [])
    shown: dict[str, str] = {}  # scenario ref -> the id it is shown under
    own = [s for s in in_order(spec.table[req.id])
           if not parts or not any(s in spec.table[p.id] for p in parts)]
    body = [render_scenario(spec, s) for s in own]
    shown.update((s.ref, req.id) for s in own)
    for part in parts:  # each scenario once: under the first of its sub-ids
        mine = [s for s in in_order(spec.table[part.id]) if s.ref not in shown]
        elsewhere = [s for s in in_order(spec.table[part.id]) if s.ref in shown]
        shown.update((s.ref, part.id) for s in mine)
        inner = [render_scenario(spec, s) for s in mine]
        inner += [f'<p class="runs none also">also: <a href="#{anchor(shown[s.ref])}">{e(s.name)}</a> '
                  f"(shown under {e(shown[s.ref])})</p>" for s in elsewhere]
        gap = "" if spec.proven(part) else " unproven-part"
        body.append(f'<article class="statement part{gap}" id="{anchor(part.id)}" data-id="{e(part.id)}">\n'
                    f'<h4><a class="sid" href="#{anchor(part.id)}">{e(part.id)}</a> '
                    f'<span class="stext">{prose(part.text)}</span></h4>\n'
                    + ("\n".join(inner) or '<p class="runs none">no scenario carries this id</p>')
                    + "\n</article>")
    text = "\n".join(body) or '<p class="runs none">no scenario carries this id</p>'
    return (f'<article class="statement{"" if spec.proven(req) else " unproven"}" id="{anchor(req.id)}" '
            f'data-id="{e(req.id)}">\n<h3><a class="sid" href="#{anchor(req.id)}">{e(req.id)}</a> '
            f'<span class="stext">{prose(req.text)}</span></h3>\n{text}\n</article>')


def render_decision(spec: Spec, decision: Decision) -> str:
    counts, run_counts = spec.counts(decision), spec.run_counts(decision)
    data = " ".join(f'data-{v.replace(" ", "-")}="{counts.get(v, 0)}"' for v in VERDICTS)
    run_data = " ".join(f'data-runs-{v}="{run_counts.get(v, 0)}"' for v in VERDICTS[:3])
    statements = "\n".join(render_statement(spec, r) for r in decision.statements)
    return (f'<section class="decision" id="{e(decision.key)}" data-key="{e(decision.key)}" {data} {run_data}>\n'
            f'<h2><span class="dkey">{e(decision.key)}</span> {e(decision.title)}</h2>\n'
            f'<p class="counts">Scenarios: {counts_line(counts, "scenarios")}</p>\n'
            f'<p class="counts runs-line">Test runs: {counts_line(run_counts, "runs")}</p>\n'
            f"{statements}\n</section>")


def render(spec: Spec) -> str:
    imp = spec.implementation
    scen_counts = spec.totals()
    unproven = spec.unproven()
    statements = sum(len(d.statements) for d in spec.decisions)
    if imp.problem:
        who = f'<span class="problem">{e(imp.problem)}</span>'
    else:
        who = (f'<strong class="impl">{e(imp.name)}</strong> <span class="ver">{e(imp.version)}</span>, '
               f'contract version <strong class="cv">{e(imp.contract_version)}</strong>')
    warn = ""
    if spec.junit_li and os.path.realpath(spec.junit_li) != os.path.realpath(imp.li):
        warn = (f'<p class="problem">The last test run drove <code>{e(spec.junit_li)}</code>, '
                f"not the <code>li</code> named here; its results are that executable's.</p>")
    run = spec.junit_summary
    if run:
        last = (f'{e(run.get("tests", "?"))} tests, {e(run.get("failures", "0"))} failures, '
                f'{e(run.get("errors", "0"))} errors, {e(run.get("skipped", "0"))} skipped'
                + (f' — started {e(run["timestamp"])}' if run.get("timestamp") else ""))
    else:
        last = f"no results: {e(os.path.relpath(spec.junit, REPO))} does not exist, every scenario is not run"
    toc = "".join(f'<li><a href="#{e(d.key)}"><span class="dkey">{e(d.key)}</span> {e(d.title)}</a>'
                  f'<span class="mini">{mini(spec.counts(d))}</span></li>' for d in spec.decisions)
    gap_block = render_unproven(spec, unproven, statements)
    decisions = "\n".join(render_decision(spec, d) for d in spec.decisions)
    return PAGE.format(
        css=CSS, who=who, li=e(imp.li), warn=warn, generated=e(spec.generated), last=last,
        totals=counts_line(scen_counts, "scenarios"), toc=toc,
        legend=" ".join(f'<span class="n {v.replace(" ", "-")}">{e(v)}</span>' for v in VERDICTS), gaps=gap_block, decisions=decisions,
    )


def mini(counts: Counter[str]) -> str:
    return " ".join(f'<span class="n {v.replace(" ", "-")}" title="{counts[v]} scenarios {v}">{counts[v]}</span>'
                    for v in VERDICTS if counts.get(v))


def worst(spec: Spec, req: Requirement) -> str:
    """What stands between a statement and a passing scenario: failed, skipped, not run, or no scenario
    (for a statement with sub-ids: the worst of its sub-ids without one)."""
    if spec.parts.get(req.id):
        gaps = {worst(spec, p) for p in spec.parts[req.id] if not spec.proven(p)}
        return next((v for v in ("failed", "skipped", "not run", "no scenario") if v in gaps), "no scenario")
    verdicts = {spec.verdict(s) for s in spec.table[req.id]}
    return next((v for v in ("failed", "skipped", "not run") if v in verdicts), "no scenario")


def gap_title(spec: Spec, req: Requirement) -> str:
    title = f"{worst(spec, req)}: {req.text}"
    missing = [p.id for p in spec.parts.get(req.id, []) if not spec.proven(p)]
    return title + (f" (no passing scenario for {', '.join(missing)})" if missing else "")


def render_unproven(spec: Spec, unproven: list[Requirement], statements: int) -> str:
    if not unproven:
        return (f'<section class="unproven-list all-good" id="unproven"><h2>Every one of the '
                f"{statements} statements has a passing scenario</h2></section>")
    rows = []
    for decision in spec.decisions:
        mine = [r for r in decision.statements if r in unproven]
        if not mine:
            continue
        chips = " ".join(f'<a class="chip {worst(spec, r).replace(" ", "-")}" href="#{anchor(r.id)}" '
                         f'title="{e(gap_title(spec, r))}">{e(r.id)}</a>' for r in mine)
        rows.append(f'<li><span class="dkey">{e(decision.key)}</span> {chips}</li>')
    legend = " ".join(f'<span class="chip {v.replace(" ", "-")}">{e(v)}</span>'
                      for v in ("failed", "skipped", "not run", "no scenario"))
    return (f'<section class="unproven-list" id="unproven"><h2>{len(unproven)} of {statements} '
            f"statements have no passing scenario</h2><ul>{''.join(rows)}</ul>"
            f'<p class="legend">Each id links to its statement; its colour says why: {legend}</p></section>')


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>ADR-0106 living spec</title>
<style>{css}</style>
</head>
<body>
<header>
<h1>ADR-0106 — the machine-result contract, as executed</h1>
<p class="who">Implementation under test: {who}</p>
<p class="meta"><code>{li}</code> · report built {generated}</p>
<p class="meta">Last test run: {last}</p>
{warn}
<p class="totals">{totals}</p>
</header>
<main>
<nav><ol class="toc">{toc}</ol>
<p class="legend">Each decision's scenarios: {legend}</p></nav>
{gaps}
{decisions}
</main>
</body>
</html>
"""

CSS = """
:root { --ink:#1f2328; --soft:#59636e; --line:#d1d9e0; --paper:#ffffff; --wash:#f6f8fa;
  --pass:#1a7f37; --pass-bg:#dafbe1; --fail:#cf222e; --fail-bg:#ffebe9; --skip:#9a6700;
  --skip-bg:#fff8c5; --none:#59636e; --none-bg:#eaeef2; }
* { box-sizing: border-box; }
body { margin:0; background:var(--wash); color:var(--ink);
  font: 15px/1.5 -apple-system, "Segoe UI", "Noto Sans", "DejaVu Sans", Helvetica, Arial, sans-serif; }
header { background:#24292f; color:#f6f8fa; padding:1.4rem 2rem 1rem; }
header h1 { margin:0 0 .4rem; font-size:1.45rem; font-weight:600; }
header p { margin:.2rem 0; }
header code { color:#d1d9e0; }
header .meta { color:#b7bdc4; font-size:.9rem; }
header .impl, header .cv { color:#fff; }
.problem { color:#ffb4ad; }
main { max-width:72rem; margin:0 auto; padding:1rem 2rem 4rem; }
code { font: .88em/1.4 "DejaVu Sans Mono", Menlo, Consolas, monospace; background:rgba(175,184,193,.2);
  padding:.05em .3em; border-radius:4px; }
header code { background:rgba(255,255,255,.08); }
.toc { display:grid; grid-template-columns:1fr 1fr; column-gap:2.5rem; list-style:none;
  padding:0; margin:.8rem 0 1rem; }
.toc li { display:flex; justify-content:space-between; align-items:baseline; gap:.6rem;
  padding:.15rem 0; border-bottom:1px solid #e6eaef; }
.toc .mini { white-space:nowrap; }
.toc a, .unproven-list a { color:#0969da; text-decoration:none; }
.dkey { font-weight:700; }
.n { display:inline-block; font-size:.8rem; font-weight:600; padding:0 .45rem; border-radius:1rem;
  margin-right:.15rem; }
.n.passed { color:var(--pass); background:var(--pass-bg); }
.n.failed { color:var(--fail); background:var(--fail-bg); }
.n.skipped { color:var(--skip); background:var(--skip-bg); }
.n.not-run { color:var(--none); background:var(--none-bg); }
.total { font-weight:600; margin-right:.4rem; }
header .total { color:#fff; }
.unproven-list { background:var(--paper); border:1px solid var(--line); border-left:5px solid var(--fail);
  border-radius:8px; padding:.6rem 1.2rem; margin:1rem 0 1.5rem; }
.unproven-list.all-good { border-left-color:var(--pass); }
.unproven-list h2 { font-size:1.05rem; margin:.3rem 0; }
.unproven-list ul { margin:.3rem 0; padding:0; list-style:none; }
.unproven-list li { margin:.25rem 0; }
.unproven-list .dkey { display:inline-block; min-width:2.6rem; }
.chip { display:inline-block; font-size:.8rem; font-weight:600; padding:0 .45rem; margin:.1rem .05rem;
  border-radius:4px; border:1px solid transparent; text-decoration:none; }
a.chip.failed, span.chip.failed { color:#fff; background:var(--fail); }
a.chip.skipped, span.chip.skipped { color:#4d3800; background:#f2cc60; }
a.chip.not-run, span.chip.not-run { color:var(--ink); background:#d8dee4; }
a.chip.no-scenario, span.chip.no-scenario { color:var(--fail); background:#fff; border:1px dashed var(--fail); }
.legend { color:var(--soft); font-size:.82rem; margin:.4rem 0 .2rem; }
.decision { background:var(--paper); border:1px solid var(--line); border-radius:10px;
  padding:.4rem 1.4rem 1rem; margin:1.4rem 0; }
.decision h2 { font-size:1.25rem; margin:.8rem 0 .2rem; }
.counts { margin:.15rem 0; color:var(--soft); font-size:.9rem; }
.statement { border-top:1px solid var(--line); padding:.7rem 0 .3rem; }
.statement h3 { font-size:1rem; font-weight:500; margin:.1rem 0 .5rem; }
.statement .sid { display:inline-block; min-width:3.6rem; font-weight:700; color:var(--ink);
  text-decoration:none; }
.statement.unproven .sid { color:var(--fail); }
.statement.part { border-top:none; padding:.3rem 0 .1rem; margin-left:1.8rem; }
.statement.part h4 { font-size:.92rem; font-weight:500; margin:.3rem 0 .3rem; color:var(--soft); }
.statement.part .sid { min-width:3.4rem; color:var(--ink); }
.statement.part.unproven-part .sid { color:var(--fail); }
.statement.part .scenario { margin-left:1.8rem; }
.scenario { border-left:4px solid var(--none); background:var(--wash); border-radius:0 6px 6px 0;
  margin:.45rem 0 .45rem 3.6rem; padding:.35rem .8rem .45rem; }
.scenario.passed { border-left-color:var(--pass); }
.scenario.failed { border-left-color:var(--fail); background:#fff8f7; }
.scenario.skipped { border-left-color:var(--skip); }
.scenario summary { cursor:pointer; font-weight:600; }
.badge { display:inline-block; min-width:4.4rem; text-align:center; font-size:.72rem; font-weight:700;
  text-transform:uppercase; letter-spacing:.03em; border-radius:4px; padding:.05rem .35rem;
  vertical-align:1px; }
.badge.passed { color:var(--pass); background:var(--pass-bg); }
.badge.failed { color:var(--fail); background:var(--fail-bg); }
.badge.skipped { color:var(--skip); background:var(--skip-bg); }
.badge.not-run { color:var(--none); background:var(--none-bg); }
.where { color:var(--soft); font-size:.78rem; margin:.1rem 0 .3rem; }
.tags { font-family:"DejaVu Sans Mono", Menlo, monospace; }
.gherkin { font: .86rem/1.55 "DejaVu Sans Mono", Menlo, Consolas, monospace; }
.step { padding-left:1.2rem; text-indent:-1.2rem; margin-left:1.2rem; white-space:pre-wrap; }
.kw { color:#8250df; font-weight:700; }
.summary .kw { color:#8250df; }
.ph { color:#0550ae; font-weight:600; }
.background { color:var(--soft); border-bottom:1px dashed var(--line); margin-bottom:.2rem;
  padding-bottom:.2rem; }
.background .kw { color:#a475f9; }
table.data { border-collapse:collapse; margin:.2rem 0 .3rem 2.4rem; font-size:.82rem; }
table.data th, table.data td { border:1px solid var(--line); padding:.05rem .5rem; text-align:left;
  background:var(--paper); }
table.data th { background:#eef1f4; }
pre.doc { margin:.2rem 0 .3rem 2.4rem; padding:.3rem .6rem; background:var(--paper);
  border:1px solid var(--line); border-radius:4px; white-space:pre-wrap; }
.runs { list-style:none; margin:.3rem 0 0; padding:0; font-size:.82rem; }
.runs li { margin:.15rem 0; }
.runs.none { color:var(--soft); font-size:.82rem; margin:.3rem 0 0; }
pre.msg { margin:.25rem 0 .2rem 0; padding:.4rem .6rem; background:#fff; border:1px solid #ffcecb;
  border-radius:4px; color:#82071e; white-space:pre-wrap; word-break:break-word;
  font: .8rem/1.45 "DejaVu Sans Mono", Menlo, monospace; }
pre.msg.skipped { border-color:#eedc82; color:#6f4e00; }
@media print { .scenario { break-inside:avoid; } header { background:none; color:var(--ink); } }
"""


def write(spec: Spec, out: str) -> None:
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    temp = f"{out}.tmp"
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(render(spec))
    os.replace(temp, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--junit", default=DEFAULT_JUNIT, help="JUnit report of the test run")
    parser.add_argument("--out", default=DEFAULT_OUT, help="the page to write")
    parser.add_argument("--li", help="the li to ask for its handshake (default: LI_BIN, else the run's)")
    args = parser.parse_args(argv)
    spec = build(args.junit, li=args.li)
    write(spec, args.out)
    everything = spec.totals()
    print(f"{os.path.relpath(args.out)}: {spec.implementation.name} {spec.implementation.version}, "
          + ", ".join(f"{everything.get(v, 0)} {v}" for v in VERDICTS)
          + f"; {len(spec.unproven())} statements with no passing scenario")
    if spec.implementation.problem:
        print(f"warning: {spec.implementation.problem}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
