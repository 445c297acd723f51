"""A second host, as far as `li` can tell: new mount and PID namespaces with their own machine id.

`li` knows a host by `/etc/machine-id` (and the boot id) and sees only the processes of its own
PID namespace; a process started here sees neither this host's id nor its processes. No flag or
variable that only tests use is involved. Needs root (CI runs as root) and util-linux's
`unshare`/`nsenter`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pytest


def require_namespaces() -> None:
    """Skip locally (fail in CI) where a second host cannot be made."""
    missing = [tool for tool in ("unshare", "nsenter", "mount") if shutil.which(tool) is None]
    reason = None
    if os.geteuid() != 0:
        reason = "a second host needs root (new mount and PID namespaces)"
    elif missing:
        reason = f"a second host needs {', '.join(missing)} (util-linux)"
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


class OtherHost:
    """A long-lived namespace pair whose init holds it open; commands run inside with nsenter.

    Stopping it kills every process of the namespace at once, as a host that dies would.
    """

    def __init__(self, workdir: str) -> None:
        require_namespaces()
        self.machine_id = uuid.uuid4().hex
        self._id_file = os.path.join(workdir, "machine-id")
        with open(self._id_file, "w", encoding="ascii") as handle:
            handle.write(self.machine_id + "\n")
        ready = os.path.join(workdir, "host-ready")
        script = (f"mount --make-rprivate / && mount --bind {self._id_file} /etc/machine-id "
                  f"&& touch {ready} && exec sleep infinity")
        self._holder = subprocess.Popen(
            ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "sh", "-c", script],
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while not os.path.exists(ready):
            if self._holder.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the second host did not come up")
            time.sleep(0.02)
        self.init_pid = self._inner_init()

    def _inner_init(self) -> int:
        """The outer pid of the namespace's init (unshare's child, the `sleep`)."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{self._holder.pid}/task/{self._holder.pid}/children", encoding="ascii") as handle:
                    children = handle.read().split()
            except OSError:
                children = []
            if children:
                return int(children[0])
            time.sleep(0.02)
        raise RuntimeError("the second host's init was not found")

    def argv(self, argv: Sequence[str]) -> list[str]:
        return ["nsenter", "-t", str(self.init_pid), "-m", "-p", "--", *argv]

    def run(self, argv: Sequence[str], env: Mapping[str, str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(argv), env=dict(env), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, **kwargs)

    def popen(self, argv: Sequence[str], env: Mapping[str, str], **kwargs: Any) -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(argv), env=dict(env), text=True, **kwargs)

    def stop(self) -> None:
        """The host dies: its namespace's init is killed, and with it every process inside."""
        if self._holder.poll() is None:
            os.killpg(self._holder.pid, signal.SIGKILL)
            self._holder.wait(10)
