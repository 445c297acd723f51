"""One exit rule, stated word for word in the wire contract, its reference loop's order,
docs/consumer-client.md and li's own contract client, and run against every exit li can give.

The reference loop's `call(args)` is read from docs/wire-contract.md and interpreted line by line
(a line this test cannot interpret fails it): for each real exit of `li` — 0 with an envelope, 78,
74, a signal, and the exits only a broken or foreign executable gives — the loop's verdict, the
client's `classify` verdict and the rule's own must agree.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from lionrun.adapters.contract_client import (
    Completed,
    ContractClient,
    SubprocessRunner,
    Verdict,
    classify,
)
from lionrun.adapters.contract_client.envelope import EXIT_RULE
from tests.support import REPO, install_li, li_bin

DOCS = os.path.join(REPO, "docs")
UNDERSTOOD = frozenset({1})
# The reference loop's words for each client verdict.
LOOP_WORDS = {"TransportFault": Verdict.TRANSPORT_FAULT, "EnvironmentFault": Verdict.ENVIRONMENT_FAULT,
              "VersionFault": Verdict.DEGRADED, "ContractViolation": Verdict.CONTRACT_VIOLATION,
              "Refusal": Verdict.REFUSED, "Data": Verdict.OK}


def read(name: str) -> str:
    with open(os.path.join(DOCS, name), encoding="utf-8") as handle:
        return handle.read()


def rule_blocks(text: str) -> list[list[str]]:
    return [block.strip().splitlines() for block in re.findall(r"<!-- exit-rule -->\n(.*?)<!-- /exit-rule -->",
                                                               text, re.S)]


def test_the_exit_rule_is_stated_word_for_word_in_both_docs_and_the_client() -> None:
    rule = EXIT_RULE.strip().splitlines()
    assert len(rule) == 4
    assert rule_blocks(read("wire-contract.md")) == [rule]
    assert rule_blocks(read("consumer-client.md")) == [rule]


def reference_loop() -> list[str]:
    """The body of `call(args)` in the wire contract's reference loop, comments dropped."""
    text = read("wire-contract.md")
    loop = text[text.index("## A reference consumer loop"):]
    body = loop[loop.index("call(args):"):loop.index("startup:")]
    lines = [line.split("#")[0].strip() for line in body.splitlines()[1:]]
    return [line for line in lines if line]


def interpret(lines: list[str]) -> Callable[[Completed], Verdict]:
    """The loop's statements, as steps that each answer a verdict or pass (None)."""
    steps: list[Callable[[Completed, dict[str, Any]], Verdict | None]] = []
    for line in lines:
        if line.startswith("proc = run("):
            continue
        if m := re.fullmatch(r"if proc could not start or your timeout stopped it: return (\w+)", line):
            word = m.group(1)
            steps.append(lambda d, _e, w=word: LOOP_WORDS[w] if d.launch_error or d.timed_out else None)
        elif m := re.fullmatch(r"if proc\.exit (==|!=) (\d+):\s*return (\w+)", line):
            op, code, word = m.group(1), int(m.group(2)), m.group(3)
            steps.append(lambda d, _e, op=op, code=code, w=word:
                         LOOP_WORDS[w] if (d.exit_code == code) == (op == "==") else None)
        elif m := re.fullmatch(r"env = json_parse_one_object\(proc\.stdout\) or return (\w+)", line):
            parse_fault = LOOP_WORDS[m.group(1)]
            steps.append(lambda d, e, f=parse_fault: _parsed(d, e, f))
        elif re.fullmatch(r"if env\.contract_version not in UNDERSTOOD: degrade; return VersionFault", line):
            steps.append(lambda _d, e: Verdict.DEGRADED if e["env"].get("contract_version") not in UNDERSTOOD
                         else None)
        elif line == "if (env.data is null) == (env.error is null): return ContractViolation":
            steps.append(lambda _d, e: Verdict.CONTRACT_VIOLATION
                         if (e["env"].get("data") is None) == (e["env"].get("error") is None) else None)
        elif line == "if not env.ok: return Refusal(env.error.kind, env.error.message)":
            steps.append(lambda _d, e: Verdict.REFUSED if not e["env"].get("ok") else None)
        elif line == "return env.data":
            steps.append(lambda _d, _e: Verdict.OK)
        else:
            pytest.fail(f"the reference loop says something this test cannot run: {line!r}")

    def run(done: Completed) -> Verdict:
        state: dict[str, Any] = {}
        for step in steps:
            verdict = step(done, state)
            if verdict is not None:
                return verdict
        raise AssertionError("the reference loop fell off its end")

    return run


def _parsed(done: Completed, state: dict[str, Any], fault: Verdict) -> Verdict | None:
    try:
        value = json.loads(done.stdout)
    except ValueError:
        return fault
    if not isinstance(value, dict):
        return fault
    state["env"] = value
    return None


