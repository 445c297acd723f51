"""`adapters/confinement.py` on the real kernel: the store hidden from a leg, as root and as a
non-root user (nobody, through setuid in the forked child: CI runs as root), nested sandboxes
(bwrap, a Landlock self-restriction) still working inside, a process outside out of reach."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lionrun.adapters import confinement

NOBODY = 65534
RUN = "20260101T000000-aaaaaa"
OTHER = "20260101T000000-bbbbbb"

LANDLOCK = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
WRITE_FILE, MAKE_REG = 1 << 1, 1 << 8
attr = (ctypes.c_uint64 * 1)(WRITE_FILE | MAKE_REG)
ruleset = libc.syscall(444, attr, ctypes.c_size_t(8), ctypes.c_uint32(0))
class Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))
allowed = os.open(sys.argv[1], os.O_PATH)
rule = Beneath(WRITE_FILE | MAKE_REG, allowed)
assert libc.syscall(445, ruleset, 1, ctypes.byref(rule), 0) == 0, ctypes.get_errno()
libc.prctl(38, 1, 0, 0, 0)  # no_new_privs, as codex does
assert libc.syscall(446, ruleset, 0) == 0, ctypes.get_errno()
open(os.path.join(sys.argv[1], "inside"), "w").write("ok")
try:
    open(sys.argv[2], "w").write("escaped")
    print("LANDLOCK-DID-NOT-RESTRICT")
except PermissionError:
    print("LANDLOCK-NESTED-OK")
"""


@pytest.fixture
def store() -> Iterator[Path]:
    """A store under a folder every user may traverse (nobody must reach it), with two runs."""
    top = Path(tempfile.mkdtemp(prefix="li-confine-"))
    os.chmod(top, 0o755)
    home = top / "home"
    (home / "runs" / RUN / "artifacts").mkdir(parents=True)
    (home / "runs" / OTHER).mkdir(parents=True)
    (home / "runs" / OTHER / "console.log").write_text("OTHER-RUN-SECRET\n")
    (home / "runs" / RUN / "record.json").write_text("{}")
    (home / "config.toml").write_text('store = "postgresql://li:SECRET@db/li"\n')
    (top / "scratch").mkdir(mode=0o777)
    os.chmod(top / "scratch", 0o777)
    try:
        yield home
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _python_for(uid: int | None) -> str | None:
    """An interpreter the user can run (the venv's may live under root's 0700 home)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if uid is None or _reachable(candidate, uid):
            return candidate
    return None


def _reachable(path: str, uid: int) -> bool:
    try:
        probe = subprocess.run([path, "-c", "pass"], user=uid, group=uid, extra_groups=[], capture_output=True,
                               check=False)
    except OSError:
        return False
    return probe.returncode == 0


def confined_sh(home: Path, script: str, uid: int | None) -> tuple[int, str]:
    """Fork; in the child become `uid` (when given), confine, exec `sh -c script`; (exit, output)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            os.dup2(write, 1)
            os.dup2(write, 2)
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            confinement.confine(str(home), str(home / "runs" / RUN / "artifacts"))
            os.execvp("sh", ["sh", "-c", script])
        except BaseException as exc:  # noqa: BLE001 - the child only reports
            os.write(2, f"CONFINE-FAILED {exc!r}".encode())
        finally:
            os._exit(126)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode()


USERS = [pytest.param(None, id="as-self"), pytest.param(NOBODY, id="as-nobody")]


def _user(uid: int | None) -> None:
    if uid is not None and os.geteuid() != 0:
        pytest.skip("running a leg as another user needs root (CI runs as root)")
    if confinement.probe(tempfile.gettempdir()) is not None:
        pytest.fail("the kernel refuses the confinement here") if os.environ.get("CI") == "true" else \
            pytest.skip("the kernel refuses user/mount namespaces here")


