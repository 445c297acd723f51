"""Hypothesis over the argv of every verb, through the real `li --machine`: always one valid envelope.

Whatever the flags, ids, numbers or text: exactly one JSON object on stdout, exit 0, `error.kind`
in the closed set and never `internal`. Submit fuzzing only ever submits `sh true`-shaped work or
invalid input, into an isolated LI_HOME.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.contract.validate import problems
from tests.support import li_bin

EXAMPLES = int(os.environ.get("LI_FUZZ_EXAMPLES", "40"))
KINDS = {"not_found", "invalid_input", "conflict", "unavailable", "internal"}
HOME = tempfile.mkdtemp(prefix="li-fuzz-")  # one isolated store for the whole module

fuzz = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

RUN_ID = "20260101T000000-abcdef"
numbers = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e309", "-0", "0x10", "", " ", "1_000", "٣", "1e-400"]),
)
texts = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=60)
ids = st.one_of(
    st.just(RUN_ID),
    st.sampled_from(["../../etc/passwd", "/etc/passwd", ".", "..", "-", "20260101T000000-ABCDEF",
                     "20261399T999999-abcdef", "20260101T000000-abcde", "x" * 5000]),
    texts,
)
junk_flags = st.sampled_from(["--bogus", "-x", "--limit", "--max-wait", "--tail-chars", "--", "--help",
                              "--version", "--status", "--poll-interval", "--label", "--timeout"])
huge = st.sampled_from(["9" * 400, "1" + "0" * 5000, "a" * 100_000])


@pytest.fixture(scope="module", autouse=True)
def _remove_the_fuzz_store() -> Iterator[None]:
    yield
    shutil.rmtree(HOME, ignore_errors=True)


def li(argv: Sequence[str]) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "LI_HOME": HOME, "NO_COLOR": "1"}
    env.pop("LI_NOTIFY_COMMAND", None)
    safe = [a.replace("\x00", "") for a in argv]  # argv cannot carry NUL at all
    return subprocess.run([li_bin(), "--machine", *safe], capture_output=True, env=env, timeout=120,
                          stdin=subprocess.DEVNULL)


def assert_one_envelope(argv: Sequence[str]) -> dict[str, object]:
    done = li(argv)
    assert done.returncode == 0, (argv, done.returncode, done.stderr[-2000:])
    text = done.stdout.decode("utf-8")
    assert text.endswith("\n") and text.count("\n") == 1, (argv, text[:2000])  # one line: JSON escapes \n
    envelope = json.loads(text)
    assert isinstance(envelope, dict) and envelope["contract_version"] == 1
    assert (envelope["data"] is None) != (envelope["error"] is None), envelope
    if envelope["error"] is not None:
        kind = envelope["error"]["kind"]  # type: ignore[index]
        assert kind in KINDS and kind != "internal", (argv, envelope, done.stderr[-2000:])
    assert problems(envelope, list(argv)) == [], (argv, problems(envelope, list(argv)))
    return envelope


def mixed(*parts: st.SearchStrategy[list[str]]) -> st.SearchStrategy[list[str]]:
    """Concatenate argv fragments, then sprinkle junk flags and huge values in."""
    extra = st.lists(st.one_of(junk_flags, numbers, texts, huge), max_size=3)
    return st.tuples(*parts, extra).map(lambda groups: [a for g in groups for a in g])


def opt(flag: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return st.one_of(st.just([]), values.map(lambda v: [flag, v]))


@fuzz
@given(mixed(st.lists(st.one_of(texts, junk_flags), max_size=4)))
def test_any_top_level_argv_gets_one_envelope(argv: list[str]) -> None:
    assert_one_envelope(argv)


@fuzz
@given(mixed(st.just(["handshake"])))
def test_handshake(argv: list[str]) -> None:
    assert_one_envelope(argv)


@fuzz
@given(mixed(st.just(["job", "status"]), st.lists(ids, max_size=2)))
def test_job_status(argv: list[str]) -> None:
    assert_one_envelope(argv)


@fuzz
@given(mixed(st.just(["job", "output"]), st.lists(ids, max_size=2), opt("--tail-chars", numbers)))
def test_job_output(argv: list[str]) -> None:
    assert_one_envelope(argv)


@fuzz
@given(mixed(st.just(["job", "list"]), opt("--limit", numbers), opt("--status", texts)))
def test_job_list(argv: list[str]) -> None:
    assert_one_envelope(argv)


@fuzz
@given(mixed(st.just(["job", "kill"]), st.lists(ids, max_size=2)))
def test_job_kill(argv: list[str]) -> None:
    assert_one_envelope(argv)


@fuzz
@given(mixed(st.just(["job", "wait"]), st.lists(ids, max_size=4),
             st.just(["--max-wait", "0"]), opt("--poll-interval", numbers)))
def test_job_wait(argv: list[str]) -> None:
    """Always a snapshot (`--max-wait 0` first; a later one would only clamp), so no case waits long."""
    envelope = assert_one_envelope(argv)
    if envelope["ok"]:
        assert envelope["data"]["max_wait"] <= 600  # type: ignore[index]


@fuzz
@given(mixed(st.just(["job", "prune"]), st.just(["--dry-run"]), opt("--older-than", numbers)))
def test_job_prune_dry_run(argv: list[str]) -> None:
    assert_one_envelope(argv)


submit_words = st.lists(st.sampled_from(["sh", "claude", "codex", "gemini", "nosuchmodel", "claude/opus",
                                         "sh/x", ""]), max_size=1)
invalid_submit_flags = st.one_of(
    opt("--timeout", numbers.filter(lambda v: not _positive(v))),
    opt("--prompt-file", st.sampled_from(["/nonexistent/prompt", "/", "/proc/self/mem"])),
    opt("--cwd", st.sampled_from(["/nonexistent/dir", "/etc/passwd"])),
)


def _positive(value: str) -> bool:
    try:
        number = float(value)
    except ValueError:
        return False
    return number == number and 0 < number < float("inf")


@fuzz
@given(st.tuples(st.sampled_from([["agent"], ["orchestrate", "fanout"]]), st.just(["--detach"]),
                 submit_words, invalid_submit_flags, st.sampled_from([[], [""], ["x" * 100_000, "y" * 100_000]]))
       .map(lambda g: [a for part in g for a in part]))
def test_submit_with_invalid_input_is_refused_cleanly(argv: list[str]) -> None:
    """Bad models, timeouts, prompt files, cwds and prompts: refused, and no run is created."""
    before = set(os.listdir(os.path.join(HOME, "runs"))) if os.path.isdir(os.path.join(HOME, "runs")) else set()
    envelope = assert_one_envelope(argv)
    if envelope["ok"]:
        return  # a valid combination slipped through (e.g. `sh` with no flags and no prompt is refused later)
    after = set(os.listdir(os.path.join(HOME, "runs"))) if os.path.isdir(os.path.join(HOME, "runs")) else set()
    assert after == before, "a refused submit left a run folder behind"


@fuzz
@given(st.tuples(st.sampled_from([["agent"], ["orchestrate", "fanout"]]), st.just(["--detach", "sh", "true"]),
                 opt("--label", texts), opt("--legs", st.sampled_from(["1", "2", "0", "-1", "x", "3"])))
       .map(lambda g: [a for part in g for a in part]))
def test_submit_of_trivial_work_is_one_envelope(argv: list[str]) -> None:
    if "--legs" in argv and argv[0] == "agent":
        argv = argv[: argv.index("--legs")]
    assert_one_envelope(argv)


@fuzz
@given(mixed(st.just(["orchestrate", "flow"]), st.lists(st.one_of(texts, st.just("/nonexistent.yaml")), max_size=2)))
def test_orchestrate_flow_with_a_bad_spec(argv: list[str]) -> None:
    assert_one_envelope([*argv, "--detach"])


@fuzz
@given(mixed(st.sampled_from([["doctor"], ["completion"], ["completion", "bash"], ["job"], ["mcp"]])))
def test_the_remaining_verbs(argv: list[str]) -> None:
    assert_one_envelope(argv)
