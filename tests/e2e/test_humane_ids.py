"""Short run ids for people: a unique 4-6 digit hex suffix or `@last`; --machine takes exact ids only."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import UTC, datetime

import pytest

from lionrun.adapters.fs_store import FsRunStore
from lionrun.domain.run import Run, iso
from tests.support import li_bin, machine, run_li

OLD = "20260725T175010-aa1234"
NEW = "20260725T175020-bb1234"
THIRD = "20260725T175030-cc5678"


def plant(store: FsRunStore, run_id: str, seconds: int) -> None:
    """A finished run with a chosen id (the real reserve picks random digits)."""
    os.makedirs(store.run_dir(run_id), mode=0o700)
    moment = iso(datetime(2026, 7, 25, 17, 50, seconds, tzinfo=UTC))
    store.create(Run(run_id=run_id, kind="agent", status="completed", submitted_at=moment, spawn_state="started",
                     finished_at=moment, outcome="succeeded", label=f"at-{seconds}"))
    descriptor = os.open(os.path.join(store.run_dir(run_id), "console.log"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(descriptor, f"console of {run_id}\n".encode())
    os.close(descriptor)


@pytest.fixture
def home(li_home: str) -> str:
    store = FsRunStore(li_home)
    for seconds, run_id in ((10, OLD), (20, NEW), (30, THIRD)):
        plant(store, run_id, seconds)
    return li_home


def test_a_unique_suffix_names_its_run_for_a_person(home: str) -> None:
    for short in ("5678", "c5678", "cc5678"):
        shown = run_li("job", "status", short, home=home)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith(THIRD)


def test_at_last_names_the_newest_run(home: str) -> None:
    shown = run_li("job", "status", "@last", home=home)
    assert shown.returncode == 0 and shown.stdout.startswith(THIRD)
    out = run_li("job", "output", "@last", home=home)
    assert out.returncode == 0 and out.stdout.startswith(f"console of {THIRD}"), out.stderr


def test_at_last_is_the_run_submitted_last_even_when_two_share_its_second(li_home: str) -> None:
    store = FsRunStore(li_home)
    for run_id, micro in (("20260725T175040-ffff01", 100), ("20260725T175040-000002", 900_000)):
        os.makedirs(store.run_dir(run_id), mode=0o700)
        moment = iso(datetime(2026, 7, 25, 17, 50, 40, micro, tzinfo=UTC))
        store.create(Run(run_id=run_id, kind="agent", status="running", submitted_at=moment, spawn_state="started"))
    shown = run_li("job", "status", "@last", home=li_home)
    assert shown.returncode == 0 and shown.stdout.startswith("20260725T175040-000002"), shown.stdout


def test_an_ambiguous_suffix_is_refused_naming_the_candidates(home: str) -> None:
    refused = run_li("job", "status", "1234", home=home)
    assert refused.returncode == 2 and refused.stdout == ""
    assert OLD in refused.stderr and NEW in refused.stderr and refused.stderr.startswith("li: ")
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_suffix_nothing_ends_in_is_not_found(home: str, li_home: str) -> None:
    assert run_li("job", "status", "9999", home=home).returncode == 3
    empty = os.path.join(li_home, "empty")
    assert run_li("job", "status", "@last", home=empty).returncode == 3
    assert run_li("job", "status", "abc", home=home).returncode == 2  # three digits are too few


def test_machine_mode_keeps_exact_ids_only(home: str) -> None:
    for short in ("5678", "@last", "cc5678"):
        for verb in ("status", "output", "kill"):
            assert machine("job", verb, short, home=home).error["kind"] == "invalid_input"
    waited = machine("job", "wait", "5678", "--max-wait", "0", home=home).data
    assert waited["runs"][0]["error"]["kind"] == "invalid_input"
    assert machine("job", "status", THIRD, home=home).data["run_id"] == THIRD


def test_wait_and_kill_take_short_forms_for_a_person(home: str) -> None:
    waited = run_li("job", "wait", "5678", "aa1234", "--max-wait", "0", home=home)
    assert waited.returncode == 0, waited.stderr
    assert THIRD in waited.stdout and OLD in waited.stdout
    killed = run_li("job", "kill", "@last", home=home)
    assert killed.returncode == 0 and THIRD in killed.stdout


def test_a_foreground_run_prints_its_id_on_stderr_first(li_home: str, tmp_path) -> None:
    ran = run_li("agent", "sh", "echo hello", home=li_home, cwd=str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    first = ran.stderr.splitlines()[0]
    assert first.startswith("run ") and first.split()[1] == next(FsRunStore(li_home).run_ids())
    assert "hello" in ran.stdout and "run " not in ran.stdout


# --- completion: run ids and models from a fast local listing, never file names --------------------


def script(tmp_path, shell: str) -> str:
    path = tmp_path / f"li.{shell}"
    path.write_text(run_li("completion", shell).stdout)
    return str(path)


def with_li(home: str) -> dict[str, str]:
    """The environment a shell completes in: this li first on PATH, the test's store."""
    return {**os.environ, "LI_HOME": home, "PATH": f"{os.path.dirname(li_bin())}:{os.environ['PATH']}"}


