"""Errors that help. One style (`li: <kind>: message`) for argparse's errors too,
a "did you mean", the help of the level that refused, bare verbs print their help, a hint to
quote, unknown --status refused, clamps noted, --older-than in --since's units, LI_HOME named."""

from __future__ import annotations

import os

import pytest

from tests.support import machine, run_li


@pytest.mark.parametrize("argv, said", [
    (["jbo", "list"], "li: invalid_input: unknown command 'jbo'; did you mean 'job'?"),
    (["job", "lsit"], "li: invalid_input: li job: unknown subcommand 'lsit'; did you mean 'list'?"),
    (["job", "list", "--lmit", "3"], "li: invalid_input: li job list: unrecognized arguments: --lmit 3; "
                                     "did you mean '--limit'?"),
    (["agent", "--detch", "sh", "hi"], "did you mean '--detach'?"),
    (["job", "list", "--status", "runing"], "li: invalid_input: --status 'runing' is no status; did you mean "
                                            "'running'?"),
    (["agent", "cluade", "hi"], "did you mean 'claude'?"),
])
def test_a_typo_gets_one_line_in_lis_style_with_a_suggestion(li_home: str, argv: list[str], said: str) -> None:
    result = run_li(*argv, home=li_home)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and said in result.stderr, result.stderr
    assert machine(*argv, home=li_home).error["kind"] == "invalid_input"


def test_a_job_error_points_at_li_job_help(li_home: str) -> None:
    assert "see `li job --help`)" in run_li("job", "lsit", home=li_home).stderr
    assert "(see `li job status --help`)" in run_li("job", "status", home=li_home).stderr


@pytest.mark.parametrize("argv, usage", [([], "usage: li "), (["job"], "usage: li job "),
                                         (["agent"], "usage: li agent "), (["orchestrate"], "usage: li orchestrate ")])
def test_a_bare_verb_prints_its_help(li_home: str, argv: list[str], usage: str) -> None:
    result = run_li(*argv, home=li_home)
    assert result.returncode == 0 and result.stdout.startswith(usage), (result.stdout, result.stderr)
    assert machine(*argv, home=li_home).error["kind"] == "invalid_input"  # --machine still refuses
    assert not os.path.isdir(os.path.join(li_home, "runs")) or not os.listdir(os.path.join(li_home, "runs"))


def test_a_prompt_that_looks_split_gets_the_hint_to_quote(li_home: str) -> None:
    result = run_li("agent", "sh", "ls", "-la", home=li_home)
    assert result.returncode == 2
    assert "quote a prompt" in result.stderr and "--" in result.stderr, result.stderr


def test_a_clamped_limit_is_noted(li_home: str) -> None:
    result = run_li("job", "list", "--limit", "5000", home=li_home)
    assert result.returncode == 0
    assert "note: --limit 5000 is above its bound; using 1000" in result.stderr


@pytest.mark.parametrize("age", ["2h", "30m", "7d", "0.5", "2020-01-01T00:00:00"])
def test_older_than_takes_what_since_takes(li_home: str, age: str) -> None:
    assert machine("job", "prune", "--older-than", age, "--dry-run", home=li_home).data["dry_run"] is True


@pytest.mark.parametrize("age", ["yesterday", "-1", "nan", "inf", "2099-01-01T00:00:00"])
def test_a_bad_older_than_is_refused(li_home: str, age: str) -> None:
    assert machine("job", "prune", "--older-than", age, home=li_home).error["kind"] == "invalid_input"


def test_li_home_a_file_is_named_as_li_home(tmp_path) -> None:
    home = tmp_path / "a-file"
    home.write_text("")
    for argv in (["job", "list"], ["agent", "sh", "echo hi"]):
        result = run_li(*argv, home=str(home))
        assert result.returncode == 5 and result.stderr.startswith(f"li: unavailable: LI_HOME='{home}' is not a "
                                                                   "directory"), result.stderr
        assert "LI_HOME" in machine(*argv, home=str(home)).error["message"]


def test_a_relative_li_home_is_refused_naming_li_home(tmp_path) -> None:
    result = run_li("job", "list", home="relative-home", cwd=str(tmp_path))
    assert result.returncode == 5 and "LI_HOME='relative-home' is a relative path" in result.stderr
    assert not (tmp_path / "relative-home").exists()
    assert machine("job", "list", home="relative-home", cwd=str(tmp_path)).error["kind"] == "unavailable"
    assert machine("handshake", home="relative-home", cwd=str(tmp_path)).envelope["ok"] is True
