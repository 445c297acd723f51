"""D5 — submit: features/d05_submit.feature; @cli scenarios drive the real `li`, the rest run on both worlds."""

from pytest_bdd import scenarios

from tests.worlds import on_both_worlds_unless_cli

scenarios("d05_submit.feature")


on_both_worlds_unless_cli(globals())


# -- an idempotent submit (@cli: the real li) --------------------------------------------

import json  # noqa: E402 - the steps of one scenario, kept together
import os  # noqa: E402
import subprocess  # noqa: E402
from typing import Any  # noqa: E402

from pytest_bdd import parsers, then, when  # noqa: E402

from tests.support import li_bin, machine  # noqa: E402


@when(parsers.parse('a program submits "{command}" with idempotency key "{key}" while its stdout refuses the envelope'),
      target_fixture="keyed")
def _submit_into_a_full_stdout(li_home: str, command: str, key: str) -> dict[str, Any]:
    argv = [li_bin(), "agent", "--machine", "--detach", "--idempotency-key", key, "sh", command]
    with open("/dev/full", "w") as full:
        done = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              env={**os.environ, "LI_HOME": li_home}, timeout=60)
    return {"exit": done.returncode}


def _runs(li_home: str) -> list[str]:
    return [row["run_id"] for row in machine("job", "list", home=li_home).data["runs"]]


@then("li exits 74 and exactly one run exists")
def _74_and_one_run(keyed: dict[str, Any], li_home: str) -> None:
    assert keyed["exit"] == 74
    keyed["runs"] = _runs(li_home)
    assert len(keyed["runs"]) == 1


@when(parsers.parse('the program submits "{command}" with idempotency key "{key}" again'))
def _submit_again(keyed: dict[str, Any], li_home: str, command: str, key: str) -> None:
    result = machine("agent", "--detach", "--idempotency-key", key, "sh", command, home=li_home)
    keyed["answer"] = json.loads(result.stdout)


@then("the answer names that run as replayed and exactly one run exists")
def _replayed(keyed: dict[str, Any], li_home: str) -> None:
    data = keyed["answer"]["data"]
    assert (data["run_id"], data["replayed"]) == (keyed["runs"][0], True)
    assert _runs(li_home) == keyed["runs"]


@then("the answer is refused as conflict naming that run")
def _conflict(keyed: dict[str, Any], li_home: str) -> None:
    error = keyed["answer"]["error"]
    assert error["kind"] == "conflict" and error["detail"]["run_id"] == keyed["runs"][0]
    assert _runs(li_home) == keyed["runs"]