def test_the_reference_loop_takes_the_rules_in_the_rules_order() -> None:
    lines = reference_loop()
    first = [i for i, line in enumerate(lines) if "proc could not start" in line]
    config = [i for i, line in enumerate(lines) if "proc.exit == 78" in line]
    ioerr = [i for i, line in enumerate(lines) if "proc.exit == 74" in line]
    parse = [i for i, line in enumerate(lines) if line.startswith("env = json_parse_one_object")]
    assert first and config and ioerr and parse and first[0] < config[0] < ioerr[0] < parse[0], lines
    assert not any(re.search(r"proc\.exit != ", line) for line in lines), "a non-zero exit never overrides an envelope"


# -- every exit li can give --------------------------------------------------------------------------

ENVELOPE = json.dumps({"ok": True, "contract_version": 1, "data": {"contract_version": 1}, "error": None})


def call(argv: list[str], env: dict[str, str], timeout: float = 60, **popen: Any) -> Completed:
    done = subprocess.run(argv, capture_output="stdout" not in popen, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL, **popen)
    return Completed(done.returncode, done.stdout or "", done.stderr or "")


def killed_wait(env: dict[str, str], li_home: str) -> Completed:
    """`li job wait` on a running run, SIGKILLed while it waits: exit -9, nothing on stdout."""
    run_id = json.loads(call([li_bin(), "agent", "--machine", "--detach", "sh", "sleep 30"], env).stdout)["data"]["run_id"]
    proc = subprocess.Popen([li_bin(), "job", "wait", run_id, "--max-wait", "30", "--machine"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    subprocess.run([li_bin(), "job", "kill", run_id, "--machine"], env=env, capture_output=True, timeout=60)
    return Completed(proc.returncode, out, err)


def test_every_exit_li_can_give_is_judged_alike_by_the_rule_the_loop_and_the_client(
        li_home: str, tmp_path: Any) -> None:
    env = {**os.environ, "LI_HOME": li_home}
    loop = interpret(reference_loop())
    with open("/dev/full", "w") as full:
        refused_stdout = subprocess.run([li_bin(), "agent", "--machine", "--detach", "sh", "true"], env=env,
                                        stdout=full, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=60)
    closed_stdout = subprocess.run([li_bin(), "handshake", "--machine"], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=60,
                                   preexec_fn=lambda: os.close(1))
    assert refused_stdout.returncode == 74 and closed_stdout.returncode == 74
    fake = str(tmp_path / "fake-li")
    cases: list[tuple[str, Completed, Verdict]] = [
        ("0, an envelope", call([li_bin(), "handshake", "--machine"], env), Verdict.OK),
        ("0, a refusal", call([li_bin(), "job", "status", "20200101T000000-abcdef", "--machine"], env),
         Verdict.REFUSED),
        ("78", call([li_bin(), "handshake", "--machine"], {**env, "LI_SIMULATE_ENVIRONMENT_FAULT": "1"}),
         Verdict.ENVIRONMENT_FAULT),
        # 74 is never read, even were a whole envelope on stdout
        ("74, stdout full", Completed(74, ENVELOPE, refused_stdout.stderr.decode()), Verdict.TRANSPORT_FAULT),
        ("74, stdout closed", Completed(74, "", closed_stdout.stderr.decode()), Verdict.TRANSPORT_FAULT),
        ("killed by a signal", killed_wait(env, li_home), Verdict.TRANSPORT_FAULT),
        ("could not start", Completed(None, launch_error="FileNotFoundError: no such file"), Verdict.TRANSPORT_FAULT),
        ("your timeout", Completed(None, ENVELOPE, timed_out=True), Verdict.TRANSPORT_FAULT),
        ("1, garbage", call([install_li(fake, "echo oops; exit 1")], env), Verdict.TRANSPORT_FAULT),
        ("0, nothing", call([install_li(fake, "exit 0")], env), Verdict.TRANSPORT_FAULT),
        ("3, one envelope", call([install_li(fake, f"echo '{ENVELOPE}'; exit 3")], env), Verdict.OK),  # D8
    ]
    for name, done, verdict in cases:
        assert loop(done) is verdict, (name, done)
        assert classify(done, UNDERSTOOD).verdict is verdict, (name, done)
    # the 74 after a submit: the request was handled, its run exists
    listed = json.loads(call([li_bin(), "job", "list", "--machine"], env).stdout)["data"]["runs"]
    assert any(row["command"] == "true" for row in listed)


def test_the_documented_78_is_what_a_broken_installation_answers(li_home: str) -> None:
    env = {**os.environ, "LI_HOME": li_home, "LI_SIMULATE_ENVIRONMENT_FAULT": "1"}
    for argv in (["handshake"], ["agent", "--detach", "sh", "true"], ["job", "list"]):
        done = subprocess.run([li_bin(), *argv, "--machine"], env=env, capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout) == (78, ""), (argv, done)
        assert len(done.stderr.splitlines()) == 1 and "environment fault" in done.stderr
    assert not os.path.isdir(os.path.join(li_home, "runs")) or os.listdir(os.path.join(li_home, "runs")) == []
    client = ContractClient(li_bin(), runner=SubprocessRunner(env))
    assert client.handshake().reply.verdict is Verdict.ENVIRONMENT_FAULT
