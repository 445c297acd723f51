"""The ports speak the domain: no signal number, no raw descriptor crosses them."""

from __future__ import annotations

import ast
import signal
from pathlib import Path
from typing import get_args

import lionrun.application.ports as ports
from lionrun.adapters.processes import SIGNALS

PORTS = Path(ports.__file__)
KERNEL_NAMES = {"signum", "signal_number", "pass_fds", "descriptor", "fd", "fds"}


def named_on_ports() -> list[tuple[str, str, int]]:
    """(name, its annotation, line) of every field, parameter and module constant of the ports."""
    found: list[tuple[str, str, int]] = []
    for node in ast.walk(ast.parse(PORTS.read_text(encoding="utf-8"))):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.append((node.target.id, ast.unparse(node.annotation), node.lineno))
        elif isinstance(node, ast.Assign):
            found += [(t.id, "", node.lineno) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.arg):
            found.append((node.arg, "" if node.annotation is None else ast.unparse(node.annotation), node.lineno))
    return found


def test_no_port_names_a_signal_number_or_a_descriptor() -> None:
    kernel = [(name, note, line) for name, note, line in named_on_ports()
              if name in KERNEL_NAMES or name.endswith(("_fd", "_fds")) or name.startswith("SIG")
              or (name in {"stdout", "stderr", "stdin"} and "int" in note)]
    assert kernel == [], f"application/ports.py carries the kernel's numbers, not the domain's: {kernel}"


def test_the_signaller_alone_knows_the_signal_of_each_stop() -> None:
    assert set(SIGNALS) == set(get_args(ports.Stop))
    assert SIGNALS == {"terminate": signal.SIGTERM, "kill": signal.SIGKILL}
