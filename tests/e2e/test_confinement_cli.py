"""Through the real `li`: the store hidden from a run's work, said on the record and in
`li job status`; `--confine` and config.toml's `confine`; nested sandboxes inside a confined run."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_confinement import LANDLOCK
from tests.support import machine


def submit(home: str, script: str, *extra: str) -> str:
    return str(machine("agent", "--detach", *extra, "sh", script, home=home).data["run_id"])


def ended(home: str, run_id: str) -> dict[str, Any]:
    waited = machine("job", "wait", run_id, "--max-wait", "30", "--poll-interval", "0.1", home=home).data
    assert waited["all_terminal"] is True, waited
    return machine("job", "status", run_id, home=home).data  # type: ignore[no-any-return]


def console(home: str, run_id: str) -> str:
    return json.dumps(machine("job", "output", run_id, home=home).data)


def test_a_confined_run_reads_no_other_run_and_nested_sandboxes_still_work(li_home: str, tmp_path: Path) -> None:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        if os.environ.get("CI") == "true":
            pytest.fail("bwrap is missing: .ci/run installs bubblewrap")
        pytest.skip("apt-get install bubblewrap")
    other = submit(li_home, "echo OTHER-RUN-SECRET")
    ended(li_home, other)
    script = tmp_path / "landlock.py"
    script.write_text(LANDLOCK)
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    run_id = submit(li_home, f"""
        cat "$LI_HOME/runs/{other}/console.log" || echo NO-OTHER-CONSOLE
        echo '{{}}' > "$LI_HOME/runs/{other}/record.json" || echo NO-RECORD-WRITE
        echo mine > "$LI_ARTIFACTS_DIR/mine.txt" && echo ARTIFACT-WRITTEN
        {bwrap} --ro-bind / / --dev /dev --proc /proc --unshare-user --unshare-pid sh -c 'echo BWRAP-INSIDE'
        python3 {script} {allowed} {tmp_path}/denied
    """)
    status = ended(li_home, run_id)
    assert (status["confinement"], status["confinement_detail"], status["outcome"]) == (
        "store_hidden", None, "succeeded"), status
    said = console(li_home, run_id)
    for marker in ("NO-OTHER-CONSOLE", "NO-RECORD-WRITE", "ARTIFACT-WRITTEN", "BWRAP-INSIDE", "LANDLOCK-NESTED-OK"):
        assert marker in said, said
    assert "OTHER-RUN-SECRET" not in said
    assert ended(li_home, other)["outcome"] == "succeeded"  # its record untouched
    assert "mine.txt" in said  # the output's artifact listing names what the work wrote


def test_confine_off_and_required_and_config_toml_are_said(li_home: str) -> None:
    off = submit(li_home, 'ls "$LI_HOME/runs" | wc -l', "--confine", "off")
    status = ended(li_home, off)
    assert (status["confinement"], status["confinement_detail"]) == ("none", "--confine off"), status
    assert "the work runs unconfined" in console(li_home, off)
    required = submit(li_home, "true", "--confine", "required")
    assert ended(li_home, required)["confinement"] == "store_hidden"
    Path(li_home, "config.toml").write_text('confine = "off"\n')
    configured = submit(li_home, "true")
    assert ended(li_home, configured)["confinement"] == "none"
    overridden = submit(li_home, "true", "--confine", "auto")
    assert ended(li_home, overridden)["confinement"] == "store_hidden"


@pytest.mark.parametrize("argv", [("--confine", "sometimes"), ("--confine=",)])
def test_an_unknown_confine_mode_is_refused(li_home: str, argv: tuple[str, ...]) -> None:
    answer = machine("agent", "--detach", *argv, "sh", "true", home=li_home)
    assert answer.envelope["ok"] is False and answer.envelope["error"]["kind"] == "invalid_input", answer.envelope


@pytest.mark.parametrize("marker", ["", "li-broker-20261205T000000-abcdef-0000000000000000\n"])
def test_an_li_that_finds_the_store_hidden_and_no_broker_says_so_never_that_it_is_empty(
        tmp_path: Path, marker: str) -> None:
    """What a work's `li` answers when the store is hidden and no broker acts for it (an empty
    marker, or a broker gone with its run's head): `unavailable` with why, so a listing never
    reads as "no runs", a submit makes none. (With a broker, tests/e2e/test_nested_runs.py.)"""
    from tests.support import run_li

    hidden = tmp_path / "hidden-home"
    hidden.mkdir()
    (hidden / ".li-store-hidden").write_text(marker)
    for argv in (("job", "list"), ("job", "status", "20261205T000000-abcdef"), ("agent", "--detach", "sh", "true")):
        result = run_li(*argv, "--machine", home=str(hidden))
        answer = json.loads(result.stdout)
        assert answer["ok"] is False and answer["error"]["kind"] == "unavailable", answer
        assert "hidden from this run's work" in answer["error"]["message"], answer
        assert ("did not answer" in result.stderr) == bool(marker), result.stderr
    assert sorted(os.listdir(hidden)) == [".li-store-hidden"]  # nothing made beside the marker
