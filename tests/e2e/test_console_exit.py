"""The `li` console script leaves through os._exit after flushing (no interpreter teardown):
every byte still arrives and every exit status is kept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import REPO, li_bin, run_li


@pytest.mark.skipif(bool(os.environ.get("LI_BIN")), reason="inspects lionrun's own console script")
def test_the_installed_script_enters_through_console() -> None:
    with open(li_bin(), encoding="utf-8") as handle:
        assert "from lionrun.entrypoints.bootstrap import console" in handle.read()


@pytest.mark.skipif(bool(os.environ.get("LI_BIN")), reason="compares with lionrun's own interpreter")
def test_a_long_human_answer_through_a_pipe_is_what_a_full_teardown_gives(li_home: str) -> None:
    result = run_li("job", "--help", home=li_home)
    torn_down = subprocess.run([sys.executable, "-c", "import sys; from lionrun.entrypoints.bootstrap import main; "
                                "sys.exit(main(['job', '--help']))"], cwd=REPO, capture_output=True, text=True,
                               env={**os.environ, "LI_HOME": li_home}, stdin=subprocess.DEVNULL, timeout=60)
    assert len(result.stdout) > 300 and (result.returncode, result.stdout) == (torn_down.returncode, torn_down.stdout)


def test_a_human_refusal_keeps_its_exit_status_and_its_one_line(li_home: str) -> None:
    result = run_li("job", "status", "20991231T235959-abcdef", home=li_home)
    assert result.returncode == 3 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and "20991231T235959-abcdef" in result.stderr


def test_a_machine_answer_arrives_whole_with_exit_zero(li_home: str) -> None:
    result = run_li("job", "list", "--machine", home=li_home)
    assert result.returncode == 0 and result.stdout.endswith("}\n") and result.stdout.count("\n") == 1
