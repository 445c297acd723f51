"""Issue 38: `li mcp` an agent can use without guessing, through the official MCP SDK client: strict
arguments, the answer in the text, waits that report progress and stop, safety hints, no freeze."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

import anyio
import psutil
from mcp import Client

from tests.e2e.test_mcp_server import call, in_session, real_li, server, settled_run
from tests.support import REPO, li_bin

READS = {"handshake", "status", "output", "list_runs", "wait", "diff", "approvals"}
DESTRUCTIVE = {"kill", "prune", "rm", "apply"}


def wait_children(run_id: str) -> list[psutil.Process]:
    """The `li job wait` processes watching `run_id` (the server's children for a wait call)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        line = proc.info.get("cmdline") or []
        if "wait" in line and run_id in line and "job" in line:
            found.append(proc)
    return found


def gone(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_every_tool_closes_its_arguments_marks_the_required_ones_and_carries_safety_hints(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    async def body(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name, tool in tools.items():
            schema = tool.input_schema
            assert schema["additionalProperties"] is False and "required" in schema, name
            hints = tool.annotations
            assert hints is not None and hints.read_only_hint is (name in READS), name
            if name in DESTRUCTIVE:
                assert hints.destructive_hint is True and hints.read_only_hint is False, name
            elif name not in READS:
                assert hints.destructive_hint is False, name
            # each tool's data follows its verb's published schema, from the installed package
            data = tool.output_schema["properties"]["data"]["anyOf"][0]["$ref"]  # type: ignore[index]
            assert data.startswith("#/$defs/") and data[len("#/$defs/"):] in tool.output_schema["$defs"], name
        assert tools["submit_agent"].input_schema["required"] == ["prompt", "model"]
        assert "shell script" in tools["submit_agent"].input_schema["properties"]["model"]["description"]
        assert tools["prune"].input_schema["required"] == ["older_than_days"]
        assert tools["kill"].annotations.idempotent_hint is True  # type: ignore[union-attr]
        assert tools["status"].output_schema["$defs"]["StatusData"]["title"] == "StatusData"  # type: ignore[index]

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_a_misspelt_argument_or_a_missing_model_is_refused_and_nothing_runs(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    """A misspelt `timeout` left a run with no limit; `provider` instead of `model` ran the prompt as sh."""

    async def body(client: Client) -> None:
        failed, refused = await call(client, "submit_agent", prompt="echo hi", model="sh", timeout=5)
        assert failed and refused["error"]["kind"] == "invalid_input", refused
        message = refused["error"]["message"]
        assert "`timeout` is not an argument of submit_agent (did you mean `timeout_seconds`?)" in message
        assert "it takes: prompt, model, label" in message
        assert refused["error"]["detail"]["nearest"] == {"timeout": "timeout_seconds"}
        failed, refused = await call(client, "submit_agent", provider="claude", prompt="rm -rf ~/x")
        assert failed and "`provider` is not an argument of submit_agent (did you mean `model`?)" in \
            refused["error"]["message"], refused
        failed, refused = await call(client, "submit_agent", prompt="echo hi")
        assert failed and refused["error"]["message"] == "submit_agent's arguments: `model` is missing", refused
        failed, refused = await call(client, "submit_fanout", prompt="echo hi", legs=2)
        assert failed and "`model`" in refused["error"]["message"] and "`models`" in refused["error"]["message"]
        _, listed = await call(client, "list_runs")
        assert listed["data"]["runs"] == [], "a refused submit ran nothing"
        # li's own refusal speaks the tool's argument names, not the CLI's flags
        failed, refused = await call(client, "submit_agent", prompt="true", model="sh", timeout_seconds=10**7)
        assert failed and refused["error"]["message"].startswith("`timeout_seconds` must be more than 0 and at most"), refused
        assert "--timeout" not in json.dumps(refused)
        failed, refused = await call(client, "submit_agent", prompt="true", model="sh", permission_mode="edits")
        assert failed and refused["error"]["message"].startswith("`permission_mode` applies to agent CLIs"), refused
        # prune with no scope removes nothing: refused
        failed, refused = await call(client, "prune")
        assert failed and refused["error"]["message"] == "prune's arguments: `older_than_days` is missing"

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_a_text_only_host_reads_the_console_exit_code_and_artifacts(tmp_path: pathlib.Path, li_home: str) -> None:
    async def body(client: Client) -> None:
        run_id = await settled_run(client, 'echo from-the-console; printf x > "$LI_ARTIFACTS_DIR/made.txt"; exit 3')
        for tool in ("output", "status"):
            result = await client.call_tool(tool, {"run_id": run_id})
            text = result.content[0].text  # type: ignore[union-attr]
            read = json.loads(text)  # all a text-only host hands its model
            if tool == "output":
                assert "from-the-console" in read["data"]["console"]["value"]
                assert "made.txt" in {a["name"] for a in read["data"]["artifacts"]["value"]}
            else:
                assert read["data"]["exit_code"] == 3 and read["classification"]["run"]["branch"] == "failed"

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_a_cancelled_wait_or_the_servers_exit_kills_its_li_child_at_once(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    children: list[psutil.Process] = []

    async def body(client: Client) -> None:
        failed, submitted = await call(client, "submit_agent", prompt="sleep 120", model="sh")
        run_id = submitted["data"]["run_id"]
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "wait", {"run_ids": [run_id], "max_wait": 60})
            watching = await child_of(run_id)
            group.cancel_scope.cancel()  # the SDK sends notifications/cancelled for the call
        began = time.monotonic()
        while not gone(watching) and time.monotonic() - began < 1.0:
            await anyio.sleep(0.02)
        assert gone(watching), "the cancelled wait's li child outlived the cancel by 1 s"
        # the server still answers, and a wait in flight when the server exits dies with it
        _, status = await call(client, "status", run_id=run_id)
        assert status["classification"]["run"]["branch"] == "not_ended"
        client_side = anyio.create_task_group()
        await client_side.__aenter__()
        client_side.start_soon(client.call_tool, "wait", {"run_ids": [run_id], "max_wait": 60})
        children.append(await child_of(run_id))
        client_side.cancel_scope.cancel()
        await client_side.__aexit__(None, None, None)
        await call(client, "kill", run_id=run_id)

    in_session(server(real_li(tmp_path / "li"), li_home), body)
    assert children and all(gone(c) for c in children), "a wait's li child outlived the server"


async def child_of(run_id: str) -> psutil.Process:
    with anyio.fail_after(30):
        while True:
            found = wait_children(run_id)
            if found:
                return found[0]
            await anyio.sleep(0.05)


def test_a_wait_killed_server_takes_its_child_with_it(tmp_path: pathlib.Path, li_home: str) -> None:
    """SIGKILL leaves no `finally` to run: the child dies by its parent-death signal."""
    li = real_li(tmp_path / "li")
    env = {**os.environ, "LI_HOME": li_home, "PYTHONPATH": REPO}
    proc = subprocess.Popen([li_bin(), "mcp", "--li", li], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        def send(message: dict[str, Any]) -> dict[str, Any] | None:
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
            return json.loads(proc.stdout.readline()) if "id" in message else None  # type: ignore[union-attr]

        send({"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                           "clientInfo": {"name": "t", "version": "1"}}})
        send({"method": "notifications/initialized"})
        submitted = send({"id": 2, "method": "tools/call", "params": {"name": "submit_agent", "arguments": {
            "prompt": "sleep 120", "model": "sh"}}})
        run_id = submitted["result"]["structuredContent"]["data"]["run_id"]  # type: ignore[index]
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {  # type: ignore[union-attr]
            "name": "wait", "arguments": {"run_ids": [run_id], "max_wait": 60}}}) + "\n")
        proc.stdin.flush()  # type: ignore[union-attr]
        child = anyio.run(child_of, run_id)
        proc.kill()
        proc.wait(timeout=10)
        began = time.monotonic()
        while not gone(child) and time.monotonic() - began < 1.0:
            time.sleep(0.02)
        assert gone(child)
        subprocess.run([li, "job", "kill", run_id], env=env, capture_output=True, timeout=60)
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_a_wait_with_a_progress_token_reports_what_has_ended_at_least_every_ten_seconds(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    seen: list[tuple[float, float, str | None]] = []

    async def body(client: Client) -> None:
        _, fast = await call(client, "submit_agent", prompt="true", model="sh")
        _, slow = await call(client, "submit_agent", prompt="sleep 14", model="sh")
        began = time.monotonic()

        async def progress(value: float, total: float | None, message: str | None) -> None:
            seen.append((time.monotonic() - began, value, message))

        ids = [fast["data"]["run_id"], slow["data"]["run_id"]]
        result = await client.call_tool("wait", {"run_ids": ids, "max_wait": 40}, progress_callback=progress)
        assert not result.is_error and result.structured_content["classification"]["settled"]  # type: ignore[index]

    in_session(server(real_li(tmp_path / "li"), li_home), body)
    assert len(seen) >= 3, seen
    times = [0.0] + [at for at, _, _ in seen]
    assert max(b - a for a, b in zip(times, times[1:], strict=False)) <= 10.0, seen
    assert [value for _, value, _ in seen] == sorted(value for _, value, _ in seen)
    assert any(message and message.startswith("1 of 2 ended: ") and "succeeded" in message
               for _, _, message in seen), seen


def test_a_hundred_blocking_waits_never_delay_a_ping_or_a_status(tmp_path: pathlib.Path, li_home: str) -> None:
    """39 waits in flight once froze ping and status for 10.5 s (the stdio transport shared the tools'
    thread pool). Measured with no wait in flight, then with 100 in flight: ping, and the status
    tool against `li job status --machine` run as a subprocess at the same moment (on a shared
    machine, the subprocess's own time is the baseline the server must not add 100 ms to)."""
    figures: dict[str, float] = {}
    li = real_li(tmp_path / "li")
    env = {**os.environ, "LI_HOME": li_home}

    async def ping(client: Client) -> float:
        began = time.perf_counter()
        await client.send_ping()
        return time.perf_counter() - began

    async def pair(client: Client, run_id: str) -> tuple[float, float]:
        """(the status tool call, `li job status --machine` as a subprocess), one after the other."""
        began = time.perf_counter()
        result = await client.call_tool("status", {"run_id": run_id})
        tool = time.perf_counter() - began
        assert not result.is_error, result
        began = time.perf_counter()
        await anyio.run_process([li, "job", "status", "--machine", run_id], env=env)
        return tool, time.perf_counter() - began

    async def measure(client: Client, run_id: str, prefix: str) -> None:
        pings = [await ping(client) for _ in range(10)]
        pairs = [await pair(client, run_id) for _ in range(5)]
        figures[f"{prefix}ping_max"] = max(pings)
        figures[f"{prefix}status_tool"] = min(tool for tool, _ in pairs)
        figures[f"{prefix}status_subprocess"] = min(direct for _, direct in pairs)

    async def body(client: Client) -> None:
        _, submitted = await call(client, "submit_agent", prompt="sleep 300", model="sh")
        run_id = submitted["data"]["run_id"]
        await measure(client, run_id, "idle_")
        async with anyio.create_task_group() as group:
            for _ in range(100):
                group.start_soon(client.call_tool, "wait", {"run_ids": [run_id], "max_wait": 120, "poll_interval": 10})
            with anyio.fail_after(120):
                while len(wait_children(run_id)) < 100:
                    await anyio.sleep(0.2)
                await started(wait_children(run_id))
            busy = await client.call_tool("wait", {"run_ids": [run_id], "max_wait": 120})
            assert busy.is_error and "busy" in busy.structured_content["error"]["message"]  # type: ignore[index]
            await measure(client, run_id, "")
            group.cancel_scope.cancel()
        await call(client, "kill", run_id=run_id)

    in_session(server(li, li_home), body)
    print(f"\nlatency (s): {json.dumps({k: round(v, 4) for k, v in figures.items()})}")
    assert figures["ping_max"] < 0.1, figures
    assert figures["status_tool"] - figures["status_subprocess"] < 0.1, figures


async def started(children: list[psutil.Process]) -> None:
    """Until the children are past their start-up (Python's imports) and waiting: their CPU use over
    half a second falls under 5% of a core together. Measured then, a wait in flight is what it is
    for most of its life, not the spawn storm of 100 interpreters at once."""

    def used() -> float:
        total = 0.0
        for child in children:
            try:
                times = child.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system
        return total

    while True:
        before = used()
        await anyio.sleep(0.5)
        if used() - before < 0.025:
            return


def test_parse_errors_are_answered_and_only_tools_are_advertised(tmp_path: pathlib.Path, li_home: str) -> None:
    env = {**os.environ, "LI_HOME": li_home, "PYTHONPATH": REPO}
    proc = subprocess.Popen([li_bin(), "mcp", "--li", real_li(tmp_path / "li")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        def line(text: str) -> dict[str, Any]:
            proc.stdin.write(text + "\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
            return json.loads(proc.stdout.readline())  # type: ignore[union-attr]

        hello = line(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        assert hello["result"]["capabilities"] == {"tools": {"listChanged": True}}, hello
        assert line("{not json") ["error"]["code"] == -32700
        bad = line('{"jsonrpc": "2.0", "id": 7, "nonsense": true}')
        assert bad["error"]["code"] == -32600 and bad["id"] is None, bad
        listed = line(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        assert len(listed["result"]["tools"]) == 17, "the server still serves after bad lines"
        for method in ("prompts/list", "resources/list"):
            assert line(json.dumps({"jsonrpc": "2.0", "id": 3, "method": method}))["error"]["code"] == -32601
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_the_tool_list_changes_only_with_a_list_changed_notification(tmp_path: pathlib.Path, li_home: str) -> None:
    from tests.e2e.test_mcp_server import v2_li

    notified: list[str] = []

    async def on_message(message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None) or getattr(message, "method", None)
        if method:
            notified.append(str(method))

    li = v2_li(tmp_path / "li")

    async def session() -> None:
        from tests.e2e.test_mcp_server import server as params

        with anyio.fail_after(120):
            async with Client(params(li, li_home), mode="legacy", message_handler=on_message) as client:
                assert [t.name for t in (await client.list_tools()).tools] == ["handshake"]
                real_li(tmp_path / "li")
                await client.call_tool("handshake", {})
                with anyio.fail_after(10):
                    while "notifications/tools/list_changed" not in notified:
                        await anyio.sleep(0.05)

    anyio.run(session)


def test_the_contract_schemas_ship_in_the_wheel(tmp_path: pathlib.Path) -> None:
    """lionrun installs from a wheel with no repository beside it: the output schemas li mcp
    publishes are read from the package (contract/v1 itself, copied into the wheel)."""
    import zipfile

    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), REPO],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = tmp_path.glob("lionrun-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for schema in pathlib.Path(REPO, "contract", "v1").glob("*.json"):
        assert f"lionrun/adapters/contract_client/contract_v1/{schema.name}" in names, schema.name


def test_apply_and_rm_through_mcp_change_a_checkout_and_remove_the_run(tmp_path: pathlib.Path, li_home: str) -> None:
    """The two destructive verbs beside kill and prune: a worktree run's change applied to the
    person's checkout, then the run removed; a run still going is refused by rm."""
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p",
           "GIT_COMMITTER_EMAIL": "p@x"}
    (repo / "a.txt").write_text("one\n")
    for args in (["init", "-q"], ["add", "a.txt"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)

    async def body(client: Client) -> None:
        failed, submitted = await call(client, "submit_agent", prompt="echo two >> a.txt", model="sh",
                                       cwd=str(repo), worktree=True)
        assert not failed, submitted
        run_id = submitted["data"]["run_id"]
        from tests.e2e.test_mcp_server import wait_until_settled

        await wait_until_settled(client, run_id)
        failed, refused = await call(client, "apply", run_id=run_id)
        assert failed and refused["error"]["message"] == "apply's arguments: `cwd` is missing", refused
        failed, applied = await call(client, "apply", run_id=run_id, cwd=str(repo))
        assert not failed and applied["data"]["applied"] is True, applied
        assert (repo / "a.txt").read_text() == "one\ntwo\n"
        _, going = await call(client, "submit_agent", prompt="sleep 60", model="sh")
        failed, kept = await call(client, "rm", run_ids=[going["data"]["run_id"]])
        assert failed and kept["error"]["kind"] == "conflict", kept
        failed, removed = await call(client, "rm", run_ids=[run_id], branches=True)
        assert not failed and removed["data"]["removed"] == [run_id], removed
        failed, again = await call(client, "rm", run_ids=[run_id])
        assert failed and again["error"]["kind"] == "not_found", again
        await call(client, "kill", run_id=going["data"]["run_id"])

    in_session(server(real_li(tmp_path / "li"), li_home), body)
