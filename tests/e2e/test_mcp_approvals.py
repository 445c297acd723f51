"""Through `li mcp`, driven by the MCP SDK's own client: the approvals tools (list, approve,
deny a real run's open request) and the submit tools' budget, retry and approval arguments.

A run is made to wait for approval without an agent CLI: an `sh` run asks as li's permission-prompt
tool does (`li job approval-request`, the tool's request on stdin) and prints the answer it gets.
The real Claude Code CLI asking through that tool, answered over MCP, is in test_real_agent_steering.py."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import anyio
from mcp import Client

from tests.e2e.test_mcp_server import call, in_session, real_li, server, wait_until_settled
from tests.support import li_bin


def asking(command: str, timeout: int = 60) -> str:
    """An sh prompt that asks to run `command` as Claude Code's permission prompt would, then prints the answer."""
    request = json.dumps({"tool_name": "Bash", "input": {"command": command}, "tool_use_id": "toolu_1"})
    return f"echo '{request}' | {li_bin()} job approval-request --timeout {timeout}"


async def open_request(client: Client, run_id: str) -> dict[str, Any]:
    """The run's one open request, once the `approvals` tool lists it."""
    with anyio.fail_after(60):
        while True:
            failed, body = await call(client, "approvals")
            assert not failed and body["surface"] == "ok", body
            rows = [r for r in body["data"]["approvals"] if r["run_id"] == run_id]
            if rows:
                assert len(rows) == 1 and body["classification"]["open"] >= 1, body
                return rows[0]
            await anyio.sleep(0.2)


def test_the_approval_tools_are_listed_closed_and_hinted(tmp_path: pathlib.Path, li_home: str) -> None:
    async def body(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"approvals", "approve", "deny"} <= set(tools)
        hints = {name: tools[name].annotations for name in ("approvals", "approve", "deny")}
        assert hints["approvals"] is not None and hints["approvals"].read_only_hint is True
        for name in ("approve", "deny"):
            hint = hints[name]
            assert hint is not None and hint.read_only_hint is False and hint.destructive_hint is False, name
        assert set(tools["approve"].input_schema["properties"]) == {"run_id", "request"}
        assert set(tools["deny"].input_schema["properties"]) == {"run_id", "request", "reason"}
        assert tools["deny"].input_schema["required"] == ["run_id"]
        for name in ("approvals", "approve", "deny"):
            assert tools[name].input_schema["additionalProperties"] is False, name
            schema = tools[name].output_schema or {}
            assert "ApprovalsData" in schema["$defs"], name  # contract/v1/approvals|approve|deny.json
        steering = {"max_tokens", "max_cost_usd", "retry", "retry_on", "retry_backoff_seconds",
                    "approval_timeout_seconds"}
        for name in ("submit_agent", "submit_flow", "submit_fanout"):
            assert steering <= set(tools[name].input_schema["properties"]), name
        mode = tools["submit_agent"].input_schema["properties"]["permission_mode"]
        assert "ask" in json.dumps(mode), mode

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_a_real_runs_request_is_listed_approved_and_denied_over_mcp(tmp_path: pathlib.Path, li_home: str) -> None:
    async def body(client: Client) -> None:
        failed, allowed = await call(client, "submit_agent", prompt=asking("touch ok.txt"), model="sh")
        assert not failed, allowed
        allowed_id = allowed["data"]["run_id"]
        request = await open_request(client, allowed_id)
        assert request["tool"] == "Bash" and request["input"] == {"command": "touch ok.txt"}
        failed, status = await call(client, "status", run_id=allowed_id)
        assert status["data"]["status"] == "waiting_approval" and status["classification"]["run"]["branch"] == \
            "not_ended", status
        failed, answered = await call(client, "approve", run_id=allowed_id, request=request["id"])
        assert not failed and [a["behavior"] for a in answered["data"]["approvals"]] == ["allow"], answered
        assert "a1 allow" in answered["classification"]["summary"]
        failed, again = await call(client, "deny", run_id=allowed_id, request=request["id"])
        assert failed and again["error"]["kind"] == "conflict", again  # answered once
        await wait_until_settled(client, allowed_id)
        failed, output = await call(client, "output", run_id=allowed_id)
        said = json.loads(output["data"]["console"]["value"].strip().splitlines()[-1])
        assert said == {"behavior": "allow", "updatedInput": {"command": "touch ok.txt"}}, output

        failed, refused = await call(client, "submit_agent", prompt=asking("rm -rf x"), model="sh")
        refused_id = refused["data"]["run_id"]
        request = await open_request(client, refused_id)
        failed, answered = await call(client, "deny", run_id=refused_id, reason="not <today>")
        assert not failed and answered["data"]["approvals"][0]["behavior"] == "deny", answered
        await wait_until_settled(client, refused_id)
        failed, output = await call(client, "output", run_id=refused_id)
        said = json.loads(output["data"]["console"]["value"].strip().splitlines()[-1])
        assert said == {"behavior": "deny", "message": "not <today>"}, output
        failed, listed = await call(client, "approvals")
        assert not [r for r in listed["data"]["approvals"] if r["run_id"] in (allowed_id, refused_id)], listed

        failed, none = await call(client, "approve", run_id=refused_id)
        assert failed and none["error"]["kind"] == "not_found", none  # nothing open any more
        failed, unknown = await call(client, "deny", run_id=refused_id, because="x")
        assert failed and "`because` is not an argument of deny" in unknown["error"]["message"], unknown

    in_session(server(real_li(tmp_path / "li"), li_home), body)


