"""The living spec in a real browser: headless Chromium renders the page built from the real features
and a small JUnit report written here, with JavaScript off; the rendered DOM shows every statement
id, each decision's counts equal to the report's testcases, and a failure's message as text.

Chromium is Debian's `chromium` (tools/chromium.sh installs it). Without it this test skips — but
in CI (`CI=true`, as .ci/run sets) it fails: a browser test that silently skips proves nothing.
"""

from __future__ import annotations

import glob
import os
import subprocess
import tempfile
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from xml.sax.saxutils import quoteattr

from pytest_bdd.scenario import make_python_name

from tests.browser import chromium
from tests.support import REPO
from tools.spec_report import build, decision_key, write
from tools.trace_report import Scenario, coverage, requirements, scenarios

SCREENSHOT = os.path.join(REPO, "build", "spec", "browser-test.png")
FAILURE = "AssertionError: {key} <b>broke</b> & <script>alert(1)</script>\nsecond line of the message"
SKIP_REASON = "not applicable to $LI_BIN"


def render_in_chromium(page: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-", dir=tmp_path))  # one per browser
    args = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--hide-scrollbars", *extra, page.as_uri()]
    env = {**os.environ, "HOME": str(tmp_path)}
    return subprocess.run(args, capture_output=True, text=True, timeout=180, env=env,
                          stdin=subprocess.DEVNULL, check=False)


def module_of(feature_file: str) -> str:
    """The pytest-bdd module that binds a feature file, as its JUnit classname."""
    for path in sorted(glob.glob(os.path.join(REPO, "tests", "features", "test_*.py"))):
        if f'"{feature_file}"' in Path(path).read_text(encoding="utf-8"):
            return "tests.features." + Path(path).stem
    raise AssertionError(f"no module in tests/features binds {feature_file}")


def fixture_junit(path: Path) -> dict[str, Counter[str]]:
    """A JUnit report over real scenarios, a few per decision; returns each decision's testcases."""
    reqs, scens = requirements(), scenarios()
    ids = {r.id for r in reqs}
    names = Counter(make_python_name(s.name) for s in scens)
    by_decision: dict[str, list[Scenario]] = {}
    for scenario in sorted({s.ref: s for ss in coverage(reqs, scens).values() for s in ss}.values(),
                           key=lambda s: (s.file, s.line)):
        keys = {decision_key(t) for t in scenario.tags & ids}
        if len(keys) == 1 and names[make_python_name(scenario.name)] == 1 and not scenario.node.get("examples"):
            by_decision.setdefault(keys.pop(), []).append(scenario)
    cases, expected = [], {}
    for index, (key, candidates) in enumerate(sorted(by_decision.items())):
        runs: Counter[str] = Counter()
        for position, scenario in enumerate(candidates[:2]):
            attrs = f"classname={quoteattr(module_of(scenario.file))}"
            test = f"test_{make_python_name(scenario.name)}"
            if position == 0:  # passed on both worlds
                cases += [f"<testcase {attrs} name={quoteattr(test + '[memory]')}/>",
                          f"<testcase {attrs} name={quoteattr(test + '[fs]')}/>"]
                runs["passed"] += 2
            elif index % 2:
                message = quoteattr(FAILURE.format(key=key)).replace("\n", "&#10;")
                cases.append(f"<testcase {attrs} name={quoteattr(test)}><failure message={message}>"
                             "traceback</failure></testcase>")
                runs["failed"] += 1
            else:
                cases.append(f"<testcase {attrs} name={quoteattr(test)}><skipped type=\"pytest.skip\" "
                             f"message={quoteattr(SKIP_REASON)}>x.py:1: skipped</skipped></testcase>")
                runs["skipped"] += 1
        expected[key] = runs
    cases.append('<testcase classname="tests.unit.test_x" name="test_not_a_scenario"/>')
    path.write_text('<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="pytest" '
                    f'tests="{len(cases)}">\n' + "\n".join(cases) + "\n</testsuite></testsuites>\n",
                    encoding="utf-8")
    return expected


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if (tag is None or child.tag == tag) and (cls is None or cls in child.classes):
                    found.append(child)
                found += child.find(tag, cls)
        return found


class Dom(HTMLParser):
    """The serialised DOM Chromium dumps, as a tree (void elements close themselves)."""

    VOID = {"meta", "link", "br", "img", "hr", "input", "col", "area", "base", "wbr", "source"}

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.at = self.root
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.at)
        self.at.children.append(node)
        if tag not in self.VOID:
            self.at = node

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.at
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.at = node.parent

    def handle_data(self, data: str) -> None:
        self.at.children.append(data)


