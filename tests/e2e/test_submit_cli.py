"""`li agent` / `li orchestrate` through the real executable: handles, detachment, refusals, human mode."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.support import envelope_of, li_bin, machine, run_li, wait_terminal

FAKES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fakes", "bin")


def runs(home: str) -> list[str]:
    folder = os.path.join(home, "runs")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def record(home: str, run_id: str) -> dict:
    with open(os.path.join(home, "runs", run_id, "record.json"), encoding="utf-8") as handle:
        return json.load(handle)


def status_until_terminal(home: str, run_id: str, within: float = 30.0) -> dict:
    """`li job status` until the run is terminal (the contract's own reading of the record)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        data = machine("job", "status", run_id, home=home).data
        if data["terminal"]:
            return data
        time.sleep(0.1)
    raise AssertionError(f"{run_id} never became terminal: {record(home, run_id)}")


def ended(home: str, run_id: str, within: float = 30.0) -> dict:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = record(home, run_id)
        if found.get("finished_at") or found.get("spawn_state") == "failed":
            return found
        time.sleep(0.05)
    raise AssertionError(f"{run_id} did not end: {record(home, run_id)}")


def test_a_detached_sh_submit_returns_a_handle_and_the_run_later_succeeds(li_home: str) -> None:
    result = machine("agent", "--detach", "sh", 'echo hello > "$LI_ARTIFACTS_DIR/out.txt"', home=li_home)
    data = result.data
    assert set(data) == {"run_id", "pid", "status", "terminal", "outcome", "log", "replayed"}  # replayed: the idempotent submit's flag
    assert (data["status"], data["terminal"], data["outcome"]) == ("running", False, None)
    assert os.path.isabs(data["log"]) and data["log"] == os.path.join(li_home, "runs", data["run_id"], "console.log")
    final = status_until_terminal(li_home, data["run_id"])
    assert (final["status"], final["terminal"], final["outcome"]) == ("completed", True, "succeeded")
    with open(os.path.join(li_home, "runs", data["run_id"], "artifacts", "out.txt")) as handle:
        assert handle.read() == "hello\n"


def test_killing_the_submitter_and_its_shell_does_not_stop_the_run(li_home: str) -> None:
    script = f'{li_bin()} agent --machine --detach sh "sleep 1; echo survived > \\"\\$LI_ARTIFACTS_DIR/x\\""; sleep 60'
    env = {**os.environ, "LI_HOME": li_home}
    shell = subprocess.Popen(["/bin/sh", "-c", script], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             env=env, start_new_session=True, text=True)
    try:
        envelope = json.loads(shell.stdout.readline())
    finally:
        os.killpg(shell.pid, signal.SIGKILL)  # the submitter's whole group: li (if alive) and its shell
        shell.wait()
    run_id = envelope["data"]["run_id"]
    assert ended(li_home, run_id)["status"] == "completed"
    with open(os.path.join(li_home, "runs", run_id, "artifacts", "x")) as handle:
        assert handle.read() == "survived\n"


@pytest.mark.parametrize("name, argv", [
    ("unknown model", ["agent", "gpt-9", "hello"]),
    ("malformed model", ["agent", "claude/", "hello"]),
    ("empty prompt", ["agent", "sh", "   "]),
    ("no prompt", ["agent", "claude/opus"]),
    ("unreadable prompt file", ["agent", "sh", "--prompt-file", "/nonexistent/prompt"]),
    ("prompt twice", ["agent", "sh", "echo", "--prompt", "echo"]),
    ("bad timeout", ["agent", "--timeout", "soon", "sh", "true"]),
    ("zero timeout", ["agent", "--timeout", "0", "sh", "true"]),
    ("missing cwd", ["agent", "--cwd", "/nonexistent/dir", "sh", "true"]),
    ("zero legs", ["orchestrate", "fanout", "--legs", "0", "sh", "true"]),
    ("absurd legs", ["orchestrate", "fanout", "--legs", "100000", "sh", "true"]),
    ("legs and models", ["orchestrate", "fanout", "--legs", "2", "--models", "sh,sh", "true"]),
    ("sh synthesis", ["orchestrate", "fanout", "--synthesize", "sh", "sh", "true"]),
    ("no mode", ["orchestrate"]),
    ("flow file missing", ["orchestrate", "flow", "/nonexistent/flow.yaml"]),
])
def test_bad_input_is_invalid_input_and_leaves_no_run_folder(li_home: str, name: str, argv: list[str]) -> None:
    error = machine(*argv, "--detach", home=li_home).error
    assert error["kind"] == "invalid_input", (name, error)
    assert runs(li_home) == []


def test_a_prompt_file_over_256_kib_is_refused(li_home: str, tmp_path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("x" * (256 * 1024 + 1))
    assert machine("agent", "--detach", "sh", "--prompt-file", str(big), home=li_home).error["kind"] == "invalid_input"
    assert runs(li_home) == []


@pytest.mark.parametrize("text", ["steps: [unclosed", "{\"steps\": [{\"id\": \"a\", \"prompt\": \"x\", \"depends_on\": [\"a\"]}]}",
                                  "steps:\n  - id: a\n    prompt: x\n    depends_on: [ghost]\n", "- just\n- a list\n"])
def test_a_malformed_flow_spec_is_refused(li_home: str, tmp_path, text: str) -> None:
    spec = tmp_path / "flow.yaml"
    spec.write_text(text)
    assert machine("orchestrate", "flow", "--detach", str(spec), home=li_home).error["kind"] == "invalid_input"
    assert runs(li_home) == []


def test_a_missing_provider_executable_is_unavailable(li_home: str) -> None:
    result = machine("agent", "--detach", "codex", "hello", home=li_home, env={"PATH": "/usr/bin:/bin"})
    assert result.error["kind"] == "unavailable" and result.error["detail"] == {"provider": "codex"}
    assert runs(li_home) == []


def test_prompt_file_dash_reads_stdin(li_home: str) -> None:
    data = machine("agent", "--detach", "--prompt-file", "-", "sh", home=li_home, stdin="echo from-stdin").data
    assert ended(li_home, data["run_id"])["status"] == "completed"
    with open(os.path.join(li_home, "runs", data["run_id"], "artifacts", "response.md")) as handle:
        assert handle.read() == "from-stdin\n"


def test_editing_the_prompt_file_after_submit_changes_nothing(li_home: str, tmp_path) -> None:
    prompt = tmp_path / "prompt.sh"
    prompt.write_text("echo original")
    run_id = machine("agent", "--detach", "--prompt-file", str(prompt), "sh", home=li_home).data["run_id"]
    prompt.write_text("echo edited")
    folder = os.path.join(li_home, "runs", run_id)
    assert ended(li_home, run_id)["status"] == "completed"
    with open(os.path.join(folder, "instruction.txt")) as handle:
        assert handle.read() == "echo original"
    with open(os.path.join(folder, "artifacts", "response.md")) as handle:
        assert handle.read() == "original\n"


def test_fifty_submits_from_four_processes_give_fifty_runs_that_all_end(li_home: str) -> None:
    ids: list[str] = []
    lock = threading.Lock()

    def submitter(count: int) -> None:
        for _ in range(count):
            data = machine("agent", "--detach", "sh", 'echo "$LI_RUN_ID"', home=li_home).data
            with lock:
                ids.append(data["run_id"])

    workers = [threading.Thread(target=submitter, args=(n,)) for n in (13, 13, 12, 12)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(ids) == 50 and len(set(ids)) == 50 and sorted(ids) == runs(li_home)
    for run_id in ids:
        assert ended(li_home, run_id, within=120)["status"] == "completed"
        with open(os.path.join(li_home, "runs", run_id, "artifacts", "response.md")) as handle:
            assert handle.read() == f"{run_id}\n"


# `true` prints nothing and exits 0: for sh the exit decides, so it succeeds (it was 1).
@pytest.mark.parametrize("command, code, printed", [("sleep 1; echo hi", 0, "hi\n"), ("exit 3", 1, ""),
                                                     ("true", 0, "")])
def test_a_person_in_the_foreground_sees_the_console_and_gets_the_runs_exit_code(li_home, command, code,
                                                                                 printed) -> None:
    result = run_li("agent", "sh", command, home=li_home)
    assert result.returncode == code, result.stderr
    assert result.stdout == printed


def test_a_foreground_timeout_exits_124(li_home: str) -> None:
    assert run_li("agent", "--timeout", "0.5", "sh", "sleep 10", home=li_home).returncode == 124


def test_a_person_detaching_gets_the_run_id_and_how_to_follow_it(li_home: str) -> None:
    result = run_li("agent", "--detach", "sh", "true", home=li_home)
    assert result.returncode == 0
    run_id = result.stdout.strip()
    assert runs(li_home) == [run_id]
    # The hint names the run by its short form and fits 80 columns (it was 123 characters).
    hint = result.stderr.splitlines()[0]
    assert hint == f"li job status {run_id[-6:]} · li job output {run_id[-6:]} --follow · li job kill {run_id[-6:]}"
    assert len(hint) <= 80


def test_a_person_with_bad_input_gets_one_line_and_a_nonzero_exit(li_home: str) -> None:
    result = run_li("agent", "gpt-9", "hello", home=li_home)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "unknown model" in result.stderr and "Traceback" not in result.stderr


def test_the_notify_command_is_recorded_from_the_flag(li_home: str) -> None:
    data = machine("agent", "--detach", "--notify", "true '{run_id}' {status}", "sh", "true", home=li_home).data
    found = record(li_home, data["run_id"])
    assert (found["notify"], found["notify_source"]) == (["true", "{run_id}", "{status}"], "flag")


def test_the_notify_command_falls_back_to_the_environment_then_config(li_home: str) -> None:
    from_env = machine("agent", "--detach", "sh", "true", home=li_home, env={"LI_NOTIFY_COMMAND": "true env"}).data
    assert (record(li_home, from_env["run_id"])["notify"], record(li_home, from_env["run_id"])["notify_source"]) == (
        ["true", "env"], "env")
    with open(os.path.join(li_home, "config.toml"), "w") as handle:
        handle.write('notify = ["true", "config", "{run_id}"]\n')
    from_config = machine("agent", "--detach", "sh", "true", home=li_home).data
    found = record(li_home, from_config["run_id"])
    assert (found["notify"], found["notify_source"]) == (["true", "config", "{run_id}"], "config")


def test_a_badly_quoted_notify_command_is_refused(li_home: str) -> None:
    assert machine("agent", "--detach", "--notify", "true 'unclosed", "sh", "true", home=li_home).error["kind"] == "invalid_input"
    assert runs(li_home) == []


def test_a_fanout_with_fake_agents_runs_one_leg_per_model(li_home: str) -> None:
    env = {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}"}
    data = machine("orchestrate", "fanout", "--detach", "--models", "claude/opus,codex,gemini", "--synthesize",
                   "claude", "compare", home=li_home, env=env).data
    final = status_until_terminal(li_home, data["run_id"])
    assert final["status"] == "completed" and final["kind"] == "fanout"
    artifacts = sorted(os.listdir(os.path.join(li_home, "runs", data["run_id"], "artifacts")))
    assert artifacts == ["leg-1.md", "leg-2.md", "leg-3.md", "response.md"]


# --- found by an adversarial review of the real li; each pins one fixed defect ---------------


def test_deeply_nested_flow_spec_is_invalid_input_not_internal(li_home: str, tmp_path: Path) -> None:
    spec = tmp_path / "deep.json"
    spec.write_text("[" * 5000 + "]" * 5000)
    envelope = envelope_of(run_li("orchestrate", "flow", "--detach", str(spec), "--machine", home=li_home))
    assert envelope["ok"] is False
    assert envelope["error"]["kind"] == "invalid_input", envelope["error"]



def test_a_flow_spec_holding_an_impossible_date_is_invalid_input(li_home: str, tmp_path: Path) -> None:
    spec = tmp_path / "flow.yaml"
    spec.write_text("steps:\n  - id: a\n    prompt: echo hi\n    description: 2020-13-45\n")
    error = machine("orchestrate", "flow", "--detach", str(spec), home=li_home).error
    assert error["kind"] == "invalid_input"
    assert not os.path.isdir(os.path.join(li_home, "runs")) or os.listdir(os.path.join(li_home, "runs")) == []



def test_a_foreground_agent_writes_the_works_output_to_stdout_and_its_own_lines_to_stderr(li_home: str) -> None:
    person = run_li("agent", "sh", 'echo hello; printf "no newline"', home=li_home)
    assert person.returncode == 0, person.stderr
    assert person.stdout == "hello\nno newline"  # the work's bytes, exactly
    assert "li runner: completed" in person.stderr
    run_id = person.stderr.splitlines()[0].removeprefix("run ")
    assert (Path(li_home) / "runs" / run_id / "console.log").read_bytes() == b"hello\nno newline"


def test_a_detached_runs_output_is_exactly_what_the_work_wrote_and_li_s_lines_are_apart(li_home: str) -> None:
    """Issue 27: `li job output RUN > file` is the work's output; li's lines live in the li log."""
    run_id = machine("agent", "--detach", "sh", "printf abc", home=li_home).data["run_id"]
    assert wait_terminal(li_home, run_id, timeout=60)["status"] == "completed"
    shown = run_li("job", "output", run_id, home=li_home)
    assert shown.returncode == 0 and shown.stdout == "abc"
    data = machine("job", "output", run_id, home=li_home).data
    assert data["console"]["value"] == "abc"
    deadline = time.monotonic() + 10  # the runner says the end just after recording it
    while "completed" not in (data["li_log"]["value"] or "") and time.monotonic() < deadline:
        time.sleep(0.05)
        data = machine("job", "output", run_id, home=li_home).data
    assert data["li_log"]["value"] == "li runner: completed\n"
    li_log = Path(li_home) / "runs" / run_id / "li.log"
    assert stat.S_IMODE(li_log.stat().st_mode) == 0o600
    followed = run_li("job", "output", "--follow", run_id, home=li_home)
    assert (followed.returncode, followed.stdout, followed.stderr) == (0, "abc", "li runner: completed\n")
