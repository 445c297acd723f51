"""Through the real `li`: a confined run's work still submits runs through `li`
and reads, waits on and kills those it submitted — and nothing else — through its run's broker
(adapters/broker.py), in the lean supervisor and in the full runner alike."""

from __future__ import annotations

import json
import os
import re
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import li_bin, machine, run_li

SUPERVISORS = ["lean", "full"]


def env_of(supervisor: str) -> dict[str, str]:
    return {"LI_SUPERVISOR": supervisor}


def submit(home: str, script: str, supervisor: str, *extra: str) -> str:
    return str(machine("agent", "--detach", *extra, "sh", script, home=home, env=env_of(supervisor)).data["run_id"])


def ended(home: str, run_id: str, within: float = 60) -> dict[str, Any]:
    waited = machine("job", "wait", run_id, "--max-wait", str(within), "--poll-interval", "0.1", home=home).data
    assert waited["all_terminal"] is True, waited
    return machine("job", "status", run_id, home=home).data  # type: ignore[no-any-return]


def console(home: str, run_id: str) -> str:
    text = machine("job", "output", run_id, home=home).data["console"]["value"]
    return str(text)


def said(text: str, name: str) -> str:
    """The value the work printed as `NAME=value` on a line of its own."""
    found = re.search(rf"^{name}=(.*)$", text, re.M)
    assert found is not None, (name, text)
    return found.group(1).strip()


@pytest.mark.parametrize("supervisor", SUPERVISORS)
def test_a_confined_runs_own_child_runs_and_is_readable_from_inside(li_home: str, supervisor: str) -> None:
    other = submit(li_home, "echo OTHER-SECRET", supervisor)
    ended(li_home, other)
    li = shlex.quote(li_bin())
    parent = submit(li_home, f"""
        child=$({li} agent --detach sh 'echo CHILD-SAYS-HI' 2>/dev/null)
        echo "CHILD=$child"
        {li} job wait "$child" --max-wait 30 --poll-interval 0.1 --machine | tr -d '\\n'; echo
        {li} job output "$child"
        echo "LIST=$({li} job list --machine)"
        {li} job status {other}; echo "OTHER_RC=$?"
        echo "OTHER_MACHINE=$({li} job status {other} --machine)"
        {li} job output {other}; echo "OTHER_OUTPUT_RC=$?"
        {li} job kill {other}; echo "OTHER_KILL_RC=$?"
    """, supervisor)
    status = ended(li_home, parent)
    assert (status["confinement"], status["outcome"]) == ("store_hidden", "succeeded"), status
    text = console(li_home, parent)
    child = said(text, "CHILD")
    assert re.fullmatch(r"\d{8}T\d{6}-[0-9a-f]{6}", child), text
    assert "CHILD-SAYS-HI" in text  # its console, read from inside the parent's work
    listed = json.loads(said(text, "LIST"))["data"]["runs"]
    assert [row["run_id"] for row in listed] == [child], listed  # the parent's own children only
    assert said(text, "OTHER_RC") == "3" and said(text, "OTHER_OUTPUT_RC") == "3", text  # not_found
    assert said(text, "OTHER_KILL_RC") == "3", text
    other_answer = json.loads(said(text, "OTHER_MACHINE"))
    assert other_answer["error"]["kind"] == "not_found", other_answer
    assert "OTHER-SECRET" not in text
    assert ended(li_home, other)["outcome"] == "succeeded"  # untouched by the kill it asked for
    # outside, the child records its parent, runs confined, and `li job list --parent` finds it
    child_status = ended(li_home, child)
    assert (child_status["parent"], child_status["confinement"], child_status["outcome"]) == (
        parent, "store_hidden", "succeeded"), child_status
    rows = machine("job", "list", "--parent", parent, home=li_home).data["runs"]
    assert [row["run_id"] for row in rows] == [child]
    assert machine("job", "status", other, home=li_home).data["parent"] is None
    person = run_li("job", "status", child, home=li_home)
    assert f"parent     {parent}" in person.stdout, person.stdout


