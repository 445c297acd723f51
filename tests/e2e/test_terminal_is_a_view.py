"""The terminal is only a view. Ctrl-C in a foreground view (`li agent`,
`li orchestrate`, `li job retry`, `li job output --follow`, `li job wait`) stops watching, never the
work: one line says how to follow again and how to kill, the exit is 130, and `li job status`
shows the run still running. Under a real pseudo-terminal at 60 and 120 columns, Ctrl-C sent as a
terminal sends it (to the whole foreground process group).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.screen import Terminal
from tests.support import machine, run_li, status_data

WIDTHS = [60, 120]
LONG = "echo started; sleep 60; echo never"


def the_only_run(home: str) -> str:
    [run_id] = os.listdir(os.path.join(home, "runs"))
    return run_id


def interrupted(term: Terminal, home: str, run_id: str | None = None) -> str:
    """Ctrl-C once the work has started; the run named, still running; the screen's text."""
    term.until(lambda t: "started" in t.text())
    term.child.sendintr()
    assert term.finish() == 130, term.text()
    run_id = run_id or the_only_run(home)
    data = status_data(home, run_id)
    assert (data["status"], data["terminal"], data["alive"]) == ("running", False, True), data
    text = term.raw.decode("utf-8", "replace").replace("\r\n", "\n")  # the lines as written, not as wrapped
    short = run_id[-6:]
    assert "stopped watching" in text and f"li job kill {short}" in text, text
    assert "Traceback" not in text and "cancel" not in text, text
    machine("job", "kill", run_id, home=home)
    return text


@pytest.mark.parametrize("columns", WIDTHS)
def test_ctrl_c_in_a_foreground_agent_stops_watching_not_the_run(li_home: str, columns: int) -> None:
    term = Terminal(["agent", "sh", LONG], li_home, rows=20, columns=columns)
    text = interrupted(term, li_home)
    assert f"li job output {the_only_run(li_home)[-6:]} --follow" in text


@pytest.mark.parametrize("columns", WIDTHS)
def test_ctrl_c_in_a_foreground_fanout_stops_watching_not_the_run(li_home: str, columns: int) -> None:
    term = Terminal(["orchestrate", "fanout", "--legs", "2", "sh", LONG], li_home, rows=20, columns=columns)
    interrupted(term, li_home)


@pytest.mark.parametrize("columns", WIDTHS)
def test_ctrl_c_in_a_foreground_flow_stops_watching_not_the_run(li_home: str, tmp_path: Path,
                                                                 columns: int) -> None:
    spec = tmp_path / "flow.yaml"
    spec.write_text(f"steps:\n  - id: a\n    prompt: '{LONG}'\n")
    term = Terminal(["orchestrate", "flow", str(spec)], li_home, rows=20, columns=columns)
    interrupted(term, li_home)


@pytest.mark.parametrize("columns", WIDTHS)
def test_ctrl_c_in_a_foreground_retry_stops_watching_not_the_new_run(li_home: str, columns: int) -> None:
    first = machine("agent", "--detach", "sh", LONG, home=li_home).data["run_id"]
    machine("job", "kill", first, home=li_home)
    term = Terminal(["job", "retry", first], li_home, rows=20, columns=columns)
    term.until(lambda t: "started" in t.text())
    [retry] = [run_id for run_id in os.listdir(os.path.join(li_home, "runs")) if run_id != first]
    interrupted(term, li_home, retry)


@pytest.mark.parametrize("columns", WIDTHS)
def test_ctrl_c_in_output_follow_stops_watching_not_the_run(li_home: str, columns: int) -> None:
    run_id = machine("agent", "--detach", "sh", LONG, home=li_home).data["run_id"]
    term = Terminal(["job", "output", run_id, "--follow"], li_home, rows=20, columns=columns)
    text = interrupted(term, li_home, run_id)
    assert f"li job output {run_id[-6:]} --follow" in text


@pytest.mark.parametrize("columns", WIDTHS)
def test_ctrl_c_in_wait_stops_watching_not_the_run_and_says_how_to_wait_again(li_home: str,
                                                                             columns: int) -> None:
    run_id = machine("agent", "--detach", "sh", LONG, home=li_home).data["run_id"]
    term = Terminal(["job", "wait", run_id, "--max-wait", "60", "--poll-interval", "0.1"], li_home,
                    rows=20, columns=columns)
    term.until(lambda t: run_id in t.text())
    term.child.sendintr()
    assert term.finish() == 130
    data = status_data(li_home, run_id)
    assert (data["status"], data["alive"]) == ("running", True), data
    text = term.raw.decode("utf-8", "replace").replace("\r\n", "\n")
    assert f"li job wait {run_id[-6:]}" in text and f"li job kill {run_id[-6:]}" in text, text
    assert "1 still running when you stopped watching" in text, text
    machine("job", "kill", run_id, home=li_home)


def test_ctrl_c_sent_to_li_alone_leaves_the_run_running(li_home: str) -> None:
    """Without a terminal too (a SIGINT to `li` itself), the view stops and the work goes on."""
    import signal
    import subprocess

    from tests.support import li_bin

    person = subprocess.Popen([li_bin(), "agent", "sh", LONG], env=dict(os.environ, LI_HOME=li_home),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert person.stdout.readline().strip() == "started"  # type: ignore[union-attr]
        person.send_signal(signal.SIGINT)
        _, err = person.communicate(timeout=60)
    finally:
        if person.poll() is None:
            person.kill()
    assert person.returncode == 130, err
    run_id = the_only_run(li_home)
    assert status_data(li_home, run_id)["status"] == "running"
    assert run_li("job", "kill", run_id, home=li_home).returncode == 0