def test_the_living_spec_renders_in_chromium_with_every_statement_count_and_failure(tmp_path: Path) -> None:
    chromium()  # skip (or, in CI, fail) before any work when there is no browser
    junit = tmp_path / "junit.xml"
    expected = fixture_junit(junit)
    page = tmp_path / "index.html"
    write(build(str(junit)), str(page))

    dumped = render_in_chromium(page, tmp_path, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = Dom(dumped.stdout).root
    assert dom.find("body"), f"Chromium rendered no body: {dumped.stdout[:500]!r}"
    # readable without JavaScript and without the network: no script, no external reference, and a
    # policy that would refuse both
    assert not dom.find("script") and "http://" not in dumped.stdout and "https://" not in dumped.stdout
    assert not [n for n in dom.find() if n.tag in ("link", "img", "iframe", "object") or "src" in n.attrs]
    assert "default-src 'none'" in dom.find("meta")[2].attrs.get("content", "")

    # every statement id of features/README.md, shown as its heading
    statements = dom.find("article", "statement")
    shown = {a.text().strip() for s in statements for a in s.find("a", "sid")}
    assert [s.attrs["data-id"] for s in statements] == [r.id for r in requirements()]
    assert shown == {r.id for r in requirements()}

    # a statement with sub-ids (D10.8) shows each of its scenarios once, under the sub-ids' headings
    for statement in (s for s in statements if s.parent is None or s.parent.tag != "article"):
        where = [d.find("div", "where")[0].text() for d in statement.find("details", "scenario")]
        assert len(where) == len(set(where)), (statement.attrs["data-id"], where)
    d108 = next(s for s in statements if s.attrs["data-id"] == "D10.8")
    assert [p.attrs["data-id"] for p in d108.find("article", "part")] == ["D10.8a", "D10.8b", "D10.8c", "D10.8d"]

    # each decision's test runs: the visible counts and the data are the JUnit report's
    sections = {s.attrs["data-key"]: s for s in dom.find("section", "decision")}
    assert set(expected) <= set(sections)
    for key, section in sections.items():
        runs = expected.get(key, Counter())
        line = section.find("p", "runs-line")[0]
        visible = {n.attrs["data-verdict"]: n.text() for n in line.find("span", "n")}
        for verdict in ("passed", "failed", "skipped"):
            if runs[verdict] or verdict in ("passed", "failed"):
                assert visible[verdict] == f"{runs[verdict]} {verdict}", (key, visible)
            assert section.attrs[f"data-runs-{verdict}"] == str(runs[verdict]), key
        total = line.find("span", "total")[0].text()
        assert total == f"{sum(runs.values())} runs", (key, total)

    # a failed scenario shows its message, as text (no markup from it reached the DOM)
    failed = [d for d in dom.find("details", "scenario") if "failed" in d.classes]
    assert len(failed) == sum(r["failed"] for r in expected.values()) > 0
    for scenario in failed:
        message = scenario.find("pre", "msg")[0]
        assert "<b>broke</b> & <script>alert(1)</script>\nsecond line of the message" in message.text()
        assert not message.find()
    skipped = [d for d in dom.find("details", "scenario") if "skipped" in d.classes]
    assert skipped and all(SKIP_REASON in d.find("pre", "msg")[0].text() for d in skipped)

    # statements with no passing scenario come first, each linking to its statement
    top = dom.find("section", "unproven-list")[0]
    unproven = [s.attrs["data-id"] for s in statements if "unproven" in s.classes]
    assert [a.text() for a in top.find("a")] == unproven

    os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
    shot = render_in_chromium(page, tmp_path, f"--screenshot={SCREENSHOT}", "--window-size=1280,2400")
    assert shot.returncode == 0, shot.stderr[-2000:]
    with open(SCREENSHOT, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
