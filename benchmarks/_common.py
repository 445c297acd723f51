"""Shared by the benchmarks: a regular install in a temp venv, one timed child, envelopes, output.

Nothing here imports lionrun: the benchmarks drive `li` as a user does, through its executable.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)  # tools.synthetic (it writes records in this checkout's format)


@dataclass
class Sample:
    cpu: float  # user + sys seconds of the whole child (and of any child it waited for)
    wall: float
    maxrss_kb: int
    returncode: int
    stdout: str
    stderr: str
    timed_out: float | None = None


def spawn(argv: Sequence[str], env: dict[str, str], stdin: str | None = None,
          timeout: float = 120.0) -> Sample:
    """Run argv once, stdout/stderr to temp files, reaped with os.wait4 for its resource usage.

    A child still running after `timeout` seconds is SIGKILLed (and said so by `timed_out`).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryFile() as inp:
        if stdin is not None:
            inp.write(stdin.encode())
            inp.seek(0)
            source = inp.fileno()
        else:
            source = os.open(os.devnull, os.O_RDONLY)
        try:
            actions = [(os.POSIX_SPAWN_DUP2, source, 0), (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
                       (os.POSIX_SPAWN_DUP2, err.fileno(), 2)]
            start = time.perf_counter()
            pid = os.posix_spawn(argv[0], list(argv), env, file_actions=actions)
            timer = threading.Timer(timeout, os.kill, (pid, signal.SIGKILL))
            timer.start()
            try:
                _, status, usage = os.wait4(pid, 0)
            finally:
                timer.cancel()
            wall = time.perf_counter() - start
        finally:
            if stdin is None:
                os.close(source)
        out.seek(0)
        err.seek(0)
        return Sample(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss,
                      os.waitstatus_to_exitcode(status),
                      out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                      timeout if wall >= timeout else None)


def envelope_problem(sample: Sample, want: str | None = None) -> str | None:
    """None when stdout is one ok envelope (holding data[want] if given), else why not."""
    if sample.timed_out:
        return f"no answer within {sample.timed_out:g} s (killed)"
    try:
        envelope = json.loads(sample.stdout)
    except ValueError:
        tail = (sample.stderr.strip().splitlines() or [""])[-1][:100]
        return f"exit {sample.returncode}, no envelope on stdout ({tail!r})"
    if not isinstance(envelope, dict) or "ok" not in envelope:
        return f"exit {sample.returncode}, stdout is JSON but not an envelope"
    if envelope["ok"] is not True:
        error = envelope.get("error") or {}
        return f"refused: {error.get('kind')}: {str(error.get('message'))[:100]}"
    if want and not (isinstance(envelope.get("data"), dict) and want in envelope["data"]):
        return f"ok envelope without data.{want}"
    return None


def envelope_data(sample: Sample) -> dict[str, Any]:
    data = json.loads(sample.stdout).get("data")
    return data if isinstance(data, dict) else {}


def interpreter_of(li: str) -> str | None:
    """The interpreter a console-script `li` names in its shebang, as named (a venv's python, whose
    site-packages hold li's libraries), or None for an li that is no Python script."""
    try:
        with open(li, "rb") as handle:
            first = handle.readline(4096).decode(errors="replace").strip()
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    found = words[0] if words and "python" in os.path.basename(words[0]) else None
    return found if found is not None and os.path.isabs(found) and os.path.exists(found) else None


def python_of(li: str) -> str:
    """The interpreter a console-script `li` runs on (its shebang), resolved; else ours."""
    return os.path.realpath(interpreter_of(li) or sys.executable)


def regular_install(rev: str, root: str, quick: bool = False) -> tuple[str, str]:
    """A non-editable `pip install` of `git archive <rev>` of this repository into a temp venv.

    Returns (li path, the resolved commit). Uncommitted changes are not part of what is measured.
    The `postgresql` extra is installed too (psycopg), so a benchmark can measure the shared store;
    a read of the filesystem store never imports it.
    `quick` (figures that mean nothing) saves time: no byte-compiling, and no isolated build
    environment when the venv's own setuptools (and wheel) can build the project.
    """
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--verify", f"{rev}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    source, venv = os.path.join(root, "src"), os.path.join(root, "venv")
    os.makedirs(source)
    archive = subprocess.run(["git", "-C", REPO, "archive", "--format=tar", commit],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", source], input=archive, check=True)
    print(f"installing {commit[:12]} (regular, non-editable) into {venv} ...", file=sys.stderr)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    python = os.path.join(venv, "bin", "python")
    options = []
    if quick:
        options.append("--no-compile")
        has_setuptools = subprocess.run(
            [python, "-c", "import setuptools, sys, wheel; sys.exit(int(setuptools.__version__.split('.')[0]) < 61)"],
            capture_output=True, check=False).returncode == 0
        if has_setuptools:
            options.append("--no-build-isolation")
    done = subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           *options, f"{source}[postgresql]"], capture_output=True, text=True, check=False)
    if done.returncode:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"pip install of {commit[:12]} failed (exit {done.returncode})")
    print(f"  installed in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return os.path.join(venv, "bin", "li"), commit


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--rev", default="HEAD",
                       help="git revision of this repository to install and measure (default HEAD)")
    group.add_argument("--li", help="absolute path of an already-installed li to measure instead")
    parser.add_argument("--out", help="where to write the JSON (default build/bench/<name>.json)")
    parser.add_argument("--quick", action="store_true",
                        help="few repeats, small sizes: checks the calls answer and the JSON is "
                             "written; the figures mean nothing")


