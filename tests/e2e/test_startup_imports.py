"""Start-up is part of the product: help, version and handshake never load the heavy dependencies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.support import REPO, run_li

pytestmark = pytest.mark.skipif(bool(os.environ.get("LI_BIN")), reason="inspects lionrun's own interpreter")

HEAVY = {"pydantic", "psutil", "filelock", "dependency_injector"}
LIGHT_CALLS = [("--help",), ("--version",), ("handshake", "--machine"), ("handshake",),
               ("--help", "--machine"), ("--version", "--machine"), ("no-such-command", "--machine")]


def imported_top_levels(importtime_stderr: str) -> set[str]:
    """Top-level package names from `-X importtime` lines: `import time: self | cumulative | name`."""
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            names.add(name.split(".")[0])
    return names


@pytest.mark.parametrize("argv", LIGHT_CALLS, ids=[" ".join(a) for a in LIGHT_CALLS])
def test_the_installed_li_imports_no_heavy_dependency_for_light_calls(argv: tuple[str, ...], li_home: str) -> None:
    result = run_li(*argv, home=li_home, env={"PYTHONPROFILEIMPORTTIME": "1"})
    names = imported_top_levels(result.stderr)
    assert "entrypoints" in names, "importtime produced no report; the check would prove nothing"
    assert names & HEAVY == set(), sorted(names & HEAVY)


def test_a_status_read_does_load_them_so_the_check_can_see_an_import(li_home: str) -> None:
    # The converse, so the test above cannot pass merely because nothing is ever reported.
    result = run_li("agent", "sh", "true", "--detach", "--machine", home=li_home, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert imported_top_levels(result.stderr) & HEAVY


MODULES_AFTER = textwrap.dedent("""
    import json, sys
    from entrypoints.bootstrap import main
    code = main(sys.argv[2:])
    with open(sys.argv[1], "w") as handle:
        json.dump(sorted(sys.modules), handle)
    sys.exit(code)
""")


@pytest.mark.parametrize("argv", LIGHT_CALLS, ids=[" ".join(a) for a in LIGHT_CALLS])
def test_sys_modules_after_a_light_call_holds_no_heavy_dependency(argv: tuple[str, ...], tmp_path: object) -> None:
    report = os.path.join(str(tmp_path), "modules.json")
    subprocess.run([sys.executable, "-c", MODULES_AFTER, report, *argv], cwd=REPO, capture_output=True,
                   stdin=subprocess.DEVNULL, timeout=60, check=False)
    with open(report) as handle:
        loaded = {name.split(".")[0] for name in json.load(handle)}
    assert "entrypoints" in loaded
    assert loaded & HEAVY == set(), sorted(loaded & HEAVY)
