"""config.toml is read once per li call: the settings the composition root holds (domain/config.py).

A submit used to open it six times (the store, then each default the request takes from it). An
audit hook counts every `open` of the file (os.open and open() both raise the `open` event) in the
real `li` entry point, in a process of its own; the submit must succeed, so the count means something.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(bool(os.environ.get("LI_BIN")), reason="hooks lionrun's own interpreter")

COUNT_OPENS = textwrap.dedent("""
    import json, os, sys
    target = os.path.join(os.environ["LI_HOME"], "config.toml")
    opens = []

    def hook(event, args):
        if event == "open" and args and isinstance(args[0], (str, bytes)) and os.fsdecode(args[0]) == target:
            opens.append(event)

    sys.addaudithook(hook)
    from lionrun.entrypoints.bootstrap import main
    code = main(sys.argv[2:])
    with open(sys.argv[1], "w") as handle:
        json.dump({"opens": len(opens), "code": code}, handle)
    sys.exit(code)
""")

# Every entry a submit may take from the file, and the words the store and the defaults look for.
CONFIG = textwrap.dedent("""
    # the store stays the filesystem one here
    notify = ["true", "{run_id}"]
    idle_timeout = 120
    confine = "auto"
    executor = "local"
    worktree = false
    worktree_setup = "true"

    [queues]
    sh = "shells"

    [slurm]
    partition = "debug"

    [providers.claude]
    permission_mode = "read-only"
""")


def opens_of(argv: list[str], home: str, report: str) -> dict[str, object]:
    env = {**os.environ, "LI_HOME": home}
    env.pop("LI_NOTIFY_COMMAND", None)
    done = subprocess.run([sys.executable, "-c", COUNT_OPENS, report, *argv], cwd=os.path.dirname(home), capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=60, check=False, env=env, text=True)
    with open(report) as handle:
        found: dict[str, object] = json.load(handle)
    return {**found, "stdout": done.stdout}


@pytest.mark.parametrize("argv", [["agent", "--detach", "sh", "true", "--machine"],
                                  ["agent", "--detach", "--worktree", "--base", "HEAD", "sh", "true", "--machine"],
                                  ["job", "list", "--machine"]],
                         ids=["agent", "agent --worktree outside a repository", "job list"])
def test_one_li_call_opens_config_toml_once(argv: list[str], li_home: str, tmp_path: object) -> None:
    with open(os.path.join(li_home, "config.toml"), "w") as handle:
        handle.write(CONFIG)
    found = opens_of(argv, li_home, os.path.join(str(tmp_path), "opens.json"))
    envelope = json.loads(str(found["stdout"]))
    if "--worktree" in argv:  # refused after reading every default: the home is no repository
        assert envelope["error"]["kind"] == "invalid_input" and "git repository" in envelope["error"]["message"]
    else:
        assert envelope["ok"] is True, envelope
    assert found["opens"] == 1, found


def test_the_defaults_read_once_are_the_ones_the_run_records(li_home: str, tmp_path: object) -> None:
    # The count above proves nothing if the submit stopped looking at the file: its defaults arrive.
    with open(os.path.join(li_home, "config.toml"), "w") as handle:
        handle.write(CONFIG)
    found = opens_of(["agent", "--detach", "sh", "true", "--machine"], li_home, os.path.join(str(tmp_path), "o.json"))
    run_id = json.loads(str(found["stdout"]))["data"]["run_id"]
    with open(os.path.join(li_home, "runs", run_id, "record.json")) as handle:
        record = json.load(handle)
    assert record["notify"] == ["true", "{run_id}"] and record["notify_source"] == "config"
    assert record.get("queue") == "shells", {key: record.get(key) for key in ("queue", "notify")}