@pytest.mark.parametrize("supervisor", SUPERVISORS)
def test_a_child_outlives_its_parents_end_and_the_parent_can_kill_its_own(li_home: str, supervisor: str,
                                                                         tmp_path: Path) -> None:
    li = shlex.quote(li_bin())
    done = tmp_path / "done"
    parent = submit(li_home, f"""
        echo "LATE=$({li} agent --detach sh 'sleep 2; touch {done}' 2>/dev/null)"
        doomed=$({li} agent --detach sh 'sleep 300' 2>/dev/null)
        echo "DOOMED=$doomed"
        sleep 0.5
        {li} job kill "$doomed" --machine | tr -d '\\n'; echo
    """, supervisor)
    status = ended(li_home, parent)
    text = console(li_home, parent)
    assert status["outcome"] == "succeeded", (status, text)
    late, doomed = said(text, "LATE"), said(text, "DOOMED")
    # the parent's end stopped no child: the detached one went on and ended as itself
    assert ended(li_home, late)["outcome"] == "succeeded", text
    assert done.exists()
    killed = ended(li_home, doomed)
    assert (killed["status"], killed["parent"]) == ("cancelled", parent), killed


@pytest.mark.parametrize(("words", "what"), [
    ("job rm RUN", "li job rm"),
    ("job prune --older-than 1s", "li job prune"),
    ("queue set default --parallel 1", "li queue"),
    ("agent --detach --confine off sh true", "--confine off"),
    ("agent --detach --notify 'touch /tmp/x' sh true", "--notify"),
    ("agent --detach --prompt-file /etc/hostname sh", "--prompt-file"),
    ("agent --detach --worktree --setup true sh true", "--setup"),
])
def test_what_the_work_may_not_ask_is_refused_in_one_line_and_one_envelope(li_home: str, words: str,
                                                                          what: str) -> None:
    li = shlex.quote(li_bin())
    words = words.replace("RUN", "@last")
    parent = submit(li_home, f"""
        {li} {words}; echo "HUMAN_RC=$?"
        echo "MACHINE=$({li} {words} --machine)"; echo "MACHINE_RC=$?"
        echo "LIST=$({li} job list --machine)"
    """, "lean")
    ended(li_home, parent)
    text = console(li_home, parent)
    assert said(text, "HUMAN_RC") == "2", text
    assert "is not open to a run's work" in text or "outside the work's confinement" in text, text
    assert what in text, text
    answer = json.loads(said(text, "MACHINE"))
    assert said(text, "MACHINE_RC") == "0" and answer["error"]["kind"] == "invalid_input", answer
    assert answer["error"]["detail"]["reason_code"] == "not_open_to_the_work", answer
    assert json.loads(said(text, "LIST"))["data"]["runs"] == []  # nothing was submitted
    assert machine("job", "list", "--parent", parent, home=li_home).data["runs"] == []


def test_a_process_outside_the_run_gets_nothing_from_its_broker(li_home: str) -> None:
    parent = submit(li_home, "sleep 30", "lean")
    try:
        # the head that listens once the work runs: the supervisor the runner exec'd (a connection
        # taken by the runner just before that exec would get no answer; no work exists before it)
        for _ in range(100):
            pid = machine("job", "status", parent, home=li_home).data["pid"]
            if pid and b"supervisor.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                break
            time.sleep(0.1)
        name = None
        for _ in range(100):
            name = next((line.rsplit("@", 1)[1].strip() for line in Path("/proc/net/unix").read_text().splitlines()
                         if f"@li-broker-{parent}-" in line), None)
            if name is not None:
                break
            time.sleep(0.1)
        assert name is not None, "the run's broker socket was not found"
        from lionrun.adapters.broker import forward

        code, why = forward(name, ["job", "list", "--machine"])
        assert code is None and "no process of this run" in why, (code, why)
    finally:
        machine("job", "kill", parent, home=li_home)
        ended(li_home, parent)


def test_an_unconfined_run_has_no_broker_and_its_li_reaches_the_store(li_home: str) -> None:
    li = shlex.quote(li_bin())
    parent = submit(li_home, f'echo "LIST=$({li} job list --machine)"', "lean", "--confine", "off")
    ended(li_home, parent)
    runs = json.loads(said(console(li_home, parent), "LIST"))["data"]["runs"]
    assert parent in [row["run_id"] for row in runs]  # the whole store, as before
    assert os.listdir(os.path.join(li_home, "runs"))  # and no marker was left in the real store
    assert not os.path.exists(os.path.join(li_home, ".li-store-hidden"))


