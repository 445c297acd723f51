"""Real processes, real store: the detached runner does the work; spawn faults leave terminal records."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import stat
import time

import pytest
from dependency_injector import providers

from lionrun.adapters.fs_store import FsRunStore
from lionrun.adapters.processes import DetachedSpawner
from lionrun.application.ports import SpawnRequest
from lionrun.entrypoints.container import get_container, set_container
from lionrun.entrypoints.dispatch import answer
from tests.builders import session_work

FAKES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fakes", "bin")


@pytest.fixture
def home(li_home: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("LI_HOME", li_home)
    monkeypatch.setenv("PATH", f"{FAKES}{os.pathsep}{os.environ['PATH']}")
    set_container(None)
    return li_home


def submit(*argv: str) -> dict:
    return answer(["agent", "--detach", *argv])


def ended(home: str, run_id: str, within: float = 30.0):
    store = FsRunStore(home)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        record = store.read(run_id)
        if record.end_recorded:
            return record
        time.sleep(0.05)
    raise AssertionError(f"{run_id} did not end: {store.read(run_id)}")


def run_file(home: str, run_id: str, name: str) -> str:
    with open(os.path.join(home, "runs", run_id, name), encoding="utf-8") as handle:
        return handle.read()


def pid_gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def session_left_empty(leader: int, within: float = 5.0) -> bool:
    """Nothing of the run lives on in the session its runner led (read from the host's /proc: the
    work's own pids may be numbers of its PID namespace)."""
    from tests.builders import session_work

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not session_work(leader):
            return True
        time.sleep(0.05)
    return False


def test_a_sh_run_writes_its_artifact_and_ends_completed(home: str, tmp_path) -> None:
    envelope = submit("--cwd", str(tmp_path), "sh", 'echo hello > "$LI_ARTIFACTS_DIR/out.txt"; pwd')
    run_id = envelope["data"]["run_id"]
    record = ended(home, run_id)
    assert (record.status, record.outcome, record.exit_code) == ("completed", "succeeded", 0)
    assert run_file(home, run_id, "artifacts/out.txt") == "hello\n"
    assert run_file(home, run_id, "artifacts/response.md") == f"{tmp_path}\n"  # it ran in --cwd
    assert json.loads(run_file(home, run_id, "manifest.json"))["legs"][0]["status"] == "completed"


def test_the_child_is_in_its_own_session_with_stdin_closed(home: str) -> None:
    # the session is read from the host while the work sleeps: in its own PID namespace the work's
    # /proc is the namespace's, where a session led from outside reads 0
    envelope = submit("sh", 'ls -l /proc/$$/fd/0 > "$LI_ARTIFACTS_DIR/stdin"; touch "$LI_ARTIFACTS_DIR/started"; sleep 3')
    data = envelope["data"]
    started = os.path.join(home, "runs", data["run_id"], "artifacts", "started")
    deadline = time.monotonic() + 30
    while not os.path.exists(started):
        assert time.monotonic() < deadline, "the work never started"
        time.sleep(0.05)
    assert session_work(data["pid"]) != [] and data["pid"] != os.getsid(0)
    ended(home, data["run_id"])
    assert run_file(home, data["run_id"], "artifacts/stdin").rstrip().endswith("/dev/null")


def test_a_working_directory_removed_between_validation_and_spawn_leaves_a_terminal_failure(home, tmp_path) -> None:
    doomed = tmp_path / "doomed"
    doomed.mkdir()

    class RemovingSpawner:
        """The fault: the cwd vanishes after validation passed, then the real spawner runs."""

        def spawn(self, request: SpawnRequest) -> int:
            doomed.rmdir()
            return DetachedSpawner().spawn(request)

    get_container().core.spawner.override(providers.Object(RemovingSpawner()))
    envelope = submit("--cwd", str(doomed), "sh", "echo never")
    assert envelope["ok"] is False and envelope["error"]["kind"] == "unavailable"
    run_id = envelope["error"]["detail"]["run_id"]
    record = FsRunStore(home).read(run_id)
    assert (record.spawn_state, record.status, record.outcome, record.reason_code) == (
        "failed", "failed", "failed", "spawn_failed")
    assert record.finished_at is not None


def test_a_non_executable_interpreter_leaves_a_terminal_failure(home, tmp_path) -> None:
    interpreter = tmp_path / "python"
    interpreter.write_text("#!/bin/sh\n")
    interpreter.chmod(stat.S_IRUSR | stat.S_IWUSR)
    container = get_container()
    container.submit.submitter.override(providers.Factory(
        container.submit.submitter.cls, store=container.core.store, files=container.core.store, spawner=container.core.spawner, prober=container.core.prober,
        signaller=container.core.signaller, clock=container.core.clock, providers=container.submit.provider_registry,
        runner_command=[str(interpreter), "-m", "lionrun.entrypoints.runner"], env={"LI_HOME": home}))
    envelope = submit("sh", "echo never")
    assert envelope["ok"] is False
    record = FsRunStore(home).read(envelope["error"]["detail"]["run_id"])
    assert record.end_recorded and record.reason_code == "spawn_failed" and "Permission" in record.extra["spawn_error"]


def test_sigterm_to_the_run_cancels_it_and_stops_the_work(home) -> None:
    envelope = submit("sh", 'sleep 30 & echo $! > "$LI_ARTIFACTS_DIR/pid"; wait')
    run_id, pid = envelope["data"]["run_id"], envelope["data"]["pid"]
    pidfile = pathlib.Path(home, "runs", run_id, "artifacts", "pid")
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_work(pid) != []  # the sleeper, among others (its $! is its PID namespace's number)
    os.killpg(pid, signal.SIGTERM)
    record = ended(home, run_id)
    assert (record.status, record.outcome, record.exit_code) == ("cancelled", "cancelled", 143)
    assert session_left_empty(pid)


def test_a_timeout_kills_the_whole_process_group_of_the_work(home) -> None:
    envelope = submit("--timeout", "1", "sh", 'sleep 30 & echo $! > "$LI_ARTIFACTS_DIR/pid"; wait')
    run_id, pid = envelope["data"]["run_id"], envelope["data"]["pid"]
    record = ended(home, run_id)
    assert (record.status, record.outcome, record.reason_code) == ("timed_out", "failed", "timeout")
    assert run_file(home, run_id, "artifacts/pid").strip()  # the sleeper had started
    assert session_left_empty(pid)


def test_claude_stream_json_gives_the_answer_usage_and_cost(home, tmp_path, monkeypatch) -> None:
    log = tmp_path / "argv.jsonl"
    monkeypatch.setenv("FAKE_ARGV_LOG", str(log))
    run_id = submit("claude/opus", "what is two and two")["data"]["run_id"]
    record = ended(home, run_id)
    assert record.status == "completed"
    assert run_file(home, run_id, "artifacts/response.md") == "claude(opus) says: what is two and two"
    logged = json.loads(log.read_text().splitlines()[0])
    assert logged["argv"] == ["-p", "--output-format", "stream-json", "--verbose", "--model", "opus"]
    assert logged["prompt_len"] == len("what is two and two")  # on stdin, never on the command line
    manifest = json.loads(run_file(home, run_id, "manifest.json"))
    assert manifest["metering"]["tokens"]["value"] == {"input_tokens": 11, "output_tokens": 7,
                                                        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 3}
    assert manifest["metering"]["cost_usd"]["value"] == 0.0123


def test_a_claude_result_with_is_error_fails_the_run(home, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "error")
    record = ended(home, submit("claude", "x")["data"]["run_id"])
    assert (record.status, record.reason_code) == ("failed", "provider_error")


def test_claude_without_a_result_event_fails_and_an_empty_answer_is_completed_empty(home, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "noresult")
    assert ended(home, submit("claude", "x")["data"]["run_id"]).status == "failed"
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "empty")
    assert ended(home, submit("claude", "x")["data"]["run_id"]).status == "completed_empty"


