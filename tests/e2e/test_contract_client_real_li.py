"""The contract client against the real `li` (or `$LI_BIN`): every answer classified as the ADR says."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Sequence

import pytest

from lionrun.adapters.contract_client import (
    Branch,
    Completed,
    ContractClient,
    Evidence,
    SubprocessRunner,
    SurfaceState,
    UnresolvedPolicy,
    Verdict,
    read_availability,
    run_view,
)
from tests.support import REPO, install_li, li_bin

UNKNOWN_ID = "20200101T000000-000000"


@pytest.fixture
def env(li_home: str) -> dict[str, str]:
    return {**os.environ, "LI_HOME": li_home}


@pytest.fixture
def client(env: dict[str, str]) -> ContractClient:
    policy = UnresolvedPolicy(max_attempts=3, backoff_initial=0.05)
    connected = ContractClient(li_bin(), runner=SubprocessRunner(env), policy=policy)
    assert connected.handshake().registered
    return connected


def submit(client: ContractClient, command: str) -> str:
    reply = client.submit_agent(command, "sh", label="client-e2e")
    assert reply.ok and reply.data is not None, reply
    assert run_view(reply.data).branch is Branch.NOT_ENDED
    return str(reply.data["run_id"])


def settle_one(client: ContractClient, run_id: str) -> Branch:
    report = client.settle([run_id], max_wait=30, poll_interval=0.1)
    assert report.settled and report.runs, report
    return report.runs[0].branch


def test_the_real_li_handshakes_at_a_version_the_client_understands(client: ContractClient) -> None:
    hello = client.handshake()
    assert hello.registered and hello.reply.data is not None
    assert hello.reply.data["contract_version"] == 1 and client.state is SurfaceState.TRUSTED


def test_a_successful_sh_run_settles_as_succeeded_with_its_artifact(client: ContractClient) -> None:
    run_id = submit(client, 'echo answer > "$LI_ARTIFACTS_DIR/answer.txt"')
    assert settle_one(client, run_id) is Branch.SUCCEEDED
    output = client.output(run_id)
    assert output.ok and output.data is not None
    artifacts = read_availability(output.data["artifacts"])
    assert artifacts.evidence is Evidence.PRESENT
    assert [a["name"] for a in artifacts.value] == ["answer.txt"]
    assert pathlib.Path(artifacts.value[0]["path"]).read_text() == "answer\n"


def test_a_failing_sh_run_settles_as_failed(client: ContractClient) -> None:
    run_id = submit(client, "exit 3")
    assert settle_one(client, run_id) is Branch.FAILED
    status = client.status(run_id)
    assert status.data is not None and isinstance(status.data["status"], str)


def test_a_killed_run_never_settles_as_a_success(client: ContractClient) -> None:
    run_id = submit(client, "sleep 30")
    killed = client.kill(run_id)
    assert killed.ok and killed.data is not None
    assert killed.data["action"] in ("signalled", "already_terminal", "no_process")
    assert settle_one(client, run_id) not in (Branch.SUCCEEDED, Branch.NOT_ENDED)


def test_an_unknown_run_is_refused_as_not_found(client: ContractClient) -> None:
    reply = client.status(UNKNOWN_ID)
    assert reply.verdict is Verdict.REFUSED and reply.error is not None
    assert reply.error["kind"] == "not_found"


def test_an_unknown_id_in_a_wait_is_a_per_id_error(client: ContractClient) -> None:
    report = client.settle([UNKNOWN_ID], max_wait=1, poll_interval=0.1)
    # An id of no run is an error for that id, never "settled", and not waited on again
    assert not report.settled and UNKNOWN_ID in report.errors and report.abandoned == [] and report.waiting_on == []


def test_a_malformed_id_is_refused_as_invalid_input(client: ContractClient) -> None:
    reply = client.status("../../etc/passwd")
    assert reply.verdict is Verdict.REFUSED and reply.error is not None
    assert reply.error["kind"] == "invalid_input"


def test_a_run_that_produces_nothing_ends_failed_whatever_its_status_says(env: dict[str, str]) -> None:
    # An agent whose answer is empty (completed_empty): shell work that exits 0 is a success now,
    # whatever it printed, so "nothing" is an agent's empty answer (the fake claude's `empty`).
    fakes = os.path.join(REPO, "tests", "fakes", "bin")
    agent_env = {**env, "PATH": f"{fakes}{os.pathsep}{env['PATH']}", "FAKE_CLAUDE_MODE": "empty"}
    policy = UnresolvedPolicy(max_attempts=3, backoff_initial=0.05)
    client = ContractClient(li_bin(), runner=SubprocessRunner(agent_env), policy=policy)
    assert client.handshake().registered
    reply = client.submit_agent("say nothing", "claude", label="client-e2e")
    assert reply.ok and reply.data is not None, reply
    run_id = str(reply.data["run_id"])
    assert settle_one(client, run_id) is Branch.FAILED
    status = client.status(run_id)
    assert status.data is not None and run_view(status.data).status == status.data["status"]


def test_the_list_carries_status_and_its_derivations(client: ContractClient) -> None:
    run_id = submit(client, 'echo listed > "$LI_ARTIFACTS_DIR/listed.txt"')
    settle_one(client, run_id)
    listed = client.list_runs(limit=10)
    assert listed.ok and listed.data is not None
    rows = {row["run_id"]: run_view(row) for row in listed.data["runs"]}
    assert rows[run_id].branch is Branch.SUCCEEDED


def test_a_v2_li_at_the_same_path_makes_the_client_refuse_to_decode(
    tmp_path: pathlib.Path, env: dict[str, str]
) -> None:
    li_path = install_li(tmp_path / "li", f'exec {li_bin()} "$@"')
    client = ContractClient(li_path, runner=SubprocessRunner(env))
    assert client.handshake().registered
    fake = os.path.join(REPO, "tests", "fakes", "fake_li_v2.py")
    install_li(tmp_path / "li", f'exec {sys.executable} {fake} "$@"')
    reply = client.list_runs()
    assert reply.verdict is Verdict.DEGRADED and reply.data is None
    assert client.state is SurfaceState.DEGRADED


def test_a_broken_installation_is_an_environment_fault(
    tmp_path: pathlib.Path, env: dict[str, str]
) -> None:
    # -S leaves out site-packages, so the real bootstrap finds its required modules missing.
    boot = f"import sys; sys.path.insert(0, {REPO!r}); from lionrun.entrypoints.bootstrap import main; sys.exit(main())"
    li_path = install_li(tmp_path / "li", f'exec {sys.executable} -S -c "{boot}" "$@"')
    hello = ContractClient(li_path, runner=SubprocessRunner(env)).handshake()
    assert not hello.registered and hello.reply.verdict is Verdict.ENVIRONMENT_FAULT
    assert hello.reply.exit_code == 78


class KillingRunner:
    """Runs li, SIGKILLing a `wait` after `after` seconds, as an impatient supervisor would."""

    def __init__(self, env: dict[str, str], after: float) -> None:
        self.env, self.after = env, after

    def __call__(self, argv: Sequence[str], timeout: float, stdin: str | None = None) -> Completed:
        if "wait" not in argv:
            return SubprocessRunner(self.env)(argv, timeout, stdin)
        child = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env
        )
        try:
            out, err = child.communicate(timeout=self.after)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
            out, err = child.communicate()
        return Completed(child.returncode, out.decode(), err.decode())


def test_a_killed_li_is_a_transport_fault_and_the_run_is_untouched(
    client: ContractClient, env: dict[str, str]
) -> None:
    run_id = submit(client, "sleep 30")
    impatient = ContractClient(li_bin(), runner=KillingRunner(env, after=1.5))
    assert impatient.handshake().registered
    report = impatient.wait([run_id], max_wait=20, poll_interval=0.1)
    assert report.reply.verdict is Verdict.TRANSPORT_FAULT and report.runs == ()
    status = client.status(run_id)
    assert status.data is not None and run_view(status.data).branch is Branch.NOT_ENDED
    client.kill(run_id)


def test_artifact_text_serves_a_listed_file_only_while_its_bytes_are_lis(client: ContractClient) -> None:
    run_id = submit(client, 'printf "from the work" > "$LI_ARTIFACTS_DIR/note.txt"; echo done')
    settle_one(client, run_id)
    reply, artifact = client.artifact_text(run_id, "note.txt")
    assert reply.ok and artifact == {"name": "note.txt", "text": "from the work", "sha256_verified": True,
                                     "truncated": False}
    listed = {a["name"]: a for a in reply.data["artifacts"]["value"]}
    pathlib.Path(listed["note.txt"]["path"]).write_text("swapped")  # the sha256 li listed no longer holds
    _, swapped = client.artifact_text(run_id, "note.txt")
    assert swapped["text"] == "swapped"  # a new output call lists the new digest: li vouches for it again
    _, missing = client.artifact_text(run_id, "absent.txt")
    assert missing["text"] is None and "not listed" in missing["says"]
    os.symlink("/etc/passwd", os.path.join(os.path.dirname(listed["note.txt"]["path"]), "link.txt"))
    _, linked = client.artifact_text(run_id, "link.txt")
    assert linked["text"] is None and "not a regular file" in linked["says"]
    refused, unknown = client.artifact_text("20990101T000000-abcdef", "note.txt")
    assert not refused.ok and unknown["text"] is None