def test_nested_runs_on_the_postgresql_store(pg_dsn: str, li_home: str) -> None:
    """The work has no way into the shared store (no DSN in its environment); its head's broker
    runs li with the head's own, so the child lands in the same database, recording its parent."""
    env = {"LI_STORE": pg_dsn}
    machine("store", "init", home=li_home, env=env)
    other = str(machine("agent", "--detach", "sh", "echo OTHER-SECRET", home=li_home, env=env).data["run_id"])
    li = shlex.quote(li_bin())
    script = f"""
        env | grep -c '^LI_STORE=' ; echo "DSN_SEEN=$?"
        child=$({li} agent --detach sh 'echo CHILD-ON-PG' 2>/dev/null)
        echo "CHILD=$child"
        {li} job wait "$child" --max-wait 30 --poll-interval 0.1 >/dev/null
        {li} job output "$child"
        {li} job status {other}; echo "OTHER_RC=$?"
    """
    parent = str(machine("agent", "--detach", "sh", script, home=li_home, env=env).data["run_id"])
    waited = machine("job", "wait", parent, "--max-wait", "60", "--poll-interval", "0.1", home=li_home, env=env).data
    assert waited["all_terminal"] is True, waited
    status = machine("job", "status", parent, home=li_home, env=env).data
    text = machine("job", "output", parent, home=li_home, env=env).data["console"]["value"]
    assert (status["confinement"], status["outcome"]) == ("store_hidden", "succeeded"), (status, text)
    assert said(text, "DSN_SEEN") == "1", text  # grep found no LI_STORE in the work's environment
    child = said(text, "CHILD")
    assert "CHILD-ON-PG" in text and said(text, "OTHER_RC") == "3", text
    child_status = machine("job", "status", child, home=li_home, env=env).data
    assert (child_status["parent"], child_status["confinement"]) == (parent, "store_hidden"), child_status
    rows = machine("job", "list", "--parent", parent, home=li_home, env=env).data["runs"]
    assert [row["run_id"] for row in rows] == [child]


MCP_CLIENT = '''
import json, sys
import anyio
from mcp import Client, StdioServerParameters

LI, HOME, OTHER = sys.argv[1:4]


async def main():
    # as an MCP host starts a server: a minimal environment, LI_HOME the one value given
    params = StdioServerParameters(command=LI, args=["mcp"], env={"LI_HOME": HOME})
    async with Client(params, mode="legacy") as client:
        submitted = await client.call_tool("submit_agent", {"prompt": "echo MCP-CHILD", "model": "sh"})
        run_id = submitted.structured_content["data"]["run_id"]
        for _ in range(30):
            waited = await client.call_tool("wait", {"run_ids": [run_id], "max_wait": 20, "poll_interval": 0.1})
            if waited.structured_content["classification"]["settled"]:
                break
        output = await client.call_tool("output", {"run_id": run_id})
        other = await client.call_tool("status", {"run_id": OTHER})
        # a flow: its text comes on the acting li's stdin; a path is li's to read, refused here
        flow = await client.call_tool("submit_flow", {"spec": "steps:\\n  - id: s\\n    model: sh\\n"
                                                              "    prompt: echo MCP-FLOW\\n"})
        path = await client.call_tool("submit_flow", {"spec_path": "/etc/hostname"})
        print("MCP=" + json.dumps({"child": run_id, "output": output.structured_content,
                                   "other": other.structured_content, "flow": flow.structured_content,
                                   "path": path.structured_content}))

anyio.run(main)
'''


def test_li_mcp_inside_a_confined_run_submits_and_reads_its_children_only(li_home: str, tmp_path: Path) -> None:
    import sys

    other = submit(li_home, "echo OTHER-SECRET", "lean")
    ended(li_home, other)
    client = tmp_path / "mcp_client.py"
    client.write_text(MCP_CLIENT)
    parent = submit(li_home, f"{shlex.quote(sys.executable)} {client} {shlex.quote(li_bin())} "
                             f"{shlex.quote(li_home)} {other}", "lean")
    status = ended(li_home, parent, within=120)
    text = console(li_home, parent)
    assert status["outcome"] == "succeeded", (status, text)
    answer = json.loads(said(text, "MCP"))
    assert answer["output"]["surface"] == "ok" and "MCP-CHILD" in answer["output"]["data"]["console"]["value"], answer
    assert answer["other"]["error"]["kind"] == "not_found", answer["other"]
    assert "OTHER-SECRET" not in text
    child = ended(li_home, answer["child"])
    assert (child["parent"], child["confinement"], child["outcome"]) == (parent, "store_hidden", "succeeded"), child
    assert answer["flow"]["surface"] == "ok", answer["flow"]
    flow = ended(li_home, answer["flow"]["data"]["run_id"])
    assert (flow["parent"], flow["kind"], flow["outcome"]) == (parent, "flow", "succeeded"), flow
    assert "MCP-FLOW" in console(li_home, flow["run_id"])
    assert answer["path"]["error"]["kind"] == "invalid_input", answer["path"]
