"""What a run's own work forges in the store, and what li then answers (the real `li`).

- the cross-run forge: run B's work rewrites run A's record to a success; A's work then exits 3;
- the retry forge: a run's work rewrites its own instruction; `li job retry` must not run it;
- the notify forge: a run's work rewrites its record's `notify` argv and its runner is killed;
  root then reads that store (owned by `nobody`): no command of the work may run as root, and
  nothing li writes may be left owned by root.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.adversary.harness import call_li, eventually, show, wait_gone
from tests.builders import kill_session

NOBODY = 65534


def li(home: Path, *argv: str, cwd: Path | None = None, timeout: float = 20.0) -> dict[str, Any]:
    envelope, _, _ = call_li(argv, str(home), str(cwd or home.parent), timeout=timeout)
    return envelope


def record(home: Path, run_id: str) -> dict[str, Any]:
    return json.loads((home / "runs" / run_id / "record.json").read_text())  # type: ignore[no-any-return]


def started(home: Path, run_id: str) -> dict[str, Any]:
    eventually("the run's start recorded", lambda: record(home, run_id).get("incarnation") is not None)
    return record(home, run_id)


def waited(home: Path, run_id: str) -> dict[str, Any]:
    answer = li(home, "job", "wait", run_id, "--max-wait", "30", "--poll-interval", "0.1", timeout=60)
    assert answer["data"]["all_terminal"] is True, show(answer)
    return li(home, "job", "status", run_id)["data"]  # type: ignore[no-any-return]


FORGE_OTHER = r"""
import json, os, sys, time
target = os.path.join(os.environ["LI_ARTIFACTS_DIR"], "..", "..", sys.argv[1], "record.json")
try:
    with open(target) as handle:
        run = json.load(handle)
    run.update(status="completed", outcome="succeeded", exit_code=0, reason_code=None,
               finished_at=run["submitted_at"], terminal_source="runner")
    with open(target + ".forged", "w") as handle:
        json.dump(run, handle)
    os.replace(target + ".forged", target)
    print("FORGED")
except OSError as exc:
    print("REFUSED", exc)
open(sys.argv[2], "w").close()
"""


@pytest.mark.parametrize("confine", ["auto", "off"])
def test_a_success_another_run_forged_is_never_kept_silently(tmp_path: Path, confine: str) -> None:
    """Cross-run forge: B's work rewrites A's record to `completed`/`succeeded`, then A exits 3.

    Either the forge fails inside B's work (the store hidden from it), and A ends `failed` with
    exit 3; or it got through, and A's answer carries the runner's own end (`runner_end`: exit 3,
    `end_not_written_by_runner`) instead of a silent success."""
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    scratch.mkdir()
    go = scratch / "go"
    script = scratch / "forge.py"
    script.write_text(FORGE_OTHER)
    a = li(home, "agent", "--detach", "--cwd", str(scratch), "sh",
           f"while [ ! -e {go} ]; do sleep 0.05; done; exit 3")["data"]
    started(home, a["run_id"])
    b = li(home, "agent", "--detach", "--cwd", str(scratch), "--confine", confine, "sh",
           f"python3 {script} {a['run_id']} {go}")["data"]
    status_b = waited(home, b["run_id"])
    status_a = waited(home, a["run_id"])
    wait_gone(a["pid"])
    console_b = li(home, "job", "output", b["run_id"])["data"]
    forged = "FORGED" in json.dumps(console_b)
    assert forged is (status_b["confinement"] == "none"), show(status_b)  # the store hidden: the forge fails
    if forged:
        seen = status_a.get("runner_end")
        assert isinstance(seen, dict), f"a forged end kept silently: {show(status_a)}"
        assert (seen["status"], seen["outcome"], seen["exit_code"], seen["reason_code"]) == (
            "failed", "failed", 3, "end_not_written_by_runner"), show(status_a)
        # a consumer that only lists or waits sees it too
        entry = li(home, "job", "wait", a["run_id"], "--max-wait", "0")["data"]["runs"][0]
        row = next(r for r in li(home, "job", "list")["data"]["runs"] if r["run_id"] == a["run_id"])
        assert entry["runner_end"] == row["runner_end"] == seen, (show(entry), show(row))
    else:
        assert (status_a["status"], status_a["outcome"], status_a["exit_code"]) == ("failed", "failed", 3), \
            show(status_a)
        assert status_a.get("runner_end") is None
        entry = li(home, "job", "wait", a["run_id"], "--max-wait", "0")["data"]["runs"][0]
        assert entry["runner_end"] is None, show(entry)
    assert status_b["terminal"] is True


FORGE_OWN = r"""
import os, sys
where = os.path.join(os.environ["LI_ARTIFACTS_DIR"], "..")
for name in ("instruction.txt", "request.json"):
    try:
        with open(os.path.join(where, name), "w") as handle:
            handle.write("echo FORGED-BY-THE-WORK" if name == "instruction.txt" else "{}")
        print("FORGED", name)
    except OSError as exc:
        print("REFUSED", name, exc.strerror)
