"""Through the real `li`: no cwd leads a run's work back into the store.

A cwd at or below the store (links resolved) is refused at submit, from a person and through a
confined work's broker alike; and a leg is confined *before* it enters its cwd, on both runners,
so a cwd that became a path into the store after the submit (a link retargeted while the run
waited in its queue) meets the hidden, empty store, never the real one.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lionrun.adapters import confinement
from tests.support import li_bin, machine, run_li

SUPERVISORS = ["lean", "full"]
NOBODY = 65534
USERS = [pytest.param(None, id="as-self"), pytest.param(NOBODY, id="as-nobody")]


@pytest.fixture
def top() -> Iterator[Path]:
    """A folder every user may traverse (nobody's store lives in it when a test runs as nobody)."""
    made = Path(tempfile.mkdtemp(prefix="li-cwd-"))
    os.chmod(made, 0o755)
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def li_for(uid: int | None) -> str | None:
    """An `li` the user can run: this suite's, else `$LI_NOBODY_BIN` (an install outside root's
    0700 home, e.g. `python3 -m venv /opt/li && /opt/li/bin/pip install -e .`); None: none."""
    if uid is None:
        return li_bin()
    for candidate in (li_bin(), os.environ.get("LI_NOBODY_BIN", "")):
        if not candidate:
            continue
        try:
            done = subprocess.run([candidate, "--version"], user=uid, group=uid, extra_groups=[],
                                  capture_output=True, check=False, cwd="/", timeout=60)
        except OSError:
            continue
        if done.returncode == 0:
            return candidate
    return None


class Li:
    """`li --machine` as this user or as `uid` (root runs the suite in CI; nobody needs root)."""

    def __init__(self, home: Path, uid: int | None, executable: str) -> None:
        self.home, self.uid, self.executable = home, uid, executable

    def __call__(self, *argv: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
        full = dict(os.environ)
        full.pop("LI_NOTIFY_COMMAND", None)
        full.update(LI_HOME=str(self.home), NO_COLOR="1", **(env or {}))
        if self.uid is not None:
            full["HOME"] = str(self.home.parent)
        extra: dict[str, Any] = {} if self.uid is None else {"user": self.uid, "group": self.uid,
                                                              "extra_groups": []}
        done = subprocess.run([self.executable, *argv, "--machine"], capture_output=True, text=True, timeout=60,
                              env=full, cwd=str(cwd or self.home.parent), stdin=subprocess.DEVNULL, check=False,
                              **extra)
        assert done.returncode == 0, (argv, done.returncode, done.stderr)
        envelope: dict[str, Any] = json.loads(done.stdout)
        return envelope

    def ended(self, run_id: str) -> dict[str, Any]:
        waited = self("job", "wait", run_id, "--max-wait", "30", "--poll-interval", "0.1")
        assert waited["data"]["all_terminal"] is True, waited
        data: dict[str, Any] = self("job", "status", run_id)["data"]
        return data

    def console(self, run_id: str) -> str:
        return json.dumps(self("job", "output", run_id)["data"])


def setup_user(top: Path, uid: int | None) -> Li:
    if uid is not None and os.geteuid() != 0:
        pytest.skip("running li as another user needs root (CI runs as root)")
    executable = li_for(uid)
    if executable is None:
        pytest.skip("no li nobody can run: set LI_NOBODY_BIN to an install outside root's home")
    home = top / "home"
    home.mkdir()
    if uid is not None:
        os.chown(top, uid, uid)
        os.chown(home, uid, uid)
    why = confinement.probe(str(home)) if uid is None else None
    if why is not None:
        pytest.fail(why) if os.environ.get("CI") == "true" else pytest.skip(why)
    return Li(home, uid, executable)


def refused_in_store(answer: dict[str, Any]) -> None:
    assert answer["ok"] is False, answer
    assert answer["error"]["kind"] == "invalid_input", answer
    assert answer["error"]["detail"]["reason_code"] == "cwd_in_store", answer


@pytest.mark.parametrize("uid", USERS)
def test_a_cwd_at_or_below_the_store_is_refused_at_submit_links_resolved(top: Path, uid: int | None) -> None:
    li = setup_user(top, uid)
    other = li("agent", "--detach", "sh", "echo OTHER")["data"]["run_id"]
    li.ended(other)
    link = top / "looks-harmless"
    os.symlink(li.home / "runs" / other, link)
    for argv in (("agent", "--detach", "--cwd", str(li.home), "sh", "true"),
                 ("agent", "--detach", "--cwd", str(li.home / "runs"), "sh", "true"),
                 ("agent", "--detach", "--cwd", str(link), "sh", "true"),
                 ("orchestrate", "fanout", "--detach", "--models", "sh,sh", "--cwd", str(li.home), "true")):
        refused_in_store(li(*argv))
    refused_in_store(li("agent", "--detach", "sh", "true", cwd=li.home / "runs"))  # here, no --cwd
    assert li("job", "list")["data"]["runs"][0]["run_id"] == other  # nothing was made
    assert len(li("job", "list")["data"]["runs"]) == 1
    beside = top / "home-sibling"  # a name that starts like the store's is not inside it
    beside.mkdir()
    if uid is not None:
        os.chown(beside, uid, uid)
    assert li("agent", "--detach", "--cwd", str(beside), "sh", "true")["ok"] is True


@pytest.mark.parametrize("supervisor", SUPERVISORS)
def test_a_confined_work_that_enters_the_store_cannot_submit_a_run_there(li_home: str, supervisor: str) -> None:
    why = confinement.probe(li_home)
    if why is not None:
        pytest.fail(why) if os.environ.get("CI") == "true" else pytest.skip(why)
    li = shlex.quote(li_bin())
    env = {"LI_SUPERVISOR": supervisor}
    parent = machine("agent", "--detach", "sh", f"""
        cd "$LI_HOME" && echo "ANSWER=$({li} agent --detach sh 'echo CHILD' --machine)"
        cd "$LI_HOME/runs" 2>/dev/null || mkdir -p /tmp/nothing
    """, home=li_home, env=env).data["run_id"]
    waited = machine("job", "wait", parent, "--max-wait", "30", "--poll-interval", "0.1", home=li_home).data
    assert waited["all_terminal"] is True
    text = machine("job", "output", parent, home=li_home).data["console"]["value"]
    line = next(x for x in text.splitlines() if x.startswith("ANSWER="))
    refused_in_store(json.loads(line[len("ANSWER="):]))
    runs = machine("job", "list", home=li_home).data["runs"]
    assert [r["run_id"] for r in runs] == [parent], runs  # no child was made


@pytest.mark.parametrize("supervisor", SUPERVISORS)
@pytest.mark.parametrize("uid", USERS)
def test_a_leg_is_confined_before_it_enters_a_cwd_that_became_the_store(
        top: Path, uid: int | None, supervisor: str) -> None:
    """The forged record: a run waits in a paused queue with a cwd that is a link to a harmless
    folder; the link is then pointed into the store. Entering its cwd after confining itself, the
    leg finds the hidden store (its cwd is not there: the leg cannot start), never another run's
    prompt or record. A fanout (two legs, the full runner) and a one-leg run (either runner)."""
    li = setup_user(top, uid)
    env = {"LI_SUPERVISOR": supervisor}
    other = li("agent", "--detach", "--label", "ORIGINAL", "sh", "echo OTHER-SECRET; exit 3", env=env)["data"]["run_id"]
    assert li.ended(other)["outcome"] == "failed"
    before = (li.home / "runs" / other / "record.json").read_bytes()
    harmless = top / "harmless"
    harmless.mkdir()
    link = top / "cwd"
    os.symlink(harmless, link)
    if uid is not None:
        for path in (harmless,):
            os.chown(path, uid, uid)
        os.lchown(link, uid, uid)
    assert li("queue", "set", "q", "--parallel", "1")["ok"]
    assert li("queue", "pause", "q")["ok"]
    forge = (f"cat instruction.txt console.log > {top}/stolen-$$ 2>/dev/null; "
             "sed -i 's/\"failed\"/\"succeeded\"/; s/ORIGINAL/FORGED/' record.json 2>/dev/null; "
             "echo '{}' > record.json 2>/dev/null; pwd")
    one = li("agent", "--detach", "--queue", "q", "--cwd", str(link), "sh", forge, env=env)["data"]["run_id"]
    fan = li("orchestrate", "fanout", "--detach", "--queue", "q", "--models", "sh,sh", "--cwd", str(link),
             forge, env=env)["data"]["run_id"]
    os.unlink(link)
    os.symlink(li.home / "runs" / other, link)  # the cwd now leads into the store
    assert li("queue", "resume", "q")["ok"]
    for run_id in (one, fan):
        li.ended(run_id)
    assert (li.home / "runs" / other / "record.json").read_bytes() == before
    assert li.ended(other)["outcome"] == "failed"
    stolen = [p for p in top.iterdir() if p.name.startswith("stolen-")]
    assert all("OTHER-SECRET" not in p.read_text(errors="replace") for p in stolen), stolen
    listed = {r["run_id"]: r for r in li("job", "list")["data"]["runs"]}
    assert (listed[other]["outcome"], listed[other]["label"]) == ("failed", "ORIGINAL"), listed[other]


def test_status_of_a_run_refused_makes_no_run(li_home: str) -> None:
    answer = run_li("agent", "--detach", "--cwd", li_home, "sh", "true", home=li_home)
    assert answer.returncode != 0 and "inside li's store" in answer.stderr, answer
    assert "Traceback" not in answer.stderr
