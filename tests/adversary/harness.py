"""A canary arena for hostile-work tests: the real `li` against a store the work has tampered with.

Each arena is a temp root holding `home/` (the `LI_HOME`), `outside/` (canary files with unique
text, a canary folder, payloads and a record-shaped JSON naming a live decoy process), `made/`
(what the hostile work itself creates outside the store) and `scratch/` (the tests' own
bookkeeping). Every `li --machine` call goes through `Arena.li`, which bounds it with a timeout
(a hang fails the test), checks the one-envelope contract, and fails at once when any canary
byte, or the digest of a canary file, appears on its stdout or stderr. `Arena.verify` then checks
that nothing outside the store changed (bytes, mode, mtime) and that the decoy was never signalled.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shlex
import shutil
import stat
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from tests.builders import Sleeper
from tests.contract.validate import check_envelope
from tests.support import li_bin

CALL_TIMEOUT = 20.0  # seconds any one `li` call may take before it counts as a hang
PLACEHOLDER = "20000101T000000-000000"  # a run id in payloads, replaced by the real one when planted
RUN_ID_PATTERN = r"^\d{8}T\d{6}-[0-9a-f]{6}$"
TEMPLATE_SCRIPT = "echo adversary-template; exit 3"


class Hang(AssertionError):
    """A `li` call that did not answer within CALL_TIMEOUT."""


class CanaryServed(AssertionError):
    """A `li` call printed bytes of a file outside the store (or the digest of one)."""


def show(value: Any) -> str:
    """An answer in full in a failure message (pytest would shorten a dict)."""
    return json.dumps(value, default=str)[:4000]


def new_run_id() -> str:
    return f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


def li_env(home: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LI_NOTIFY_COMMAND", None)
    env["LI_HOME"] = home
    env["NO_COLOR"] = "1"
    env["LC_ALL"] = "C"
    return env


def call_li(argv: tuple[str, ...], home: str, cwd: str, umask: int | None = None,
            timeout: float = CALL_TIMEOUT) -> tuple[dict[str, Any], bytes, bytes]:
    """`li ARGV --machine` with LI_HOME=home; (envelope, stdout, stderr), the D3/D8 invariants checked."""
    full = (*argv, "--machine")

    def set_umask() -> None:
        if umask is not None:
            os.umask(umask)

    try:
        proc = subprocess.run([li_bin(), *full], capture_output=True, timeout=timeout, env=li_env(home),
                              cwd=cwd, stdin=subprocess.DEVNULL,
                              preexec_fn=set_umask if umask is not None else None)
    except subprocess.TimeoutExpired as exc:
        raise Hang(f"hang: `li {' '.join(full)}` did not answer within {timeout} s") from exc
    assert proc.returncode == 0, (full, proc.returncode, proc.stderr[-2000:])
    text = proc.stdout.decode("utf-8")
    envelope = json.loads(text)
    assert isinstance(envelope, dict), text
    assert text.count("\n") <= 1, f"more than one line on stdout for {full}: {text[:500]!r}"
    assert envelope["contract_version"] == 1, envelope
    assert (envelope["data"] is None) != (envelope["error"] is None), envelope
    assert envelope["ok"] is (envelope["error"] is None), envelope
    assert b"Traceback" not in proc.stderr, (full, proc.stderr[-2000:])
    if envelope["ok"] is False:
        assert envelope["error"]["kind"] != "internal", (full, envelope)
    check_envelope(full, envelope)
    return envelope, proc.stdout, proc.stderr


def snapshot(top: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under `top` (links never followed): kind, mode, mtime_ns and bytes or target."""
    seen: dict[str, tuple[Any, ...]] = {}
    if not top.exists():
        return seen
    for folder, dirs, files in os.walk(top, followlinks=False):
        for name in [*dirs, *files, ""]:
            path = os.path.join(folder, name) if name else folder
            info = os.lstat(path)
            key = os.path.relpath(path, top.parent)
            if stat.S_ISLNK(info.st_mode):
                seen[key] = ("link", info.st_mode, os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                seen[key] = ("file", info.st_mode, info.st_mtime_ns, Path(path).read_bytes())
            elif stat.S_ISDIR(info.st_mode):
                seen[key] = ("dir", info.st_mode, info.st_mtime_ns, tuple(sorted(os.listdir(path))))
            else:
                seen[key] = ("other", info.st_mode, info.st_mtime_ns)
    return seen


def diff(before: dict[str, tuple[Any, ...]], after: dict[str, tuple[Any, ...]]) -> list[str]:
    changed = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old != new:
            def brief(v: tuple[Any, ...] | None) -> Any:
                return None if v is None else tuple(x[:60] if isinstance(x, bytes) else x for x in v)
            changed.append(f"{key}: {brief(old)} -> {brief(new)}")
    return changed


@dataclass
class Template:
    """One real finished run (`sh 'echo adversary-template; exit 3'`), cloned into arenas."""

    home: Path
    run_id: str
    record: dict[str, Any]
    status: dict[str, Any]

    @property
    def run_dir(self) -> Path:
        return self.home / "runs" / self.run_id


def make_template(root: Path) -> Template:
    home = root / "home"
    scratch = root / "scratch"
    scratch.mkdir(parents=True)
    submitted, _, _ = call_li(("agent", "--detach", "--cwd", str(scratch), "sh", TEMPLATE_SCRIPT),
                              str(home), str(scratch))
    run_id = submitted["data"]["run_id"]
    waited, _, _ = call_li(("job", "wait", run_id, "--max-wait", "30", "--poll-interval", "0.1"),
                           str(home), str(scratch), timeout=60)
    assert waited["data"]["all_terminal"] is True, waited
    wait_gone(submitted["data"]["pid"])
    status, _, _ = call_li(("job", "status", run_id), str(home), str(scratch))
    assert status["ok"] and status["data"]["terminal"], status
    record = json.loads((home / "runs" / run_id / "record.json").read_text())
    return Template(home, run_id, record, status["data"])


def eventually(what: str, check: Callable[[], bool], timeout: float = CALL_TIMEOUT) -> None:
    """Poll `check` (an OSError counts as not yet) until it holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.05)


def wait_gone(pid: int, timeout: float = CALL_TIMEOUT) -> None:
    """Until `pid` has exited (or is a zombie nobody reaped yet)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        assert time.monotonic() < deadline, f"the runner {pid} did not end within {timeout} s"
        time.sleep(0.05)


@dataclass
class Arena:
    root: Path
    template: Template
    calls: list[tuple[tuple[str, ...], bytes, bytes]] = field(default_factory=list)
    canaries: list[str] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    decoy: Sleeper | None = None
    _outside_before: dict[str, tuple[Any, ...]] | None = None
    _made_before: dict[str, tuple[Any, ...]] | None = None

    # -- layout -------------------------------------------------------------------------------

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def runs(self) -> Path:
        return self.home / "runs"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    @property
    def made(self) -> Path:
        return self.root / "made"

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    def setup(self) -> Arena:
        for folder in (self.home, self.outside, self.made, self.scratch):
            folder.mkdir(parents=True, exist_ok=True)
        self.runs.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.runs, 0o700)
        os.chmod(self.home, 0o700)
        self.canary_file("secret.txt")
        canary_dir = self.outside / "vault"
        canary_dir.mkdir()
        self.canary_file("vault/notes.txt")
        self.canary_file(f"vault/{self.canary()}.txt")  # a name that must never be listed
        self.canary_file("manifest-secret.json", json_object=True)
        self.decoy = Sleeper(seconds=600)
        record = self.record_naming_decoy(PLACEHOLDER, label=self.canary())
        (self.outside / "decoy-record.json").write_text(json.dumps(record, indent=1))
        dead = self.record_naming_dead_run(PLACEHOLDER, label=self.canary())
        (self.outside / "dead-record.json").write_text(json.dumps(dead, indent=1))
        return self

    def canary(self) -> str:
        text = f"CANARY-{uuid.uuid4().hex}"
        self.canaries.append(text)
        return text

    def canary_file(self, name: str, json_object: bool = False) -> Path:
        """A file outside the store whose bytes (and digest) must never reach any output."""
        text = self.canary()
        body = json.dumps({"run_id": PLACEHOLDER, "schema_version": 1, "secret": text}) if json_object \
            else f"{text}\nsecond line {self.canary()}\n"
        path = self.outside / name
        path.write_text(body)
        self.digests.append(hashlib.sha256(body.encode()).hexdigest())
        return path

    def payload(self, name: str, data: bytes) -> Path:
        """Bytes outside the store that the work (or a hand) copies into a run; never to be served."""
        path = self.outside / "payloads" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        return path

    # -- runs -----------------------------------------------------------------------------------

    def clone(self) -> str:
        """A finished run: the template's folder copied under a new id (record and manifest rewritten)."""
        run_id = new_run_id()
        while (self.runs / run_id).exists():
            run_id = new_run_id()
        target = self.runs / run_id
        shutil.copytree(self.template.run_dir, target, symlinks=True)
        for name in ("record.json", "manifest.json"):
            path = target / name
            data = json.loads(path.read_text())
            data["run_id"] = run_id
            path.write_text(json.dumps(data, indent=1, sort_keys=True))
        return run_id

    def record_naming_decoy(self, run_id: str, label: str | None = None) -> dict[str, Any]:
        """A record of a started, running run whose process is the live decoy (a real incarnation)."""
        assert self.decoy is not None
        inc = self.decoy.incarnation()
        record = dict(self.template.record)
        record.update(run_id=run_id, status="running", outcome=None, finished_at=None, exit_code=None,
                      terminal_source=None, reason_code=None, kill_requested_at=None, label=label,
                      pid=inc.pid, spawn_state="started",
                      incarnation={"host_id": inc.host_id, "boot_id": inc.boot_id, "pid": inc.pid,
                                   "create_time": inc.create_time, "pgid": inc.pgid})
        return record

    def record_naming_dead_run(self, run_id: str, label: str | None = None) -> dict[str, Any]:
        """A record of a started, running run whose process is gone (the template's runner): the first
        reader that trusted it would reap it, writing `exited` into the folder it came from."""
        record = dict(self.template.record)
        record.update(run_id=run_id, status="running", outcome=None, finished_at=None, exit_code=None,
                      terminal_source=None, reason_code=None, kill_requested_at=None, label=label)
        return record

    def submit(self, script: str) -> tuple[str, int]:
        """`li agent --detach --confine off sh SCRIPT`: (run id, runner pid).

        Unconfined: these plants model work that can reach the store (`--confine off`, root's
        work, a kernel that refuses the confinement); with the store hidden it cannot plant at
        all (tests/adversary/test_work_forges.py proves that side)."""
        envelope = self.li("agent", "--detach", "--cwd", str(self.scratch), "--confine", "off", "sh", script)
        assert envelope["ok"], envelope
        return envelope["data"]["run_id"], envelope["data"]["pid"]

    # -- calls ----------------------------------------------------------------------------------

    def li(self, *argv: str, umask: int | None = None, home: Path | None = None) -> dict[str, Any]:
        envelope, out, err = call_li(argv, str(home or self.home), str(self.scratch), umask=umask)
        self.calls.append((argv, out, err))
        self.assert_no_canary(argv, out, err)
        return envelope

    def assert_no_canary(self, argv: tuple[str, ...], out: bytes, err: bytes) -> None:
        for secret in [*self.canaries, *self.digests]:
            for name, stream in (("stdout", out), ("stderr", err)):
                if secret.encode() in stream:
                    raise CanaryServed(f"`li {' '.join(argv)}` served {secret} on {name}: "
                                       f"{stream.decode('utf-8', 'replace')[:800]}")

    # -- the outside ----------------------------------------------------------------------------

    def seal(self) -> None:
        """Take the baseline of `outside/`: from here on, nothing in it may change."""
        self._outside_before = snapshot(self.outside)

    def seal_made(self) -> None:
        """Take the baseline of what the work made outside the store, once it is done planting."""
        self._made_before = snapshot(self.made)

    def verify(self) -> None:
        assert self._outside_before is not None, "seal() was never called"
        changed = diff(self._outside_before, snapshot(self.outside))
        if self._made_before is not None:
            changed += diff(self._made_before, snapshot(self.made))
        assert not changed, "files outside the store changed:\n" + "\n".join(changed)
        self.assert_decoy_alive()

    def assert_decoy_alive(self, context: object = None) -> None:
        assert self.decoy is not None
        time.sleep(0.05)
        code = self.decoy.proc.poll()
        assert code is None, f"the decoy {self.decoy.pid} was signalled (return code {code}); {context or ''}"
        assert psutil.Process(self.decoy.pid).status() != psutil.STATUS_ZOMBIE

    def close(self) -> None:
        if self.decoy is not None:
            self.decoy.stop()


def sh_script(lines: list[str], **variables: str) -> str:
    """A POSIX sh script with `variables` assigned (quoted) first."""
    head = [f"{name}={shlex.quote(value)}" for name, value in variables.items()]
    return "\n".join(["set -u", "LC_ALL=C; export LC_ALL", *head, *lines]) + "\n"