for name in ("record.json", "console.log"):
    try:
        open(os.path.join(where, name)).read()
        print("READ", name)
    except OSError as exc:
        print("REFUSED", name, exc.strerror)
"""


def test_a_retry_runs_what_was_submitted_never_what_the_work_wrote(tmp_path: Path) -> None:
    """Retry forge: the work rewrites its own instruction and request; with the store hidden it
    cannot (it is refused inside the work), and `li job retry` runs the command submitted."""
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    scratch.mkdir()
    script = scratch / "forge.py"
    script.write_text(FORGE_OWN)
    first = li(home, "agent", "--detach", "--cwd", str(scratch), "sh", f"echo ORIGINAL; python3 {script}")["data"]
    status = waited(home, first["run_id"])
    assert (status["confinement"], status["outcome"]) == ("store_hidden", "succeeded"), show(status)
    console = json.dumps(li(home, "job", "output", first["run_id"])["data"])
    assert "FORGED" not in console and "READ" not in console, console
    assert console.count("REFUSED") == 4, console
    retried = li(home, "job", "retry", first["run_id"])["data"]
    again = waited(home, retried["run_id"])
    output = json.dumps(li(home, "job", "output", retried["run_id"])["data"])
    assert "ORIGINAL" in output and "FORGED-BY-THE-WORK" not in output, output
    assert again["retry_of"] == first["run_id"]


@pytest.mark.skipif(os.geteuid() != 0, reason="a store owned by nobody, read by root: run the suite as root")
def test_root_reading_a_store_of_nobody_runs_no_command_of_its_work_and_leaves_nothing_of_root(
        tmp_path: Path) -> None:
    """Notify forge: the work rewrote its record's notify argv and its runner was SIGKILLed; the
    store is nobody's. Root's reads never reap it, never deliver the forged notice, write nothing."""
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    scratch.mkdir()
    proof = scratch / "ran-as"
    handle = li(home, "agent", "--detach", "--cwd", str(scratch), "--notify", "true", "sh", "sleep 300")["data"]
    run_id = handle["run_id"]
    current = started(home, run_id)
    kill_session(run_id, current["incarnation"])
    assert li(home, "queue", "set", "q", "--parallel", "1")["ok"]  # a queue the store keeps
    forged = {**record(home, run_id), "notify": ["sh", "-c", f"id -u > {proof}"]}
    (home / "runs" / run_id / "record.json").write_text(json.dumps(forged, indent=1))
    for folder, dirs, files in os.walk(home):
        for name in [*dirs, *files, ""]:
            os.lchown(os.path.join(folder, name) if name else folder, NOBODY, NOBODY)
    before = (home / "runs" / run_id / "record.json").read_bytes()

    status = li(home, "job", "status", run_id)["data"]
    assert (status["terminal"], status["outcome"], status["possibly_orphaned"], status["reap_withheld"]) == (
        False, None, True, "not_store_owner"), show(status)
    rows = li(home, "job", "list")["data"]["runs"]
    assert [(r["run_id"], r["terminal"], r["reap_withheld"]) for r in rows] == [(run_id, False, "not_store_owner")]
    entry = li(home, "job", "wait", run_id, "--max-wait", "0")["data"]["runs"][0]
    assert (entry["terminal"], entry["reap_withheld"]) == (False, "not_store_owner"), show(entry)
    time.sleep(1.0)  # a detached notice sender, had one been started, would have run by now
    assert not proof.exists(), f"the work's notify command ran as uid {proof.read_text().strip()}"
    assert (home / "runs" / run_id / "record.json").read_bytes() == before
    # What changes the store as a whole takes its lock first: root's dry run reads without it;
    # root's prune, rm and doctor --fix are refused before a lock file of root's is made.
    dry = li(home, "job", "prune", "--dry-run")
    assert dry["ok"] is True, show(dry)
    for argv in (("job", "prune"), ("job", "rm", run_id), ("doctor", "--fix")):
        refused = li(home, *argv)
        assert (refused["ok"], (refused["error"] or {}).get("detail", {}).get("reason_code")) == (
            False, "not_store_owner"), (argv, show(refused))
    assert not (home / "store.lock").exists()
    assert (home / "runs" / run_id / "record.json").read_bytes() == before
    # the queues too: root lists them (making nothing: no slots/ there is none held), changes none
    (home / "queues" / "q" / "slots").rmdir()
    settings = (home / "queues" / "q" / "settings.json").read_bytes()
    listed = li(home, "queue", "list")
    assert listed["ok"] and [(q["name"], q["running"]) for q in listed["data"]["queues"]] == [("q", 0)], show(listed)
    refused = li(home, "queue", "set", "q", "--parallel", "3")
    assert refused["ok"] is False and "not to this uid" in refused["error"]["message"], show(refused)
    assert not (home / "queues" / "q" / "slots").exists()
    assert (home / "queues" / "q" / "settings.json").read_bytes() == settings
    foreign = [os.path.join(folder, name) for folder, dirs, files in os.walk(home)
               for name in [*dirs, *files] if os.lstat(os.path.join(folder, name)).st_uid != NOBODY]
    assert foreign == [], f"left owned by another user than the store's: {foreign}"
