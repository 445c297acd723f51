"""Did-you-mean for verbs, subcommands, options and models."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.suggest import closest, did_you_mean

VERBS = ("handshake", "agent", "orchestrate", "job", "store", "doctor", "completion", "mcp")
JOB = ("status", "output", "list", "kill", "wait", "prune", "retry", "rm")


def test_typos_of_verbs_and_subcommands() -> None:
    assert closest("jbo", VERBS) == ["job"]
    assert closest("lsit", JOB)[0] == "list"
    assert closest("stauts", JOB) == ["status"]
    assert did_you_mean("--lmit", ["--limit", "--label", "--since"]) == "; did you mean '--limit'?"
    assert did_you_mean("cluade", ["sh", "claude", "codex", "gemini"]) == "; did you mean 'claude'?"


def test_nothing_close_suggests_nothing() -> None:
    assert did_you_mean("zzzzzz", VERBS) == ""
    assert closest("job", VERBS) == []  # the word itself is no suggestion


@given(st.text(max_size=12), st.lists(st.text(max_size=12), max_size=10))
def test_a_suggestion_is_always_a_known_word_other_than_the_one_given(word: str, known: list[str]) -> None:
    found = closest(word, known)
    assert len(found) <= 2 and all(f in known and f != word for f in found)