def test_a_long_prompt_reaches_claude_on_stdin(home, tmp_path, monkeypatch) -> None:
    log = tmp_path / "argv.jsonl"
    monkeypatch.setenv("FAKE_ARGV_LOG", str(log))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("word " * 30000)  # 150 KB: too long for one argv string
    record = ended(home, submit("--prompt-file", str(prompt), "claude")["data"]["run_id"])
    assert record.status == "completed"
    logged = json.loads(log.read_text().splitlines()[0])
    assert logged["argv"] == ["-p", "--output-format", "stream-json", "--verbose"] and logged["prompt_len"] == 150000


@pytest.mark.parametrize("model, argv", [
    ("codex/o3", ["exec", "--json", "--skip-git-repo-check", "--model", "o3", "-"]),
    ("gemini/gemini-pro", ["-p", "", "--output-format", "stream-json", "-m", "gemini-pro"]),
])
def test_codex_and_gemini_read_the_prompt_from_stdin(home, tmp_path, monkeypatch, model: str, argv: list) -> None:
    log = tmp_path / "argv.jsonl"
    monkeypatch.setenv("FAKE_ARGV_LOG", str(log))
    assert ended(home, submit(model, "what is two and two")["data"]["run_id"]).status == "completed"
    logged = json.loads(log.read_text().splitlines()[0])
    assert (logged["argv"], logged["prompt_len"]) == (argv, len("what is two and two"))