@pytest.mark.parametrize("uid", USERS)
def test_the_store_is_out_of_reach_but_the_own_artifacts_folder(store: Path, uid: int | None) -> None:
    _user(uid)
    if uid is not None:
        for folder, dirs, files in os.walk(store):
            for name in [*dirs, *files, ""]:
                os.chown(os.path.join(folder, name) if name else folder, uid, uid)
    other = (subprocess.Popen(["sleep", "30"]) if uid is None
             else subprocess.Popen(["sleep", "30"], user=uid, group=uid, extra_groups=[]))
    # Root keeps CAP_SYS_PTRACE, so /proc/PID/root of a process outside is root's way around the
    # tmpfs (docs/architecture.md says so); a non-root leg is refused it.
    around = "" if uid is None else f"cat /proc/{other.pid}/root{store}/runs/{OTHER}/console.log || echo NO-PROC-ROOT"
    try:
        code, out = confined_sh(store, f"""
            cat {store}/runs/{OTHER}/console.log || echo NO-OTHER-CONSOLE
            cat {store}/config.toml || echo NO-CONFIG
            echo forged > {store}/runs/{RUN}/record.json || echo NO-RECORD-WRITE
            mkdir {store}/runs/{OTHER}2 || echo NO-MKDIR
            echo answer > {store}/runs/{RUN}/artifacts/out.txt && echo ARTIFACT-WRITTEN
            {around}
            touch {store.parent}/scratch/outside && echo OUTSIDE-WRITTEN
            echo "uid=$(id -u)"
        """, uid)
    finally:
        other.kill()
        other.wait()
    assert code == 0, out
    for said in ("NO-OTHER-CONSOLE", "NO-CONFIG", "NO-RECORD-WRITE", "NO-MKDIR", "ARTIFACT-WRITTEN",
                 "OUTSIDE-WRITTEN", f"uid={os.geteuid() if uid is None else uid}"):
        assert said in out, out
    assert "OTHER-RUN-SECRET" not in out and "SECRET@" not in out, out
    if uid is not None:
        assert "NO-PROC-ROOT" in out, out
    assert (store / "runs" / RUN / "artifacts" / "out.txt").read_text() == "answer\n"
    assert (store / "runs" / RUN / "record.json").read_text() == "{}"
    assert not (store / "runs" / f"{OTHER}2").exists()


@pytest.mark.parametrize("uid", USERS)
def test_nested_sandboxes_keep_working_inside_a_confined_leg(store: Path, uid: int | None) -> None:
    """Claude Code's bubblewrap and codex's Landlock inside the work (a tiny self-restriction)."""
    _user(uid)
    python = _python_for(uid)
    if python is None:
        pytest.skip("no Python interpreter this user can run")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        if os.environ.get("CI") == "true":
            pytest.fail("bwrap is missing: .ci/run installs bubblewrap")
        pytest.skip("apt-get install bubblewrap")
    scratch = store.parent / "scratch"
    script = scratch / "landlock.py"
    script.write_text(LANDLOCK)
    allowed = scratch / f"allowed-{uid}"
    allowed.mkdir(mode=0o777)
    os.chmod(allowed, 0o777)
    code, out = confined_sh(store, f"""
        {bwrap} --ro-bind / / --dev /dev --proc /proc --unshare-user --unshare-pid \
            sh -c 'echo BWRAP-INSIDE; cat {store}/runs/{OTHER}/console.log || echo BWRAP-NO-STORE'
        {python} {script} {allowed} {scratch}/denied-{uid}
    """, uid)
    assert code == 0, out
    assert "BWRAP-INSIDE" in out and "BWRAP-NO-STORE" in out and "LANDLOCK-NESTED-OK" in out, out
    assert "OTHER-RUN-SECRET" not in out, out
    assert (allowed / "inside").read_text() == "ok"
    assert not (scratch / f"denied-{uid}").exists()


def test_a_kernel_refusal_is_said_in_one_line(tmp_path: Path) -> None:
    """A store that does not exist cannot be hidden: the probe says why, it never raises."""
    why = confinement.probe(str(tmp_path / "absent"))
    assert why is not None and "\n" not in why and why


def test_a_yes_is_asked_of_the_kernel_once_a_refusal_every_time(tmp_path: Path, monkeypatch) -> None:
    asked: list[str] = []
    real = confinement._probe

    def counted(home: str) -> str | None:
        asked.append(home)
        return real(home)

    monkeypatch.setattr(confinement, "_probe", counted)  # a test's seam: this module's own function
    absent = str(tmp_path / "absent")
    assert confinement.probe(absent) is not None and confinement.probe(absent) is not None
    assert asked == [absent, absent]  # the store may be made meanwhile: asked again
    home = tmp_path / "home"
    home.mkdir()
    first = confinement.probe(str(home))
    if first is not None:
        pytest.skip(f"this kernel does not confine: {first}")
    assert confinement.probe(str(home)) is None and asked == [absent, absent, str(home)]
