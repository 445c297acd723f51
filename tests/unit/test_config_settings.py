"""li's settings (domain/config.py): config.toml's bytes read once, each entry checked on its own."""

from __future__ import annotations

import pytest

from lionrun.application.requests import SubmitFlags, common_options, executor_options, with_queue
from lionrun.domain.config import ConfigFile, Settings, Unusable, store_of, usable
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.request import Leg, ModelSpec, RunRequest

PATH = "/h/config.toml"


def settings(text: str | None = None, error: str | None = None, **env: str) -> Settings:
    raw = None if text is None else text.encode()
    return Settings(home="/h", file=ConfigFile(PATH, raw, error), store=store_of(raw, PATH), **env)


def no_git() -> object:
    raise AssertionError("git is built only when a worktree is wanted")


def test_each_entry_is_typed_and_a_bad_one_spoils_only_itself() -> None:
    entries = settings('executor = "slurm"\nconfine = "sometimes"\nidle_timeout = 60\n'
                       '[slurm]\npartition = "debug"\nargs = ["--time=5"]\n').entries
    assert entries.executor == "slurm" and entries.idle_timeout == 60.0
    assert usable(entries.slurm_partition) == "debug" and usable(entries.slurm_args) == ("--time=5",)
    assert isinstance(entries.confine, Unusable)
    with pytest.raises(ContractError, match="config.toml confine") as refused:
        usable(entries.confine)
    assert refused.value.kind == ErrorKind.INVALID_INPUT


def test_a_bad_entry_is_refused_only_by_a_call_that_needs_it() -> None:
    held = settings('confine = "sometimes"\nnotify = ["true"]\n')
    assert common_options(SubmitFlags(confine="off"), held, "/w", no_git)["confine"] == "off"  # type: ignore[arg-type]
    with pytest.raises(ContractError, match="config.toml confine"):
        common_options(SubmitFlags(), held, "/w", no_git)  # type: ignore[arg-type]


def test_a_file_that_cannot_be_read_refuses_every_entry_as_unavailable_and_names_no_store() -> None:
    held = settings(error=f"{PATH} is a symbolic link, which li never follows")
    assert held.store == ""
    with pytest.raises(ContractError) as refused:
        usable(held.entries.notify)
    assert refused.value.kind == ErrorKind.UNAVAILABLE and "symbolic link" in refused.value.message
    assert refused.value.detail == {"path": PATH, "reason_code": "store_refused"}
    # a submit whose flags name everything it would take from the file goes ahead
    assert common_options(SubmitFlags(notify="true", confine="auto", executor="local", worktree=False), held, "/w",
                          no_git)["notify_source"] == "flag"  # type: ignore[arg-type]


def test_a_file_that_is_no_toml_is_invalid_input_naming_it() -> None:
    held = settings("this is not toml [[[\n")
    with pytest.raises(ContractError, match="config.toml cannot be read") as refused:
        usable(held.entries.executor)
    assert refused.value.kind == ErrorKind.INVALID_INPUT and refused.value.detail == {"path": PATH}


def test_the_environment_wins_over_the_file_for_notify_and_the_flag_over_both() -> None:
    held = settings('notify = ["from-config"]\n', notify_command="from-env {run_id}")
    assert common_options(SubmitFlags(), held, "/w", no_git)["notify"] == ("from-env", "{run_id}")  # type: ignore[arg-type]
    assert common_options(SubmitFlags(notify="flag"), held, "/w", no_git)["notify"] == ("flag",)  # type: ignore[arg-type]


def test_slurm_defaults_apply_only_to_the_slurm_executor() -> None:
    held = settings('executor = "slurm"\n[slurm]\npartition = "debug"\n')
    assert executor_options(SubmitFlags(), held) == {"executor": "slurm", "partition": "debug", "slurm_args": ()}
    assert executor_options(SubmitFlags(executor="local"), held) == {}
    with pytest.raises(ContractError, match="apply to --executor slurm"):
        executor_options(SubmitFlags(partition="p"), settings())


def test_each_slurm_flag_wins_over_its_own_entry_and_needs_no_other() -> None:
    # A bad `args` does not refuse a submit that gives --partition, nor a bad `partition` one that
    # gives --slurm-arg: each entry is read only when its own flag is not given.
    bad_args = settings('executor = "slurm"\n[slurm]\npartition = "debug"\nargs = ["not-an-option"]\n')
    assert executor_options(SubmitFlags(slurm_arg=["--time=5"]), bad_args) == {
        "executor": "slurm", "partition": "debug", "slurm_args": ("--time=5",)}
    with pytest.raises(ContractError, match=r"config.toml \[slurm\] args"):
        executor_options(SubmitFlags(partition="p"), bad_args)
    bad_partition = settings('executor = "slurm"\n[slurm]\npartition = "bad partition!"\nargs = ["--time=5"]\n')
    assert executor_options(SubmitFlags(partition="p"), bad_partition) == {
        "executor": "slurm", "partition": "p", "slurm_args": ("--time=5",)}
    with pytest.raises(ContractError, match=r"config.toml \[slurm\] partition"):
        executor_options(SubmitFlags(slurm_arg=["--time=5"]), bad_partition)
    not_a_table = settings('executor = "slurm"\nslurm = "debug"\n')
    assert executor_options(SubmitFlags(partition="p", slurm_arg=["--time=5"]), not_a_table)["partition"] == "p"
    with pytest.raises(ContractError, match="`slurm` must be a table"):
        executor_options(SubmitFlags(partition="p"), not_a_table)


def test_a_models_queue_comes_from_the_queues_table() -> None:
    request = RunRequest(kind="agent", instruction="hi", legs=(Leg("main", ModelSpec("sh")),), cwd="/w")
    assert with_queue(request, settings('[queues]\nsh = "shells"\n')).queue == "shells"
    assert with_queue(request, settings()).queue is None


def test_flags_are_read_from_any_object_and_what_it_lacks_is_not_given() -> None:
    class Given:
        label = "x"
        after = ["20250101T000000-abcdef"]

    flags = SubmitFlags.of(Given())
    assert (flags.label, flags.after, flags.confine) == ("x", ["20250101T000000-abcdef"], None)
    assert SubmitFlags.of(None) == SubmitFlags()