@dataclass
class Target:
    li: str
    python: str
    commit: str | None
    label: str


def resolve_target(args: argparse.Namespace, root: str) -> Target:
    """The li under measure: the given one, or a fresh regular install of --rev under root."""
    if args.li:
        if not os.path.isabs(args.li) or not os.access(args.li, os.X_OK):
            raise SystemExit(f"--li must be an absolute path to an executable: {args.li}")
        return Target(args.li, python_of(args.li), None, f"installed li at {args.li}")
    li, commit = regular_install(args.rev, os.path.join(root, "install"), quick=args.quick)
    return Target(li, python_of(li), commit, f"regular install of {commit[:12]}")


def clean_env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LI_", "PYTHON")) and k not in ("VIRTUAL_ENV",)}
    env.update({"LI_HOME": home, "HOME": home, "NO_COLOR": "1"})  # HOME too: a peer may keep state there
    return env


def machine_facts() -> dict[str, Any]:
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in load],
            "uname": " ".join(os.uname()[i] for i in (0, 2, 4)),
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def write_json(path: str | None, name: str, payload: dict[str, Any]) -> str:
    path = path or os.path.join(REPO, "build", "bench", f"{name}.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=1, sort_keys=True)
        handle.write("\n")
    return path


def load_targets() -> dict[str, Any]:
    import tomllib

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets.toml"), "rb") as handle:
        return tomllib.load(handle)


def gone(pid: int) -> bool:
    """True once pid has exited (or is a zombie nobody of ours will reap)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def watching(pid: int) -> bool:
    """Whether the process holds an inotify descriptor (its watch is set up, so it is waiting)."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for name in names:
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}") == "anon_inode:inotify":
                return True
        except OSError:
            continue
    return False


def wait_gone(pids: Sequence[int], timeout: float) -> list[int]:
    """Waits until every pid has exited; returns those still alive at the timeout."""
    deadline = time.monotonic() + timeout
    left = [p for p in pids if p > 0]
    while left and time.monotonic() < deadline:
        left = [p for p in left if not gone(p)]
        if left:
            time.sleep(0.05)
    return left


def temp_root(prefix: str) -> str:
    return tempfile.mkdtemp(prefix=prefix)


def remove(root: str) -> None:
    shutil.rmtree(root, ignore_errors=True)


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---" if i == 0 else "---:" for i in range(len(header))) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