def bash_complete(tmp_path, home: str, *words: str) -> list[str]:
    array = " ".join(f"'{w}'" for w in ("li", *words))
    program = (f'source {script(tmp_path, "bash")}; COMP_WORDS=({array}); COMP_CWORD={len(words)}; _li; '
               'printf "%s\\n" "${COMPREPLY[@]}"')
    env = with_li(home)
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True, env=env,
                          cwd=tmp_path).stdout.split()


def test_bash_completes_run_ids_and_models_not_file_names(tmp_path, home: str) -> None:
    (tmp_path / "2026-a-file").write_text("")
    assert bash_complete(tmp_path, home, "job", "status", "2026") == [THIRD, NEW, OLD]
    assert bash_complete(tmp_path, home, "job", "wait", "@") == ["@last"]
    assert bash_complete(tmp_path, home, "job", "retry", "20260725T17503") == [THIRD]
    assert bash_complete(tmp_path, home, "agent", "cl") == ["claude"]
    assert bash_complete(tmp_path, home, "orchestrate", "fanout", "--synthesize", "ge") == ["gemini"]
    assert bash_complete(tmp_path, home, "job", "status", "nothing") == []


def test_the_listing_the_scripts_use(home: str) -> None:
    words = run_li("completion", "--words", "runs", home=home).stdout.split()
    assert words == ["@last", THIRD, NEW, OLD]
    assert run_li("completion", "--words", "models", home=home).stdout.split() == ["sh", "claude", "codex", "gemini", "opencode"]
    assert machine("completion", "--words", "runs", home=home).error["kind"] == "invalid_input"


def test_fish_completes_commands_run_ids_and_models(tmp_path, home: str) -> None:
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed here")
    path = script(tmp_path, "fish")
    subprocess.run(["fish", "-n", path], check=True)
    env = with_li(home)

    def complete(line: str) -> list[str]:
        program = f"source {path}; complete -C '{line}'"
        out = subprocess.run(["fish", "--no-config", "-c", program], capture_output=True, text=True, env=env,
                             check=True, cwd=tmp_path).stdout
        return [entry.split("\t")[0] for entry in out.splitlines()]

    assert complete("li jo") == ["job"]
    assert "prune" in complete("li job ")
    assert sorted(complete("li job status 2026")) == [OLD, NEW, THIRD]  # fish sorts what it offers
    assert complete("li agent cl") == ["claude"]
    assert complete("li job prune --d") == ["--dry-run"]


def test_zsh_completes_run_ids(tmp_path, home: str) -> None:
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed here")
    path = script(tmp_path, "zsh")
    env = with_li(home)
    program = (f"autoload -Uz compinit && compinit -u -d {tmp_path}/zcd; source {path}; "
               "compadd() { shift; print -l -- \"$@\" }; words=(li job status ''); CURRENT=4; _li")
    out = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split() == ["@last", THIRD, NEW, OLD]