@pytest.mark.parametrize("model, answer", [("codex/o3", "codex(o3) says: hi"),
                                           ("gemini/gemini-pro", "gemini(gemini-pro) says: hi")])
def test_codex_and_gemini_answers_become_response_md(home, model: str, answer: str) -> None:
    run_id = submit(model, "hi")["data"]["run_id"]
    record = ended(home, run_id)
    assert record.status == "completed"
    assert run_file(home, run_id, "artifacts/response.md") == answer
    tokens = json.loads(run_file(home, run_id, "manifest.json"))["metering"]["tokens"]
    assert tokens["available"] is True and tokens["value"]["input_tokens"] > 0


@pytest.mark.parametrize("env", ["FAKE_CODEX_MODE", "FAKE_GEMINI_MODE"])
def test_codex_and_gemini_errors_fail_the_run(home, monkeypatch, env: str) -> None:
    monkeypatch.setenv(env, "error")
    model = "codex" if "CODEX" in env else "gemini"
    assert ended(home, submit(model, "hi")["data"]["run_id"]).status == "failed"


def test_a_fanout_runs_its_legs_in_parallel_inside_one_run(home) -> None:
    # every leg waits until all three have started: sequential legs would each see only themselves
    script = ('A="$LI_ARTIFACTS_DIR"; touch "$A/$LI_LEG_ID.start"; for i in $(seq 200); do '
              '[ "$(ls "$A"/*.start | wc -l)" -ge 3 ] && break; sleep 0.05; done; ls "$A"/*.start | wc -l')
    envelope = answer(["orchestrate", "fanout", "--detach", "--legs", "3", "sh", script])
    run_id = envelope["data"]["run_id"]
    record = ended(home, run_id)
    assert record.status == "completed" and record.kind == "fanout"
    for n in (1, 2, 3):
        assert run_file(home, run_id, f"artifacts/leg-{n}.md").strip() == "3"
    legs = json.loads(run_file(home, run_id, "manifest.json"))["legs"]
    assert [leg["id"] for leg in legs] == ["leg-1", "leg-2", "leg-3"]


def test_a_flow_passes_answers_downstream(home, tmp_path) -> None:
    spec = tmp_path / "flow.yaml"
    spec.write_text("name: demo\nsteps:\n  - id: first\n    prompt: echo alpha\n"
                    "  - id: second\n    depends_on: [first]\n    prompt: 'echo got {{steps.first}}'\n")
    envelope = answer(["orchestrate", "flow", "--detach", str(spec)])
    run_id = envelope["data"]["run_id"]
    record = ended(home, run_id)
    assert record.status == "completed" and record.label == "demo"
    assert run_file(home, run_id, "artifacts/step-second.md") == "got alpha\n"


def test_a_notify_argument_of_200_kib_is_refused_before_any_run_folder_exists(home) -> None:
    # In-process, so li's own exec cannot refuse it first: the check is li's, not the kernel's.
    envelope = submit("--notify", "true " + "n" * 200 * 1024, "sh", "true")
    assert envelope["ok"] is False and envelope["error"]["kind"] == "invalid_input", envelope
    assert envelope["error"]["detail"] == {"command": "notify command", "size": 200 * 1024 + 1, "limit": 128 * 1024}
    assert not os.path.exists(os.path.join(home, "runs")) or os.listdir(os.path.join(home, "runs")) == []


def test_a_250_kib_prompt_is_accepted_and_runs(home, tmp_path) -> None:
    prompt = tmp_path / "script.sh"
    prompt.write_text(": " + "x" * (250 * 1024 - 11) + "\necho ok\n")
    run_id = submit("--prompt-file", str(prompt), "sh")["data"]["run_id"]
    assert ended(home, run_id).status == "completed"
    assert run_file(home, run_id, "artifacts/response.md") == "ok\n"
