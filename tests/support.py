"""Test helpers: drive the real `li` (or `$LI_BIN`) and build containers over real or in-memory adapters."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def li_bin() -> str:
    """`$LI_BIN` when it is an absolute path, else the `li` installed beside this interpreter."""
    env = os.environ.get("LI_BIN", "")
    if env and os.path.isabs(env):
        return env
    beside = os.path.join(os.path.dirname(sys.executable), "li")
    if os.path.exists(beside):
        return beside
    found = shutil.which("li")
    if not found:
        raise RuntimeError("no li executable: install the project or set LI_BIN")
    return os.path.abspath(found)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    @property
    def envelope(self) -> dict[str, Any]:
        """The one JSON object on stdout; fails the test when there is anything else."""
        value = json.loads(self.stdout)
        assert isinstance(value, dict), self.stdout
        return value

    @property
    def data(self) -> dict[str, Any]:
        envelope = self.envelope
        assert envelope["ok"] is True, envelope
        return envelope["data"]

    @property
    def error(self) -> dict[str, Any]:
        envelope = self.envelope
        assert envelope["ok"] is False, envelope
        return envelope["error"]


def install_li(path: Any, script: str) -> str:
    """Put an executable `li` shell script at `path` atomically (replacing any) and return its path.

    Replacing it later swaps the build behind the path, as an upgrade in place would.
    """
    staged = f"{path}.new"
    with open(staged, "w", encoding="utf-8") as handle:
        handle.write(f"#!/bin/sh\n{script}\n")
    os.chmod(staged, 0o755)
    os.replace(staged, path)
    return str(path)


def fake_cli_path(folder: Any, name: str, script: str) -> str:
    """A PATH whose first folder (`folder`/bin, made here) holds `name`: an executable `script`
    standing in for an agent CLI; the rest is this process's PATH."""
    bin_dir = os.path.join(str(folder), "bin")
    os.mkdir(bin_dir)
    executable = os.path.join(bin_dir, name)
    with open(executable, "w", encoding="utf-8") as handle:
        handle.write(script)
    os.chmod(executable, os.stat(executable).st_mode | 0o100)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def run_li(*argv: str, home: str | None = None, stdin: str | None = None, env: dict[str, str] | None = None,
           timeout: float = 60, cwd: str | None = None) -> Result:
    """Run `li` as a subprocess with `LI_HOME` pointed at `home`."""
    full_env = dict(os.environ)
    full_env.pop("LI_NOTIFY_COMMAND", None)
    if home is not None:
        full_env["LI_HOME"] = home
    full_env.update(env or {})
    proc = subprocess.run(
        [li_bin(), *argv], input=stdin, capture_output=True, text=True, timeout=timeout,
        env=full_env, cwd=cwd, stdin=None if stdin is not None else subprocess.DEVNULL,
    )
    if proc.returncode == 0:
        _check_envelope(argv, proc.stdout)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _check_envelope(argv: tuple[str, ...], stdout: str) -> None:
    """Run ENVELOPE_HOOKS on a v1 envelope answering a `--machine` request (any other output is left
    to the calling test's own assertions)."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    if "--machine" not in words:
        return
    try:
        envelope = json.loads(stdout)
    except ValueError:
        return
    if isinstance(envelope, dict) and envelope.get("contract_version") == 1:
        for hook in ENVELOPE_HOOKS:
            hook(argv, envelope)


def machine(*argv: str, **kwargs: Any) -> Result:
    """`li ... --machine`, asserting the D3/D8 invariants every call must keep."""
    result = run_li(*argv, "--machine", **kwargs)
    assert result.returncode == 0, (argv, result.returncode, result.stderr)
    envelope = result.envelope
    assert envelope["contract_version"] == 1
    assert (envelope["data"] is None) != (envelope["error"] is None), envelope
    return result  # ENVELOPE_HOOKS already ran on it in run_li


def envelope_of(result: Result) -> dict[str, Any]:
    """The v1 envelope of a `--machine` call that exited 0."""
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    value = json.loads(result.stdout)
    assert value["contract_version"] == 1
    return value


def submit_detached(home: str, *argv: str) -> str:
    """`li agent --detach ARGV --machine`; the new run's id."""
    return machine("agent", "--detach", *argv, home=home).data["run_id"]


def status_data(home: str, run_id: str) -> dict[str, Any]:
    return machine("job", "status", run_id, home=home).data


def wait_terminal(home: str, run_id: str, timeout: float = 15.0) -> dict[str, Any]:
    """Poll `li job status` until the run is terminal or `timeout` passes; the last answer."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        data = status_data(home, run_id)
        if data["terminal"] or time.monotonic() > deadline:
            return data
        time.sleep(0.1)


def _schema_check(argv: tuple[str, ...], envelope: dict[str, Any]) -> None:
    """Every envelope `run_li`/`machine()` sees is validated against its verb's published schema."""
    from tests.contract.validate import check_envelope

    check_envelope(argv, envelope)


# Called with (argv, envelope) for every v1 envelope a `--machine` call through `run_li`/`machine()`
# returns with exit 0; tests may append their own checks.
ENVELOPE_HOOKS: list[Any] = [_schema_check]