def test_submit_tools_pass_budgets_retries_and_approval_timeouts_refused_in_their_own_words(
    tmp_path: pathlib.Path, li_home: str
) -> None:
    async def body(client: Client) -> None:
        failed, budget = await call(client, "submit_agent", prompt="echo", model="sh", max_tokens=5)
        assert failed and budget["error"]["kind"] == "invalid_input", budget
        assert budget["error"]["message"].startswith("`max_tokens` needs a provider that reports its usage"), budget
        assert budget["error"]["detail"]["argument"] == "`max_tokens`"
        failed, late = await call(client, "submit_fanout", prompt="echo", model="sh", max_cost_usd=1.0)
        assert failed and "`max_cost_usd`" in late["error"]["message"] and "--max-cost" not in late["error"]["message"]
        failed, timeout = await call(client, "submit_agent", prompt="echo", model="sh", approval_timeout_seconds=5)
        assert failed and timeout["error"]["message"] == \
            "`approval_timeout_seconds` applies to `permission_mode` ask", timeout
        failed, policy = await call(client, "submit_agent", prompt="echo", model="sh", retry_on=["provider_overloaded"])
        assert failed and "`retry_on`" in policy["error"]["message"] and "`retry`" in policy["error"]["message"]

        failed, retried = await call(client, "submit_agent", prompt="exit 3", model="sh", retry=2,
                                     retry_on=["provider_overloaded", "provider_rate_limited"], retry_backoff_seconds=1)
        assert not failed, retried
        run_id = retried["data"]["run_id"]
        await wait_until_settled(client, run_id)
        failed, status = await call(client, "status", run_id=run_id)
        data = status["data"]
        assert (data["outcome"], len(data["attempts"])) == ("failed", 1), data  # a work failure is not retried

        spec = "steps:\n  - id: one\n    model: sh\n    prompt: echo flow\n"
        failed, flow = await call(client, "submit_flow", spec=spec, retry=1)
        assert not failed, flow
        await wait_until_settled(client, flow["data"]["run_id"])
        failed, status = await call(client, "status", run_id=flow["data"]["run_id"])
        assert status["data"]["attempts"] is not None and len(status["data"]["attempts"]) == 1, status

    in_session(server(real_li(tmp_path / "li"), li_home), body)
