"""`li job reply` against the real Claude Code, Codex and Gemini CLIs.

A first run of the real CLI, in a worktree of its own, against the model stub; then `li job reply`
on it: li launches the same CLI with its own resume argv (its `resume` in domain/agents/)
and the session id the first run's stream carried. The real CLI accepting that argv and finding
the session is the proof: the reply ends succeeded with the stub's next answer, the conversation
the CLI sends the model carries the first turn, and the new run records `continues`.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.agent_clis import PROMPT, Agents, agents
from tests.model_stub import text
from tests.support import machine, run_li

__all__ = ["agents"]  # a fixture, used by name

pytestmark = pytest.mark.timeout(300)

CLIS = ("claude", "codex", "gemini")
FIRST = "First answer from the stub."
SECOND = "Second answer, resumed."
FOLLOW_UP = "And now a follow-up question."


def repository(agents: Agents) -> None:
    """The fixture's workspace made a git repository with one commit, as a person's would be."""
    env = {"GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p", "GIT_COMMITTER_EMAIL": "p@x",
           "PATH": "/usr/local/bin:/usr/bin:/bin"}
    (agents.workspace / "README").write_text("a repository\n")
    for argv in (("init", "-q", "-b", "main"), ("add", "README"), ("commit", "-qm", "init")):
        subprocess.run(["git", *argv], cwd=agents.workspace, env=env, check=True, capture_output=True)


@pytest.mark.parametrize("cli", CLIS)
def test_a_reply_resumes_the_real_clis_session_and_ends_with_its_answer(agents: Agents, cli: str) -> None:
    repository(agents)
    began = time.monotonic()
    first_id, env = agents.submit(cli, "--worktree", steps=(text(FIRST),))
    first = agents.finish(cli, first_id, env, began)
    assert (first.data["status"], first.data["outcome"]) == ("completed", "succeeded"), first.transcript
    session = first.data["session_id"]
    assert session, first.data
    asked_before = len(agents.stub.main_requests())

    agents.stub.script(text(SECOND))
    began = time.monotonic()
    replied = machine("job", "reply", first_id, FOLLOW_UP, home=agents.home, env=env).data
    reply_id = replied["run_id"]
    agents.started.append(reply_id)
    reply = agents.finish(cli, reply_id, env, began)

    # the real CLI took li's resume argv: the reply succeeded with the stub's next answer
    assert (reply.data["status"], reply.data["outcome"], reply.data["reason_code"]) == (
        "completed", "succeeded", None), reply.transcript
    assert reply.response is not None and reply.response.strip() == SECOND, reply.transcript
    assert reply.data["continues"] == first_id and reply.data["chain"] == [first_id, reply_id]
    assert reply.data["session_id"] == session  # the CLI went on in the same session
    assert reply.data["worktree"]["path"] == first.data["worktree"]["path"]
    # ... and it resumed the conversation: what it sent the model carries the first turn
    sent = [json.dumps(r.body) for r in agents.stub.main_requests()[asked_before:]]
    assert sent and all(PROMPT in body and FIRST in body and FOLLOW_UP in body for body in sent), sent[-1][:2000]
    person = run_li("job", "status", reply_id, home=agents.home, env=env)
    assert f"continues  {first_id}" in person.stdout, person.stdout
