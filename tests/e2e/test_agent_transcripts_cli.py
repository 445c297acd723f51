"""What a person sees of an agent run: the transcript of its events, or with --raw the stream itself."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.support import machine, run_li

FAKES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fakes", "bin")


def fakes(**extra: str) -> dict[str, str]:
    return {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}", **extra}


def ended(home: str, run_id: str, within: float = 30.0) -> None:
    """Terminal, and the runner's last line written in its li log (it says the end after recording it)."""
    deadline = time.monotonic() + within
    li_log = os.path.join(home, "runs", run_id, "li.log")
    while time.monotonic() < deadline:
        if machine("job", "status", run_id, home=home).data["terminal"]:
            with open(li_log, "rb") as handle:
                if b"li runner: completed" in handle.read():
                    return
        time.sleep(0.1)
    raise AssertionError(f"{run_id} did not end")


CLAUDE_TOOLS = [
    "I'll look at the project first.",
    "→ Bash  ls -la",
    "→ Read  /home/dev/project/app.py",
    "→ Edit  /home/dev/project/app.py",
    "✗ tool failed: Claude requested permissions to write to /home/dev/project/app.py, but you haven't granted it yet.",
    "app.py prints a greeting; I could not edit it without write permission.",
    "tokens: in 18 · cache read 39940 · cache write 510 · out 96 · cost $0.0213",
]


def test_a_foreground_claude_run_shows_its_transcript_and_the_runner_speaks_on_stderr(li_home: str) -> None:
    result = run_li("agent", "claude/opus", "summarise README.md", home=li_home, env=fakes(FAKE_CLAUDE_MODE="tools"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == CLAUDE_TOOLS
    assert '"type"' not in result.stderr  # the runner's own lines may follow there (it says the end after recording it)


def test_raw_shows_the_event_stream_as_the_console_has_it(li_home: str) -> None:
    result = run_li("agent", "--raw", "claude", "hi", home=li_home, env=fakes())
    assert result.returncode == 0, result.stderr
    events = [json.loads(line)["type"] for line in result.stdout.splitlines()]
    assert events == ["system", "assistant", "result"]


@pytest.mark.parametrize("model, lines", [
    ("codex/o3", ["codex(o3) says: hi", "tokens: in 20 · cached in 5 · out 9"]),
    ("gemini/gemini-pro", ["gemini(gemini-pro) says: hi", "tokens: in 30 · cached in 12 · out 4 · total 40"]),
])
def test_codex_and_gemini_foreground_runs_show_text_and_every_token_class(li_home: str, model: str,
                                                                          lines: list[str]) -> None:
    result = run_li("agent", model, "hi", home=li_home, env=fakes())
    assert (result.returncode, result.stdout.splitlines()) == (0, lines), result.stderr


def test_a_failed_agent_run_marks_its_errors_and_exits_non_zero(li_home: str) -> None:
    result = run_li("agent", "gemini", "hi", home=li_home, env=fakes(FAKE_GEMINI_MODE="error"))
    assert result.returncode != 0
    assert result.stdout.splitlines()[:2] == ["✗ simulated failure", "✗ ApiError: simulated failure"]


def test_a_fanout_keeps_each_legs_prefix_on_its_transcript(li_home: str) -> None:
    result = run_li("orchestrate", "fanout", "--models", "codex,gemini", "hi", home=li_home, env=fakes())
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "[leg-1] codex(default) says: hi" in lines and "[leg-2] gemini(gemini-default) says: hi" in lines
    assert not any('"type"' in line for line in lines)


def test_sh_output_is_never_read_as_agent_events(li_home: str) -> None:
    event = json.dumps({"type": "result", "subtype": "success", "result": "x"})
    result = run_li("agent", "sh", f"echo '{event}'", home=li_home, env=fakes())
    assert result.stdout == event + "\n"


def test_job_output_renders_for_people_and_keeps_the_raw_stream_for_programs(li_home: str) -> None:
    run_id = machine("agent", "--detach", "codex", "x", home=li_home, env=fakes(FAKE_CODEX_MODE="tools")).data["run_id"]
    ended(li_home, run_id)
    shown = run_li("job", "output", run_id, home=li_home)
    assert shown.returncode == 0
    assert shown.stdout.splitlines() == [
        "→ shell  bash -lc 'ls -la'", "→ shell  bash -lc 'pytest -q'", "✗ shell bash -lc 'pytest -q' exited 1",
        "→ docs.search  greeting style", "→ edit app.py (update)", "I updated app.py; one test still fails.",
        "tokens: in 51200 · cached in 40960 · out 830"]  # the work's, rendered; li's lines are apart
    raw = run_li("job", "output", "--raw", run_id, home=li_home).stdout
    data = machine("job", "output", run_id, home=li_home).data
    assert raw == data["console"]["value"] and json.loads(raw.splitlines()[0])["type"] == "thread.started"
    assert all(json.loads(line) for line in raw.splitlines())  # nothing but the agent's own events
    assert data["li_log"]["value"] == "li runner: completed\n"


def test_job_output_follow_renders_and_a_cut_tail_starts_at_a_whole_line(li_home: str) -> None:
    run_id = machine("agent", "--detach", "claude", "x", home=li_home, env=fakes(FAKE_CLAUDE_MODE="tools")).data["run_id"]
    ended(li_home, run_id)
    followed = run_li("job", "output", "--follow", run_id, home=li_home)
    assert followed.returncode == 0
    assert followed.stdout.splitlines() == CLAUDE_TOOLS  # the work's, rendered
    assert followed.stderr == "li runner: completed\n"  # li's own, apart
    cut = run_li("job", "output", "--follow", "--tail-chars", "1500", run_id, home=li_home)
    tail = cut.stdout.splitlines()
    assert tail[-1] == CLAUDE_TOOLS[-1] and not any('"type"' in line for line in tail)
    assert cut.stderr == "li runner: completed\n"
    assert run_li("job", "output", "--follow", "--raw", run_id, home=li_home).stdout.startswith('{"type":"system"')
