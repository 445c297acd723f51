"""`li mcp` driven by the MCP SDK's own stdio client: the server is a consumer of the real `li`."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from lionrun.entrypoints.mcp_server import main
from tests.support import REPO, install_li, li_bin

FAKE_V2 = os.path.join(REPO, "tests", "fakes", "fake_li_v2.py")
VERBS = {
    "approvals",
    "approve",
    "deny",
    "submit_agent",
    "submit_flow",
    "submit_fanout",
    "status",
    "output",
    "list_runs",
    "kill",
    "wait",
    "prune",
    "diff",
    "reply",
    "rm",
    "apply",
}


def real_li(path: pathlib.Path) -> str:
    return install_li(path, f'exec {li_bin()} "$@"')


def v2_li(path: pathlib.Path) -> str:
    return install_li(path, f'exec {sys.executable} {FAKE_V2} "$@"')


def server(li_path: str, li_home: str) -> StdioServerParameters:
    """Our `li mcp --li PATH` (whatever `li` it drives), spawned by the SDK as an MCP host would."""
    env = {"LI_HOME": li_home, "PYTHONPATH": REPO}
    ours = os.path.join(os.path.dirname(sys.executable), "li")
    command, head = (
        (ours, ["mcp"])
        if os.path.exists(ours)
        else (sys.executable, ["-m", "lionrun.entrypoints.mcp_server"])
    )
    return StdioServerParameters(command=command, args=[*head, "--li", li_path], env=env, cwd=REPO)


def in_session(params: StdioServerParameters, body: Callable[[Client], Awaitable[None]]) -> None:
    async def session() -> None:
        with anyio.fail_after(120):
            async with Client(params, mode="legacy") as client:
                await body(client)

    anyio.run(session)


async def call(client: Client, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None, result
    return bool(result.is_error), result.structured_content


async def wait_until_settled(client: Client, run_id: str) -> dict[str, Any]:
    """What an agent does: call wait until the classification says there is nothing left to wait for."""
    for _ in range(20):
        failed, body = await call(client, "wait", run_ids=[run_id], max_wait=20, poll_interval=0.1)
        assert not failed, body
        if body["classification"]["settled"]:
            return body
    raise AssertionError(f"{run_id} never settled")


def test_the_server_lists_every_tool_with_guidance(tmp_path: pathlib.Path, li_home: str) -> None:
    async def body(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == VERBS | {"handshake"}
        assert "stopped_without_end" in (tools["wait"].description or "")
        assert "wait" in (tools["submit_agent"].description or "")
        for name in VERBS | {"handshake"}:  # every structured result is published as an output schema
            schema = tools[name].output_schema
            assert schema is not None, name
            assert set(schema["required"]) == {"surface", "data", "error", "classification"}, (name, schema)
        for name in ("submit_flow", "submit_fanout"):
            assert {"cwd", "timeout_seconds"} <= set(tools[name].input_schema["properties"]), name

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_a_session_submits_an_sh_run_waits_for_it_and_reads_its_artifact(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    async def body(client: Client) -> None:
        prompt = 'printf "hello from lionrun" > "$LI_ARTIFACTS_DIR/hello.txt"; echo done'
        failed, submitted = await call(
            client, "submit_agent", prompt=prompt, model="sh", label="e2e"
        )
        assert not failed and submitted["surface"] == "ok", submitted
        run_id = submitted["data"]["run_id"]
        assert submitted["classification"]["run"]["branch"] == "not_ended"

        waited = await wait_until_settled(client, run_id)
        assert waited["classification"]["runs"][0]["branch"] == "succeeded"
        assert waited["data"]["runs"][0]["status"] == waited["classification"]["runs"][0]["status"]

        failed, output = await call(client, "output", run_id=run_id, artifact="hello.txt")
        assert not failed, output
        artifact = output["data"]["artifact"]  # in the result's data, in one place
        assert artifact["text"] == "hello from lionrun" and artifact["sha256_verified"]
        assert "artifact" not in output["classification"]
        assert output["classification"]["evidence"]["artifacts"]["evidence"] == "present"
        listed = {a["name"]: a for a in output["data"]["artifacts"]["value"]}
        digest = hashlib.sha256(pathlib.Path(listed["hello.txt"]["path"]).read_bytes()).hexdigest()
        assert digest == listed["hello.txt"]["sha256"]

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_status_list_and_kill_answer_through_the_client(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    async def body(client: Client) -> None:
        _, submitted = await call(client, "submit_agent", prompt="sleep 30", model="sh")
        run_id = submitted["data"]["run_id"]
        failed, status = await call(client, "status", run_id=run_id)
        assert not failed and status["classification"]["run"]["status"] == status["data"]["status"]
        _, listed = await call(client, "list_runs", limit=5)
        assert run_id in [row["run_id"] for row in listed["classification"]["runs"]]
        failed, killed = await call(client, "kill", run_id=run_id)
        assert not failed and killed["data"]["action"] in (
            "signalled",
            "already_terminal",
            "no_process",
        )
        waited = await wait_until_settled(client, run_id)
        assert waited["classification"]["runs"][0]["branch"] not in ("succeeded", "not_ended")

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_an_unknown_run_is_a_refusal_not_a_surface_fault(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    async def body(client: Client) -> None:
        failed, status = await call(client, "status", run_id="20200101T000000-000000")
        assert failed and status["surface"] == "refused" and status["error"]["kind"] == "not_found"
        assert status["classification"]["surface_fault"] is False

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_flow_and_fanout_take_cwd_and_timeout_and_prune_removes_ended_runs(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    spec = tmp_path / "flow.yaml"
    spec.write_text("steps:\n  - id: here\n    model: sh\n    prompt: pwd\n")

    async def body(client: Client) -> None:
        failed, flow = await call(client, "submit_flow", spec_path=str(spec), cwd=str(workdir), timeout_seconds=30)
        assert not failed, flow
        # the same flow given as its text (on li's stdin); the two ways at once, or neither, refused
        failed, text = await call(client, "submit_flow", spec=spec.read_text(), cwd=str(workdir))
        assert not failed, text
        await wait_until_settled(client, text["data"]["run_id"])
        _, by_text = await call(client, "output", run_id=text["data"]["run_id"])
        assert str(workdir) in by_text["data"]["console"]["value"]
        for both_or_none in ({"spec": "steps: []", "spec_path": str(spec)}, {}):
            failed, refusal = await call(client, "submit_flow", **both_or_none)
            assert failed and refusal["error"]["kind"] == "invalid_input", refusal
        failed, fanout = await call(client, "submit_fanout", prompt="pwd", model="sh", legs=2, cwd=str(workdir),
                                    timeout_seconds=0.5)
        assert not failed, fanout
        for submitted in (flow, fanout):
            await wait_until_settled(client, submitted["data"]["run_id"])
        _, status = await call(client, "status", run_id=flow["data"]["run_id"])
        assert status["data"]["status"] == "completed"
        _, output = await call(client, "output", run_id=flow["data"]["run_id"])
        assert str(workdir) in output["data"]["console"]["value"]
        failed, dry = await call(client, "prune", older_than_days=0, dry_run=True)
        assert not failed and dry["data"]["dry_run"] is True, dry
        assert set(dry["data"]["removed"]) == {flow["data"]["run_id"], fanout["data"]["run_id"], text["data"]["run_id"]}
        failed, pruned = await call(client, "prune", older_than_days=0)
        assert not failed and set(pruned["data"]["removed"]) == set(dry["data"]["removed"])
        _, listed = await call(client, "list_runs")
        assert listed["data"]["runs"] == []

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_a_v2_li_swapped_in_mid_session_degrades_the_surface(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    li_path = real_li(tmp_path / "li")

    async def body(client: Client) -> None:
        _, submitted = await call(client, "submit_agent", prompt="echo hi", model="sh")
        run_id = submitted["data"]["run_id"]
        v2_li(tmp_path / "li")
        failed, status = await call(client, "status", run_id=run_id)
        assert failed and status["surface"] == "degraded" and status["data"] is None
        assert status["classification"]["contract_version"] == 2
        real_li(tmp_path / "li")
        failed, again = await call(client, "status", run_id=run_id)
        assert failed and again["surface"] == "degraded", "trust returns only through a handshake"
        failed, hello = await call(client, "handshake")
        assert not failed and hello["classification"]["registered"] is True
        failed, status = await call(client, "status", run_id=run_id)
        assert not failed and status["data"]["run_id"] == run_id

    in_session(server(li_path, li_home), body)


def test_a_v2_li_at_start_up_registers_no_verbs_until_a_handshake_succeeds(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    async def body(client: Client) -> None:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        assert tools == ["handshake"]
        failed, hello = await call(client, "handshake")
        assert failed and hello["surface"] == "degraded" and hello["data"] is None
        assert hello["classification"]["registered"] is False
        real_li(tmp_path / "li")
        failed, hello = await call(client, "handshake")
        assert not failed and hello["classification"]["registered"] is True
        tools = [tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools]
        assert set(tools) == VERBS | {"handshake"}

    in_session(server(v2_li(tmp_path / "li"), li_home), body)


def test_the_server_will_not_start_without_an_executable_li(tmp_path: pathlib.Path) -> None:
    assert main(["--li", str(tmp_path / "missing" / "li")]) == 78


def test_the_output_tool_never_serves_a_link_or_a_fifo_as_artifact_text(tmp_path: pathlib.Path) -> None:
    from lionrun.adapters.contract_client import Reply, Verdict
    from lionrun.entrypoints.mcp_server import artifact_text

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # opening it for reading would block forever
    rows = [{"name": "etc-link", "path": "/etc/passwd", "type": "symlink", "link": "/etc/passwd", "size": 11,
             "sha256": None},
            {"name": "pipe", "path": str(fifo), "type": "fifo", "link": None, "size": 0, "sha256": None}]
    reply = Reply(Verdict.OK, data={"artifacts": {"available": True, "value": rows, "reason_code": None,
                                                  "detail": None}})
    for name in ("etc-link", "pipe"):
        served = artifact_text(reply, name)["artifact"]
        assert served["text"] is None and "not a regular file" in served["says"]


def test_an_artifact_swapped_after_it_was_listed_is_not_served(tmp_path: pathlib.Path) -> None:
    """A listed file the work replaced by a link (or rewrote) since li digested it: no byte of it is served."""
    import hashlib

    from lionrun.adapters.contract_client import Reply, Verdict
    from lionrun.entrypoints.mcp_server import artifact_text

    outside, listed, rewritten = tmp_path / "outside", tmp_path / "answer.md", tmp_path / "other.md"
    outside.write_text("CANARY outside the store")
    listed.write_text("the answer li listed")
    digest = hashlib.sha256(b"the answer li listed").hexdigest()
    listed.unlink()
    listed.symlink_to(outside)  # swapped for a link after the listing
    rewritten.write_text("CANARY rewritten")
    rows = [{"name": name, "path": str(path), "type": "file", "link": None, "size": 20, "sha256": digest}
            for name, path in (("answer.md", listed), ("other.md", rewritten))]
    reply = Reply(Verdict.OK, data={"artifacts": {"available": True, "value": rows, "reason_code": None,
                                                  "detail": None}})
    for name in ("answer.md", "other.md"):
        served = artifact_text(reply, name)["artifact"]
        assert served["text"] is None and "CANARY" not in json.dumps(served), served


# --- found by an adversarial review of the real li; each pins one fixed defect ---------------


def test_li_mcp_takes_its_documented_options_and_drives_the_li_that_started_it(li_home: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LI_BIN"}
    env.update(LI_HOME=li_home, PATH="/usr/bin:/bin")  # no li on PATH: it must use its own path
    hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    proc = subprocess.Popen([li_bin(), "mcp", "--max-attempts", "3", "--backoff", "0.5", "--backoff-max", "2"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        proc.stdin.write(hello + "\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        reply = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    assert reply["id"] == 1 and "result" in reply, reply


def test_the_server_reports_lis_version(tmp_path: pathlib.Path, li_home: str) -> None:
    """Server_info.version was ''."""
    from lionrun.entrypoints.version import version

    async def body(client: Client) -> None:
        assert client.server_info.name == "lionrun"
        assert client.server_info.version == version() != ""

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_li_mcp_at_a_terminal_says_in_one_line_what_it_is(li_home: str) -> None:
    """At a terminal `li mcp` swallowed input silently."""
    import pexpect

    child = pexpect.spawn(li_bin(), ["mcp"], env={**os.environ, "LI_HOME": li_home}, timeout=30, encoding="utf-8")
    child.expect("li mcp: speaking MCP")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()


def test_a_worktree_run_through_mcp_is_diffed_and_an_sh_run_cannot_be_replied_to(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p",
           "GIT_COMMITTER_EMAIL": "p@x"}
    (repo / "a.txt").write_text("one\n")
    for args in (["init", "-q"], ["add", "a.txt"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)

    async def body(client: Client) -> None:
        failed, submitted = await call(client, "submit_agent", prompt="echo two >> a.txt", model="sh",
                                       cwd=str(repo), worktree=True, setup="true")
        assert not failed, submitted
        run_id = submitted["data"]["run_id"]
        await wait_until_settled(client, run_id)
        failed, diff = await call(client, "diff", run_id=run_id)
        assert not failed, diff
        assert diff["data"]["patch"]["available"] and "+two" in diff["data"]["patch"]["value"]
        assert diff["data"]["files"]["value"] == [{"path": "a.txt", "insertions": 1, "deletions": 0}]
        # `leg` reaches li: a run of one worktree has no legs to name, and li says so
        failed, no_leg = await call(client, "diff", run_id=run_id, leg="leg-1")
        assert failed and no_leg["error"]["kind"] == "invalid_input" and "leg" in no_leg["error"]["message"], no_leg
        failed, refused = await call(client, "reply", run_id=run_id, prompt="more")
        assert failed and refused["error"]["kind"] == "invalid_input" and "sh run" in refused["error"]["message"]

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_tool_arguments_pydantic_refuses_are_one_line_in_lis_words(tmp_path: pathlib.Path, li_home: str) -> None:
    """The SDK checks each tool's arguments with pydantic; li says what is wrong in one line,
    `refused` / `invalid_input` like any refusal of li's, not pydantic's multi-line report."""

    async def body(client: Client) -> None:
        failed, refused = await call(client, "wait", run_ids=["20200101T000000-000000"], max_wait="soon")
        assert failed and refused["surface"] == "refused" and refused["error"]["kind"] == "invalid_input"
        assert refused["error"]["message"] == "wait's arguments: `max_wait` must be a number"
        assert refused["classification"]["surface_fault"] is False
        failed, refused = await call(client, "status")
        assert failed and refused["error"]["message"] == "status's arguments: `run_id` is missing"
        failed, refused = await call(client, "submit_agent", prompt=["not", "text"], model="sh", label=3)
        assert "\n" not in refused["error"]["message"] and "(and 1 more problem)" in refused["error"]["message"]

    in_session(server(real_li(tmp_path / "li"), li_home), body)


# --- MCP an agent can use without guessing ------------------------------------


UNKNOWN_ID = "20200101T000000-000000"
FAKES_BIN = os.path.join(REPO, "tests", "fakes", "bin")


async def settled_run(client: Client, prompt: str) -> str:
    """Submit an sh run and wait for its end; its run id."""
    failed, submitted = await call(client, "submit_agent", prompt=prompt, model="sh")
    assert not failed, submitted
    run_id = str(submitted["data"]["run_id"])
    await wait_until_settled(client, run_id)
    return run_id


def test_an_unknown_or_unservable_artifact_is_an_error_not_null_text(tmp_path: pathlib.Path, li_home: str) -> None:
    """The artifact asked for and not served is an error result with a kind, never `text: null`."""

    async def body(client: Client) -> None:
        run_id = await settled_run(client, 'printf hi > "$LI_ARTIFACTS_DIR/hello.txt"; '
                                           'ln -s /etc/passwd "$LI_ARTIFACTS_DIR/link"')
        failed, missing = await call(client, "output", run_id=run_id, artifact="nope.txt")
        assert failed and missing["surface"] == "refused" and missing["data"] is None, missing
        assert missing["error"]["kind"] == "not_found" and "hello.txt" in missing["error"]["message"]
        assert missing["error"]["detail"] == {"run_id": run_id, "artifact": "nope.txt"}
        assert missing["classification"]["surface_fault"] is False
        failed, link = await call(client, "output", run_id=run_id, artifact="link")
        assert failed and link["error"]["kind"] == "invalid_input", link
        assert "not a regular file" in link["error"]["message"] and "root:" not in json.dumps(link)

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_each_result_is_its_whole_answer_as_json_text_and_the_same_structured_content(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    """Item 2 (supersedes issue 27's one-line summary): a host that hands the model only
    text saw no console, exit code or artifact. The text is now the whole answer as JSON, equal to
    the structured content; the console tail is bounded by `tail_chars` and says it was cut."""

    async def body(client: Client) -> None:
        run_id = await settled_run(client, "seq -f 'line-%g' 5000")
        result = await client.call_tool("output", {"run_id": run_id, "tail_chars": 30})
        assert not result.is_error and result.structured_content is not None
        assert len(result.content) == 1
        text = json.loads(result.content[0].text)  # type: ignore[union-attr]
        assert text == result.structured_content
        console = text["data"]["console"]
        assert console["value"].endswith("line-5000\n") and len(console["value"]) <= 30
        assert console["truncated"] is True and text["classification"]["evidence"]["console"]["truncated"]
        artifacts = [a["name"] for a in text["data"]["artifacts"]["value"]]
        assert artifacts and text["classification"]["summary"].startswith(f"ok: run {run_id}: console present")
        default = await client.call_tool("output", {"run_id": run_id})  # the stated default tail
        assert len(default.structured_content["data"]["console"]["value"]) == 8000  # type: ignore[index]
        _, status = await call(client, "status", run_id=run_id)
        assert status["data"]["exit_code"] == 0 and status["classification"]["run"]["branch"] == "succeeded"
        refused = await client.call_tool("status", {"run_id": UNKNOWN_ID})
        said = json.loads(refused.content[0].text)  # type: ignore[union-attr]
        assert refused.is_error and said["error"]["kind"] == "not_found" and said == refused.structured_content
        waited = await client.call_tool("wait", {"run_ids": [run_id], "max_wait": 0})
        assert json.loads(waited.content[0].text)["classification"]["summary"].startswith(  # type: ignore[union-attr]
            f"ok: settled: {run_id} succeeded")

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_a_zero_console_tail_is_refused_never_read_as_an_empty_console(tmp_path: pathlib.Path, li_home: str) -> None:
    """`tail_chars: 0` read the console of a run that printed as `none`: a tail of nothing says
    nothing of the console, so it is refused in one line (and the schema says at least 1)."""

    async def body(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert '"minimum": 1' in json.dumps(tools["output"].input_schema["properties"]["tail_chars"])
        run_id = await settled_run(client, "echo printed")
        failed, refused = await call(client, "output", run_id=run_id, tail_chars=0)
        assert failed and refused["error"]["kind"] == "invalid_input", refused
        assert refused["error"]["message"] == "output's arguments: `tail_chars` must be at least 1"
        failed, one = await call(client, "output", run_id=run_id, tail_chars=1)
        assert not failed and one["classification"]["evidence"]["console"]["evidence"] == "present", one

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_submit_agent_takes_permission_mode_provider_args_and_notify(tmp_path: pathlib.Path, li_home: str) -> None:
    """`li agent`'s --permission-mode, --provider-arg and --notify, in the CLI's vocabulary."""
    li_path = install_li(tmp_path / "li", f'PATH={FAKES_BIN}:$PATH exec {li_bin()} "$@"')  # the fake claude
    noticed = tmp_path / "noticed"

    async def body(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        schema = json.dumps(tools["submit_agent"].input_schema["properties"]["permission_mode"])
        assert all(mode in schema for mode in ('"read-only"', '"edits"', '"full"')), schema
        failed, bad = await call(client, "submit_agent", prompt="hi", model="claude", permission_mode="yolo")
        assert failed and bad["error"]["kind"] == "invalid_input", bad
        assert bad["error"]["message"] == ("submit_agent's arguments: `permission_mode` must be "
                                           "'read-only', 'edits', 'full' or 'ask'")
        failed, sh = await call(client, "submit_agent", prompt="true", model="sh", permission_mode="edits")
        assert failed and sh["error"]["kind"] == "invalid_input" and "agent CLIs" in sh["error"]["message"], sh
        assert "\n" not in sh["error"]["message"]
        failed, submitted = await call(client, "submit_agent", prompt="say hi", model="claude",
                                       permission_mode="edits", provider_args=["--max-turns", "3"],
                                       notify=f"touch {noticed}")
        assert not failed, submitted
        run_id = submitted["data"]["run_id"]
        await wait_until_settled(client, run_id)
        _, status = await call(client, "status", run_id=run_id)
        assert status["data"]["agents"]["value"]["claude"] == {"permission_mode": "edits",
                                                               "provider_args": ["--max-turns", "3"]}, status
        with anyio.fail_after(60):  # the notice is sent after the end is recorded
            while not noticed.exists():
                await anyio.sleep(0.1)

    in_session(server(li_path, li_home), body)


def test_a_wait_on_an_unknown_id_is_an_error_for_that_id_and_never_settled(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    """`wait` on an unknown id answered `settled: true`, then `isError: false` unlike every
    other tool: now the one rule for bad ids, `isError` with error.kind `not_found`
    naming them, while what was observed of the other ids is still reported."""

    async def body(client: Client) -> None:
        run_id = await settled_run(client, "true")
        for ids in ([UNKNOWN_ID], [run_id, UNKNOWN_ID]):
            result = await client.call_tool("wait", {"run_ids": ids, "max_wait": 1, "poll_interval": 0.1})
            waited = result.structured_content
            assert waited is not None and waited["surface"] == "ok" and result.is_error, waited
            assert waited["error"]["kind"] == "not_found" and waited["error"]["detail"] == {"run_ids": {UNKNOWN_ID: "not_found"}}
            classification = waited["classification"]
            assert classification["settled"] is False, classification
            assert classification["errors"][UNKNOWN_ID]["kind"] == "not_found"
            assert classification["waiting_on"] == [] and classification["abandoned"] == []
            said = classification["summary"]
            assert said.startswith("ok: not settled") and f"errors: {UNKNOWN_ID} not_found" in said, said
        assert [r["branch"] for r in classification["runs"]] == ["succeeded", "unobserved"]
        for tool in ("status", "output", "kill", "diff"):
            failed, answer = await call(client, tool, run_id=UNKNOWN_ID)
            assert failed and answer["error"]["kind"] == "not_found", (tool, answer)

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_the_docs_list_every_tool_and_that_the_host_must_set_li_home() -> None:
    """docs/consumer-client.md's `li mcp` section and the wire contract's consumer section list every
    tool (`diff`, `reply` and `prune` were missing from one or the other), one table row each, and
    show `LI_HOME` in the host's `env`: the SDK's stdio client passes only a minimal environment."""
    sections = {"consumer-client.md": ("## `li mcp`", None),
                "wire-contract.md": ("## Consumers: where each value lives", "## Terminal notices")}
    for doc, (head, tail) in sections.items():
        text = pathlib.Path(REPO, "docs", doc).read_text(encoding="utf-8")
        section = text[text.index(head): text.index(tail) if tail else None]
        rows = {line.split("`")[1] for line in section.splitlines() if line.startswith("| `")}
        assert VERBS | {"handshake"} <= rows, (doc, sorted(VERBS | {"handshake"} - rows))
        assert '"env": {"LI_HOME"' in section and "minimal environment" in section, doc


def test_a_run_submitted_through_mcp_waits_after_another_and_ends_dependency_failed(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    """Issue 43: `after` and `priority` on the submit tools are li's --after and --priority."""

    async def body(client: Client) -> None:
        _, first = await call(client, "submit_agent", prompt="sleep 1; exit 3", model="sh")
        first_id = first["data"]["run_id"]
        failed, waiting = await call(client, "submit_agent", prompt="touch never", model="sh",
                                     after=[f"{first_id}:ok"], priority=5)
        assert not failed and waiting["data"]["status"] == "waiting", waiting
        failed, fanout = await call(client, "submit_fanout", prompt="true", model="sh", legs=1,
                                    after=[f"{first_id}:fail"])
        assert not failed and fanout["data"]["status"] == "waiting", fanout
        ended = await wait_until_settled(client, waiting["data"]["run_id"])
        row = ended["data"]["runs"][0]
        assert (row["outcome"], row["reason_code"]) == ("cancelled", "dependency_failed")
        ran = await wait_until_settled(client, fanout["data"]["run_id"])
        assert ran["data"]["runs"][0]["outcome"] == "succeeded"
        failed, refused = await call(client, "submit_agent", prompt="true", model="sh",
                                     after=["20200101T000000-000000"])
        assert failed and refused["error"]["kind"] == "invalid_input"

    in_session(server(real_li(tmp_path / "li"), li_home), body)
