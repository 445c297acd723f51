"""Issue 39: `--idempotency-key KEY` — one run per key for as long as that run is in the store,
on the filesystem store and on PostgreSQL: a second submit answers the first run's handle (nothing
new starts), another request under the key is `conflict`, concurrent submits make one run, and a
submit whose stdout refused the envelope (exit 74) is recovered by submitting again."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from tests.support import li_bin, machine, run_li

WORK = "sleep 0.3; echo done"


@pytest.fixture(params=["filesystem", "postgresql"])
def store(request: pytest.FixtureRequest, li_home: str) -> dict[str, Any]:
    """`home` and the `env` that points li at one store of each kind."""
    env: dict[str, str] = {}
    if request.param == "postgresql":
        env = {"LI_STORE": request.getfixturevalue("pg_dsn")}
        assert machine("store", "init", home=li_home, env=env).data["store"] == "postgresql"
    return {"home": li_home, "env": env}


def li(store: dict[str, Any], *argv: str) -> dict[str, Any]:
    envelope: dict[str, Any] = machine(*argv, home=store["home"], env=store["env"]).envelope
    return envelope


def run_ids(store: dict[str, Any]) -> list[str]:
    return [row["run_id"] for row in li(store, "job", "list", "--limit", "1000")["data"]["runs"]]


def test_a_second_submit_with_the_key_answers_the_first_run_and_starts_nothing(store: dict[str, Any]) -> None:
    first = li(store, "agent", "--detach", "--idempotency-key", "job-1", "sh", WORK)["data"]
    again = li(store, "agent", "--detach", "--idempotency-key", "job-1", "sh", WORK)["data"]
    assert first["replayed"] is False and again["replayed"] is True
    assert again["run_id"] == first["run_id"] and again["pid"] == first["pid"] and again["log"] == first["log"]
    assert run_ids(store) == [first["run_id"]]
    li(store, "job", "wait", first["run_id"], "--max-wait", "30")
    ended = li(store, "agent", "--detach", "--idempotency-key", "job-1", "sh", WORK)["data"]
    assert (ended["run_id"], ended["terminal"], ended["outcome"], ended["status"]) == (
        first["run_id"], True, "succeeded", "completed")  # the run as recorded now, never a stale handle
    assert run_ids(store) == [first["run_id"]]


def test_another_request_under_the_key_is_a_conflict_and_starts_nothing(store: dict[str, Any]) -> None:
    first = li(store, "agent", "--detach", "--idempotency-key", "job-2", "sh", WORK)["data"]
    for other in (["sh", "echo another"], ["--label", "x", "sh", WORK], ["--timeout", "60", "sh", WORK]):
        refused = li(store, "agent", "--detach", "--idempotency-key", "job-2", *other)
        assert refused["ok"] is False and refused["error"]["kind"] == "conflict", refused
        assert refused["error"]["detail"]["run_id"] == first["run_id"]
    fanout = li(store, "orchestrate", "fanout", "--detach", "--idempotency-key", "job-2", "sh", WORK, "--legs", "2")
    assert fanout["error"]["kind"] == "conflict"
    assert run_ids(store) == [first["run_id"]]


def test_concurrent_submits_with_one_key_make_one_run(store: dict[str, Any]) -> None:
    env = {**os.environ, "LI_HOME": store["home"], **store["env"]}
    argv = [li_bin(), "agent", "--machine", "--detach", "--idempotency-key", "race", "sh", WORK]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              env=env, text=True) for _ in range(6)]
    answers = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        answers.append(json.loads(out)["data"])
    assert len({a["run_id"] for a in answers}) == 1, answers
    assert sorted(a["replayed"] for a in answers) == [False] + [True] * 5
    assert run_ids(store) == [answers[0]["run_id"]]


def test_a_submit_answered_74_is_recovered_by_submitting_again_with_the_key(store: dict[str, Any]) -> None:
    env = {**os.environ, "LI_HOME": store["home"], **store["env"]}
    argv = [li_bin(), "agent", "--machine", "--detach", "--idempotency-key", "lost", "sh", WORK]
    with open("/dev/full", "w") as full:  # stdout refuses the envelope at the end (ENOSPC)
        lost = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, text=True,
                              timeout=60)
    assert lost.returncode == 74, lost.stderr
    started = run_ids(store)
    assert len(started) == 1  # the request was handled: a run exists whose handle nobody received
    again = li(store, "agent", "--detach", "--idempotency-key", "lost", "sh", WORK)["data"]
    assert again["run_id"] == started[0] and again["replayed"] is True
    assert run_ids(store) == started


def test_stdout_closed_at_start_submits_nothing_so_the_key_then_starts_the_run(store: dict[str, Any]) -> None:
    env = {**os.environ, "LI_HOME": store["home"], **store["env"]}
    argv = [li_bin(), "agent", "--machine", "--detach", "--idempotency-key", "closed", "sh", WORK]
    closed = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env=env, text=True, timeout=60, preexec_fn=lambda: os.close(1))
    assert closed.returncode == 74, closed.stderr
    again = li(store, "agent", "--detach", "--idempotency-key", "closed", "sh", WORK)["data"]
    assert again["replayed"] is False and run_ids(store) == [again["run_id"]]


def test_a_key_names_its_run_only_while_the_run_is_in_the_store(store: dict[str, Any]) -> None:
    first = li(store, "agent", "--detach", "--idempotency-key", "job-3", "sh", "true")["data"]
    li(store, "job", "wait", first["run_id"], "--max-wait", "30")
    assert li(store, "job", "rm", first["run_id"])["data"]["removed"] == [first["run_id"]]
    second = li(store, "agent", "--detach", "--idempotency-key", "job-3", "sh", "echo a new request")["data"]
    assert second["run_id"] != first["run_id"] and second["replayed"] is False


def test_every_submit_verb_takes_the_key(store: dict[str, Any], tmp_path: Any) -> None:
    fanout = ["orchestrate", "fanout", "--detach", "--idempotency-key", "f", "sh", "true", "--legs", "2"]
    assert li(store, *fanout)["data"]["run_id"] == li(store, *fanout)["data"]["run_id"]
    spec = tmp_path / "flow.yaml"
    spec.write_text("name: f\nsteps:\n  - id: one\n    model: sh\n    prompt: 'true'\n")
    flow = ["orchestrate", "flow", "--detach", "--idempotency-key", "fl", str(spec)]
    assert li(store, *flow)["data"]["run_id"] == li(store, *flow)["data"]["run_id"]
    base = li(store, "agent", "--detach", "sh", "true")["data"]["run_id"]
    li(store, "job", "wait", base, "--max-wait", "30")
    retry = ["job", "retry", base, "--detach", "--idempotency-key", "r"]
    first, again = li(store, *retry)["data"], li(store, *retry)["data"]
    assert first["run_id"] == again["run_id"] != base and again["replayed"] is True
    assert "--idempotency-key" in run_li("job", "reply", "--help", home=store["home"]).stdout


@pytest.mark.parametrize("key", ["", "x" * 257, "a\nb"])
def test_a_bad_key_is_invalid_input_and_leaves_no_trace(li_home: str, key: str) -> None:
    refused = machine("agent", "--detach", "--idempotency-key", key, "sh", "true", home=li_home).envelope
    assert refused["error"]["kind"] == "invalid_input" and refused["error"]["detail"]["argument"] == "--idempotency-key"
    assert machine("job", "list", home=li_home).data["runs"] == []
