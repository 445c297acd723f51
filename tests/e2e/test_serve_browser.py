"""`li serve` in a real browser: Debian's headless Chromium over the DevTools protocol, real runs from the CLI.

Screenshots of the board and of a run's page, at 1280x800 and 390x844, go to build/serve/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import Browser, chromium
from tests.serving import Served, wait_until
from tests.support import REPO, li_bin, run_li

FAKES = os.path.join(REPO, "tests", "fakes", "bin")
SHOTS = os.path.join(REPO, "build", "serve")


def fakes() -> dict[str, str]:
    return {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}"}


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    chromium()
    opened = Browser(tmp_path)
    yield opened
    opened.close()


@pytest.fixture
def served(li_home: str) -> Iterator[Served]:
    server = Served(li_home, env=fakes())
    yield server
    server.stop()


def submit(home: str, *argv: str, cwd: str | None = None, env: dict[str, str] | None = None) -> str:
    result = run_li("agent", "--detach", *argv, "--machine", home=home, cwd=cwd, env={**fakes(), **(env or {})})
    envelope = json.loads(result.stdout)
    assert envelope["ok"], envelope
    return str(envelope["data"]["run_id"])


def status(home: str, run_id: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run_li("job", "status", run_id, "--machine", home=home, env=env).stdout)["data"]
    return data


def ended(home: str, run_id: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = wait_until(lambda: (lambda d: d if d["terminal"] else None)(status(home, run_id, env)),
                                       within=60)
    return found


def row_in(group: str, run_id: str) -> str:
    return f"!!document.querySelector('#group-{group} #run-{run_id}')"


def gate(tmp_path: Path, name: str) -> tuple[str, str]:
    """A shell loop that holds a run until a file appears, and that file."""
    path = str(tmp_path / name)
    return f"while [ ! -e {path} ]; do sleep 0.05; done", path


def test_a_cli_run_appears_streams_and_its_end_moves_it_to_done_within_a_second(
        served: Served, browser: Browser, li_home: str, tmp_path: Path) -> None:
    browser.navigate(served.url)
    assert browser.evaluate("location.search") == ""  # the token left the URL for a cookie
    hold, go = gate(tmp_path, "go")
    run_id = submit(li_home, "sh", f"echo '<script>window.owned=1</script>'; echo first line; {hold}; echo last line",
                    "--label", "streams")
    browser.wait_for(row_in("working", run_id), timeout=10)  # it appears, with no reload
    browser.wait_for(f"(document.querySelector('#run-{run_id} .last-line')||{{}}).textContent === 'first line'")
    before = browser.evaluate("performance.getEntriesByType('navigation').length + ':' + location.href")

    # its end moves it to "done" within 1 s of the end being recorded
    record = os.path.join(li_home, "runs", run_id, "record.json")
    Path(go).touch()
    recorded_at = shown_at = None
    deadline = time.monotonic() + 30
    while shown_at is None and time.monotonic() < deadline:
        if recorded_at is None:
            with open(record, encoding="utf-8") as handle:
                if json.load(handle).get("finished_at"):
                    recorded_at = time.monotonic()
        if browser.evaluate(row_in("done", run_id)):
            shown_at = time.monotonic()
        time.sleep(0.01)
    assert recorded_at is not None and shown_at is not None
    print(f"end recorded -> row in done: {shown_at - recorded_at:.3f} s")
    assert shown_at - recorded_at < 1.0, shown_at - recorded_at
    assert browser.evaluate("performance.getEntriesByType('navigation').length + ':' + location.href") == before
    assert browser.evaluate("document.querySelector('#group-done .count').textContent") == "1"

    # its console streams on its page, as text
    hold, go = gate(tmp_path, "go2")
    second = submit(li_home, "sh", f"echo '<script>window.owned=1</script>'; echo one; {hold}; echo two")
    browser.navigate(f"{served.origin}/runs/{second}")
    browser.wait_for("document.getElementById('console').textContent.includes('one')")
    assert "two" not in browser.evaluate("document.getElementById('console').textContent")
    Path(go).touch()
    browser.wait_for("document.getElementById('console').textContent.includes('two')")
    browser.wait_for("document.getElementById('f-status').textContent === 'completed'")
    assert "<script>window.owned=1</script>" in browser.evaluate("document.getElementById('console').textContent")
    assert browser.evaluate("document.querySelectorAll('main script').length") == 0
    assert browser.evaluate("window.owned === undefined")


def test_kill_from_the_page_asks_first_and_ends_the_run_cancelled(
        served: Served, browser: Browser, li_home: str) -> None:
    run_id = submit(li_home, "sh", "echo going; sleep 60")
    browser.navigate(served.url)
    browser.navigate(f"{served.origin}/runs/{run_id}")
    browser.wait_for("document.getElementById('console').textContent.includes('going')")
    browser.evaluate("document.getElementById('kill').click()")
    browser.wait_for("location.pathname.endsWith('/confirm/kill') && !!document.getElementById('confirm')")
    assert status(li_home, run_id)["terminal"] is False  # the confirm step did nothing yet
    browser.evaluate("document.getElementById('confirm').click()")
    browser.wait_for(f"location.pathname === '/runs/{run_id}' && !!document.getElementById('said')")
    assert "kill: signalled" in browser.evaluate("document.getElementById('said').textContent")
    data = ended(li_home, run_id)
    assert (data["status"], data["outcome"]) == ("cancelled", "cancelled")
    browser.wait_for("document.getElementById('f-outcome').textContent === 'cancelled'")


def git(repo: str, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p",
           "GIT_COMMITTER_EMAIL": "p@x"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> str:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    path = str(tmp_path / "repo")
    os.makedirs(path)
    git(path, "init", "-q", "-b", "main")
    Path(path, "shared.txt").write_text("one\ntwo\n")
    git(path, "add", "shared.txt")
    git(path, "commit", "-qm", "init")
    return path


def test_a_worktree_runs_diff_shows_and_the_page_reads_well_on_a_laptop_and_a_phone(
        served: Served, browser: Browser, li_home: str, repo: str, tmp_path: Path) -> None:
    changed = submit(li_home, "sh", "printf 'x\\ny\\n' > new.txt; sed -i 1d shared.txt", "--worktree",
                     "--label", "refactor", cwd=repo)
    ended(li_home, changed)
    failed = submit(li_home, "sh", "echo 'the tests failed: 3 of 40'; exit 1", "--label", "tests")
    ended(li_home, failed)
    hold, _ = gate(tmp_path, "never")
    running = submit(li_home, "sh", f"echo 'compiling module 7 of 12'; {hold}", "--label", "build")
    browser.navigate(served.url)
    browser.wait_for(row_in("working", running) + " && " + row_in("needs_you", failed) + " && "
                     + row_in("done", changed))
    assert browser.evaluate(f"document.querySelector('#run-{changed} .changes').textContent") == "+2−1"
    browser.wait_for(f"(document.querySelector('#run-{running} .last-line')||{{}}).textContent === "
                     "'compiling module 7 of 12'")
    browser.screenshot(os.path.join(SHOTS, "board-1280x800.png"), 1280, 800)
    browser.screenshot(os.path.join(SHOTS, "board-390x844.png"), 390, 844, mobile=True)

    browser.navigate(f"{served.origin}/runs/{changed}")
    diff = browser.evaluate("document.getElementById('diff').innerText")
    assert "new.txt" in diff and "shared.txt" in diff
    assert "+x" in diff and "-one" in diff and "@@" in diff
    assert browser.evaluate("document.querySelectorAll('#diff pre.patch span.ins').length") == 2
    browser.screenshot(os.path.join(SHOTS, "run-1280x800.png"), 1280, 800)
    browser.screenshot(os.path.join(SHOTS, "run-390x844.png"), 390, 844, mobile=True)
    run_li("job", "kill", running, home=li_home)


def test_reply_from_the_page_starts_the_run_that_continues_it(
        served: Served, browser: Browser, li_home: str, tmp_path: Path) -> None:
    first = submit(li_home, "claude", "first turn", cwd=str(tmp_path))
    assert ended(li_home, first)["session_id"]
    browser.navigate(served.url)
    browser.navigate(f"{served.origin}/runs/{first}")
    assert browser.evaluate("!!document.querySelector('.transcript pre')")  # an agent's transcript summary
    browser.evaluate("document.getElementById('reply-text').value = 'second turn'")
    browser.evaluate("document.getElementById('reply').click()")
    browser.wait_for(f"location.pathname.startsWith('/runs/') && location.pathname !== '/runs/{first}'")
    second = browser.evaluate("location.pathname").rsplit("/", 1)[1]
    data = ended(li_home, second)
    assert data["continues"] == first and data["chain"] == [first, second]
    browser.wait_for(f"document.querySelector('.lineage').textContent.includes('{first}')")


def test_the_page_over_postgresql_shows_the_runs_of_two_hosts_each_with_its_host(
        pg_dsn: str, li_home: str, browser: Browser, tmp_path: Path) -> None:
    from tests.hosts import OtherHost

    store = {"LI_STORE": pg_dsn}
    assert run_li("store", "init", "--machine", home=li_home, env=store).returncode == 0
    other = OtherHost(str(tmp_path))
    server = None
    try:
        env = {**os.environ, "LI_HOME": str(tmp_path / "other-home"), **store}
        theirs = json.loads(other.run([li_bin(), "agent", "--detach", "--machine", "--label", "there", "sh",
                                       "echo from there"], env, timeout=60).stdout)["data"]["run_id"]
        ours = submit(li_home, "sh", "echo from here", "--label", "here", env=store)
        server = Served(li_home, env=store)
        browser.navigate(server.url)
        browser.wait_for(row_in("done", theirs) + " && " + row_in("done", ours), timeout=30)
        hosts = browser.evaluate("[...document.querySelectorAll('li.run .host')].map(n => n.textContent)")
        assert sorted(hosts) == sorted([other.machine_id[:12], Path("/etc/machine-id").read_text().strip()[:12]])
        browser.navigate(f"{server.origin}/?host={other.machine_id}")
        assert browser.evaluate("[...document.querySelectorAll('li.run')].map(n => n.dataset.id)") == [theirs]
        browser.navigate(f"{server.origin}/runs/{theirs}")
        browser.wait_for("document.getElementById('console').textContent.includes('from there')")
        assert browser.evaluate("document.getElementById('f-host').textContent") == other.machine_id
        browser.screenshot(os.path.join(SHOTS, "postgresql-two-hosts-1280x800.png"), 1280, 800)
    finally:
        if server is not None:
            server.stop()
        other.stop()


def test_apply_retry_and_remove_from_the_page_and_a_conflict_said_as_such(
        served: Served, browser: Browser, li_home: str, repo: str) -> None:
    run_id = submit(li_home, "sh", "printf 'x\\n' > new.txt; sed -i 1d shared.txt", "--worktree", cwd=repo)
    ended(li_home, run_id)
    browser.navigate(served.url)
    browser.navigate(f"{served.origin}/runs/{run_id}")
    browser.evaluate("document.getElementById('apply').click()")
    browser.wait_for("location.pathname.endsWith('/confirm/apply') && !!document.getElementById('confirm')")
    assert git(repo, "status", "--porcelain") == ""  # asked first: nothing applied yet
    browser.evaluate("document.getElementById('confirm').click()")
    browser.wait_for("(document.getElementById('said')||{}).textContent?.startsWith('applied 2 file(s)')")
    assert Path(repo, "new.txt").read_text() == "x\n" and Path(repo, "shared.txt").read_text() == "two\n"
    # again: the change no longer applies to the checkout, and the page says it is a conflict
    browser.navigate(f"{served.origin}/runs/{run_id}/confirm/apply")
    browser.evaluate("document.getElementById('confirm').click()")
    browser.wait_for("document.title.includes('refused (conflict)')")
    assert git(repo, "status", "--porcelain") == " M shared.txt\n?? new.txt\n"

    browser.navigate(f"{served.origin}/runs/{run_id}")
    browser.evaluate("document.getElementById('retry').click()")
    browser.wait_for(f"location.pathname.startsWith('/runs/') && location.pathname !== '/runs/{run_id}'")
    again = browser.evaluate("location.pathname").rsplit("/", 1)[1]
    assert ended(li_home, again)["retry_of"] == run_id

    browser.navigate(f"{served.origin}/runs/{again}")
    browser.evaluate("document.getElementById('rm').click()")
    browser.wait_for("location.pathname.endsWith('/confirm/rm')")
    assert status(li_home, again)["run_id"] == again  # still there until confirmed
    browser.evaluate("document.getElementById('confirm').click()")
    browser.wait_for(f"location.pathname === '/' && document.getElementById('said').textContent === 'removed {again}'")
    gone = json.loads(run_li("job", "status", again, "--machine", home=li_home).stdout)
    assert gone["error"]["kind"] == "not_found"
    browser.wait_for(f"!document.getElementById('run-{again}')")  # and it leaves the board


def test_a_board_stream_that_starts_late_sends_the_whole_board_and_what_left(served: Served, li_home: str) -> None:
    run_id = submit(li_home, "sh", "true")
    ended(li_home, run_id)
    wait_until(lambda: run_id.encode() in served.request("GET", "/", served.bearer())[2])
    data = served.stream("/events?since=-1", run_id.encode() + b'", "group": "done"')
    sync = json.loads(data.split(b"event: sync\ndata: ", 1)[1].split(b"\n", 1)[0])
    assert sync == {"ids": [run_id]}  # the page drops any line not in it: a run removed meanwhile
    assert f'"id": "{run_id}", "group": "done"'.encode() in data


def test_a_long_console_is_kept_to_its_bound_and_the_cut_is_said(
        served: Served, browser: Browser, li_home: str) -> None:
    run_id = submit(li_home, "sh", "head -c 300000 /dev/zero | tr '\\0' x; echo; echo THE END")
    ended(li_home, run_id)
    browser.navigate(served.url)
    browser.navigate(f"{served.origin}/runs/{run_id}")
    browser.wait_for("document.getElementById('console').textContent.endsWith('THE END\\n')")
    assert browser.evaluate("document.getElementById('console').textContent.length") <= 200_000
    assert browser.evaluate("document.getElementById('console-cut').hidden") is False
    assert "Earlier output is not shown" in browser.evaluate("document.getElementById('console-cut').textContent")


def test_a_request_waiting_for_approval_is_approved_from_the_board_and_denied_from_its_page(
        served: Served, browser: Browser, li_home: str) -> None:
    """A run waiting on a person's approval is under "needs you" with its request (the tool's
    input as text) and Approve/Deny; each goes through `li job approve|deny`'s service and the run
    gets the answer. The runs ask as li's permission-prompt tool does (`li job approval-request`)."""
    from tests.e2e.test_mcp_approvals import asking

    allowed = submit(li_home, "sh", asking("echo <b>hi</b>"))
    browser.navigate(served.url)
    browser.wait_for(f"{row_in('needs_you', allowed)} && !!document.querySelector('#run-{allowed} #approve-a1')",
                     timeout=30)
    shown = browser.evaluate(f"document.querySelector('#run-{allowed} .tool-input').textContent")
    assert "<b>hi</b>" in shown  # the input as text, never markup
    assert browser.evaluate(f"document.querySelector('#run-{allowed} .tool-input b') === null")
    browser.evaluate(f"document.querySelector('#run-{allowed} #approve-a1').click()")
    browser.wait_for(f"location.pathname === '/runs/{allowed}' && !!document.getElementById('said')")
    assert "allow: a1 allow" in browser.evaluate("document.getElementById('said').textContent")
    data = ended(li_home, allowed)
    assert data["outcome"] == "succeeded" and [a["behavior"] for a in data["approvals"]] == ["allow"]
    browser.wait_for("document.getElementById('console').textContent.includes('\"behavior\": \"allow\"') || "
                     "document.getElementById('console').textContent.includes('\"behavior\":\"allow\"')")

    denied = submit(li_home, "sh", asking("rm -rf somewhere"))
    wait_until(lambda: status(li_home, denied)["status"] == "waiting_approval" or None, within=30)
    browser.navigate(f"{served.origin}/runs/{denied}")
    browser.wait_for("!!document.getElementById('deny-a1') && "
                     "document.getElementById('sum-status').textContent === 'waiting_approval'")
    browser.evaluate("document.getElementById('deny-reason-a1').value = 'not from the <page>'")
    browser.evaluate("document.getElementById('deny-a1').click()")
    browser.wait_for(f"location.pathname === '/runs/{denied}' && !!document.getElementById('said')")
    data = ended(li_home, denied)
    assert [(a["behavior"], a["message"]) for a in data["approvals"]] == [("deny", "not from the <page>")]
    browser.navigate(f"{served.origin}/runs/{denied}")
    browser.wait_for("!!document.getElementById('approvals')")
    assert "not from the <page>" in browser.evaluate("document.getElementById('approvals').textContent")
    assert browser.evaluate("document.getElementById('deny-a1') === null")  # answered: no button any more
