"""Start-up is part of the product: help, version and handshake never load the heavy dependencies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.support import REPO, run_li

pytestmark = pytest.mark.skipif(bool(os.environ.get("LI_BIN")), reason="inspects lionrun's own interpreter")

HEAVY = {"pydantic", "psutil", "filelock", "dependency_injector"}
LIGHT_CALLS = [("--help",), ("--version",), ("handshake", "--machine"), ("handshake",),
               ("--help", "--machine"), ("--version", "--machine"), ("no-such-command", "--machine")]


def imported_top_levels(importtime_stderr: str) -> set[str]:
    """Top-level package names from `-X importtime` lines: `import time: self | cumulative | name`."""
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            names.add(name.split(".")[0])
    return names


@pytest.mark.parametrize("argv", LIGHT_CALLS, ids=[" ".join(a) for a in LIGHT_CALLS])
def test_the_installed_li_imports_no_heavy_dependency_for_light_calls(argv: tuple[str, ...], li_home: str) -> None:
    result = run_li(*argv, home=li_home, env={"PYTHONPROFILEIMPORTTIME": "1"})
    names = imported_top_levels(result.stderr)
    assert "lionrun" in names, "importtime produced no report; the check would prove nothing"
    assert names & HEAVY == set(), sorted(names & HEAVY)


def test_a_status_read_does_load_them_so_the_check_can_see_an_import(li_home: str) -> None:
    # The converse, so the test above cannot pass merely because nothing is ever reported.
    result = run_li("agent", "sh", "true", "--detach", "--machine", home=li_home, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert imported_top_levels(result.stderr) & HEAVY


MODULES_AFTER = textwrap.dedent("""
    import json, sys
    from lionrun.entrypoints.bootstrap import main
    code = main(sys.argv[2:])
    with open(sys.argv[1], "w") as handle:
        json.dump(sorted(sys.modules), handle)
    sys.exit(code)
""")


@pytest.mark.parametrize("argv", LIGHT_CALLS, ids=[" ".join(a) for a in LIGHT_CALLS])
def test_sys_modules_after_a_light_call_holds_no_heavy_dependency(argv: tuple[str, ...], tmp_path: object) -> None:
    report = os.path.join(str(tmp_path), "modules.json")
    subprocess.run([sys.executable, "-c", MODULES_AFTER, report, *argv], cwd=REPO, capture_output=True,
                   stdin=subprocess.DEVNULL, timeout=60, check=False)
    with open(report) as handle:
        modules = set(json.load(handle))
    loaded = {name.split(".")[0] for name in modules}
    assert "lionrun" in loaded
    assert loaded & HEAVY == set(), sorted(loaded & HEAVY)
    # dataclasses and msgspec pull typing, inspect, ast and dis: the answers of these calls are
    # plain dicts, and a verb module imports them only inside its handler (every verb builds the parser).
    assert loaded & {"dataclasses", "msgspec"} == set(), sorted(loaded & {"dataclasses", "msgspec"})


# The composition root (entrypoints/container.py) composes every side; a read builds the core and
# the read side's services only. The submit side's, the notices side's and doctor/prune's services
# are imported by their typed builders on first use.
NOT_ON_A_READ = {
    "lionrun.application.submit", "lionrun.application.work", "lionrun.adapters.providers",
    "lionrun.application.notify", "lionrun.adapters.notifier", "lionrun.application.prune", "lionrun.application.doctor", "lionrun.adapters.diagnostics",
    "yaml",
    # Dependency-injector is loaded without asyncio and pydantic (entrypoints/startup/di_import.py), and
    # liveness is read from /proc, so a read pays for none of them.
    "asyncio", "ssl", "concurrent.futures", "pydantic", "pydantic_core", "psutil", "subprocess", "socket",
    # nor configparser, which dependency-injector imports for `Configuration.from_ini` alone, nor its
    # wiring module (with pkgutil), which only a container wired to modules calls.
    "configparser", "contextvars", "dependency_injector.wiring", "dependency_injector._cwiring", "pkgutil",
    # The host's machine and boot ids are read in binary: a text-mode ascii open loads the codec's module.
    "encodings.ascii",
    # The follow loop (foreground agent, output --follow) and shlex (a notify command) are imported where used.
    "lionrun.application.follow", "shlex",
    # The PostgreSQL store (and its driver) only when one is configured.
    "lionrun.adapters.pg_store", "psycopg",
    # Argparse's stock help formatter imports shutil (bz2, lzma) for every argument it
    # checks; entrypoints/startup/lazy_formatter.py's Formatter measures the terminal only when it formats help.
    # The parser holds only the called verb in full, so the other verbs' modules are not loaded.
    "shutil", "lionrun.entrypoints.verbs.agent", "lionrun.entrypoints.verbs.orchestrate", "lionrun.entrypoints.verbs.store",
    "lionrun.entrypoints.verbs.job_output", "lionrun.entrypoints.verbs.job_kill", "lionrun.entrypoints.verbs.job_prune",
    "lionrun.entrypoints.verbs.job_retry",
    # datetime.strptime's first call imports _strptime and calendar and builds its regexes; a run
    # id's second is read by position (domain/run.py submitted_second).
    "_strptime", "calendar",
    # A status reads the agents of a run's request through domain/agent_options.py, not the request's
    # parsers (budgets, retry policy, the agent CLIs' stream parsers); config's values are msgspec
    # Structs, so no read generates dataclass methods.
    "lionrun.domain.request", "lionrun.domain.budget", "lionrun.domain.agents.stream", "dataclasses",
    # The polls of one run are answered without a parser (entrypoints/startup/fast_path.py): no
    # argparse, nor the gettext and locale its messages look up, nor the parser module.
    "argparse", "gettext", "locale", "lionrun.entrypoints.cli",
}
READS = [("job", "status", "{run_id}"), ("job", "wait", "{run_id}", "--max-wait", "0"), ("job", "list")]
WAIT_SIDE = {"lionrun.application.wait"}  # only `li job wait` builds the waiter


def _modules_after(argv: list[str], home: str, report: str) -> set[str]:
    env = {**os.environ, "LI_HOME": home}
    subprocess.run([sys.executable, "-c", MODULES_AFTER, report, *argv, "--machine"], cwd=REPO, capture_output=True,
                   stdin=subprocess.DEVNULL, timeout=60, check=False, env=env)
    with open(report) as handle:
        return set(json.load(handle))


@pytest.fixture(scope="module")
def ended_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    home = str(tmp_path_factory.mktemp("reads") / "li-home")
    os.mkdir(home, 0o700)
    run_id = run_li("agent", "sh", "true", "--machine", home=home).data["run_id"]
    return home, run_id


@pytest.mark.parametrize("argv", READS, ids=[" ".join(a[:2]) for a in READS])
def test_a_read_loads_the_read_side_and_no_submit_notice_or_upkeep_module(
        argv: tuple[str, ...], ended_run: tuple[str, str], tmp_path: object) -> None:
    home, run_id = ended_run
    loaded = _modules_after([word.format(run_id=run_id) for word in argv], home,
                            os.path.join(str(tmp_path), "modules.json"))
    assert {"lionrun.entrypoints.container", "lionrun.application.observe"} <= loaded, \
        "the read did not compose the read side; the check would prove nothing"
    assert loaded & NOT_ON_A_READ == set(), sorted(loaded & NOT_ON_A_READ)
    if argv[1] == "wait":
        assert loaded >= WAIT_SIDE
    else:
        assert loaded & WAIT_SIDE == set(), sorted(loaded & WAIT_SIDE)
        # signal's enums (about 1 ms): only a kill signals, and a wait sets its handlers.
        assert "signal" not in loaded
        # Only a wait watches the run folders (inotify, with select and struct).
        assert loaded & {"lionrun.adapters.fs_changes", "select"} == set(), sorted(loaded & {"lionrun.adapters.fs_changes", "select"})
    if argv[1] == "status":  # only a status reads the run's request (its agents), without its parsers
        assert "lionrun.domain.agent_options" in loaded
    assert "lionrun.domain.request" not in loaded


def test_a_submit_does_load_the_submit_side_so_the_check_can_see_it(tmp_path: object) -> None:
    home = os.path.join(str(tmp_path), "li-home")
    os.mkdir(home, 0o700)
    loaded = _modules_after(["agent", "sh", "true", "--detach"], home, os.path.join(str(tmp_path), "modules.json"))
    assert {"lionrun.entrypoints.container", "lionrun.application.submit"} <= loaded


HELP_AND_VERSION = [("--help",), ("--version",), ("--help", "--machine"), ("--version", "--machine"), ("-h",),
                    ("--help", "job")]


@pytest.mark.parametrize("argv", HELP_AND_VERSION, ids=[" ".join(a) for a in HELP_AND_VERSION])
def test_help_and_version_import_no_verb_module(argv: tuple[str, ...], li_home: str) -> None:
    # The verb table carries each verb's summary (entrypoints/verbs/__init__.py), so the
    # root help lists every verb without importing one. `python -X importtime` on the real `li`.
    from tests.support import li_bin

    result = subprocess.run([sys.executable, "-X", "importtime", li_bin(), *argv], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=60, check=False, env={**os.environ, "LI_HOME": li_home})
    assert result.returncode == 0, result.stderr[-2000:]
    assert ("handshake" in result.stdout) == ("--version" not in argv), result.stdout  # the help lists the verbs
    names = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
             if line.startswith("import time:") and line.count("|") == 2}
    assert "lionrun.entrypoints.dispatch" in names, "importtime produced no report; the check would prove nothing"
    verbs = sorted(name for name in names if name.startswith("lionrun.entrypoints.verbs"))
    assert verbs == [], verbs
    # Nor the container, typing, or shutil (the help formatter measures the terminal without it).
    assert names & {"shutil", "typing", "lionrun.entrypoints.container"} == set(), sorted(names)


@pytest.mark.parametrize("argv", [("handshake",), ("--version",)], ids=["handshake", "--version"])
def test_handshake_and_version_load_no_other_verb_and_no_shutil(argv: tuple[str, ...], tmp_path: object) -> None:
    loaded = _modules_after(list(argv), str(tmp_path), os.path.join(str(tmp_path), "modules.json"))
    # `li handshake` is answered without a parser (entrypoints/startup/fast_path.py WITHOUT_PARSER); --version is parsed.
    witness = "lionrun.entrypoints.verbs.handshake" if argv == ("handshake",) else "lionrun.entrypoints.cli"
    assert witness in loaded, "the request was not answered; the check would prove nothing"
    assert loaded & {"shutil", "lionrun.entrypoints.verbs.job", "lionrun.entrypoints.verbs.agent"} == set()


@pytest.mark.parametrize("machine", [True, False], ids=["machine", "human"])
def test_handshake_builds_no_parser(machine: bool, tmp_path: object) -> None:
    # argparse, its gettext look-ups and locale were about a third of a handshake.
    argv = ["handshake", *(["--machine"] if machine else [])]
    report = os.path.join(str(tmp_path), "modules.json")
    subprocess.run([sys.executable, "-c", MODULES_AFTER, report, *argv], cwd=REPO, capture_output=True,
                   stdin=subprocess.DEVNULL, timeout=60, check=False, env={**os.environ, "LI_HOME": str(tmp_path)})
    with open(report) as handle:
        loaded = set(json.load(handle))
    assert "lionrun.entrypoints.verbs.handshake" in loaded, "the handshake did not run; the check would prove nothing"
    assert loaded & {"argparse", "gettext", "locale", "lionrun.entrypoints.cli"} == set(), sorted(loaded)


@pytest.mark.parametrize("argv", [("handshake",), ("--version",)], ids=["handshake", "--version"])
def test_handshake_and_version_do_not_import_typing(argv: tuple[str, ...], tmp_path: object) -> None:
    # typing costs a handshake about 6 ms: what the handshake path names from it is for
    # mypy only (`TYPE_CHECKING = False` blocks), and domain.contract spells ERROR_KINDS by its enum.
    loaded = _modules_after(list(argv), str(tmp_path), os.path.join(str(tmp_path), "modules.json"))
    assert "lionrun.domain.contract" in loaded and "lionrun.entrypoints.version" in loaded, "nothing ran; the check would prove nothing"
    assert "typing" not in loaded


@pytest.mark.parametrize("argv", [("handshake",), ("--version",)], ids=["handshake", "--version"])
def test_the_version_is_read_without_importing_importlib_metadata(argv: tuple[str, ...], tmp_path: object) -> None:
    # importlib.metadata (email, csv, zipfile) would cost a handshake about as much as the rest of it.
    loaded = _modules_after(list(argv), str(tmp_path), os.path.join(str(tmp_path), "modules.json"))
    assert "lionrun.entrypoints.version" in loaded
    assert "importlib.metadata" not in loaded


def test_a_submit_loads_no_pydantic_and_no_asyncio(tmp_path: object) -> None:
    # Pydantic is for the schema only (tools/gen_schema.py); a submit neither needs nor imports it.
    home = os.path.join(str(tmp_path), "li-home")
    os.mkdir(home, 0o700)
    loaded = _modules_after(["agent", "sh", "true", "--detach"], home, os.path.join(str(tmp_path), "modules.json"))
    assert "lionrun.application.submit" in loaded, "the submit did not run; the check would prove nothing"
    assert loaded & {"pydantic", "pydantic_core", "asyncio"} == set(), sorted(loaded & {"pydantic", "asyncio"})


def test_a_submit_loads_neither_the_work_a_runner_performs_nor_yaml(tmp_path: object) -> None:
    # A submit starts a runner; the work (application.work, the orchestration and its
    # thread pool) is the runner's, and yaml reads only orchestrate's plans.
    home = os.path.join(str(tmp_path), "li-home")
    os.mkdir(home, 0o700)
    loaded = _modules_after(["agent", "sh", "true", "--detach"], home, os.path.join(str(tmp_path), "modules.json"))
    assert "lionrun.application.submit" in loaded, "the submit did not run; the check would prove nothing"
    heavy = {"lionrun.application.work", "lionrun.application.orchestrate", "concurrent.futures", "yaml"}
    assert loaded & heavy == set(), sorted(loaded & heavy)


def test_a_submit_loads_only_the_agent_clis_it_names_and_no_stream_reader(tmp_path: object) -> None:
    # The provider registry makes each CLI's adapter when first asked for: a submit imports the
    # module of the CLIs its request names, and no stream reader (the runner reads the stream).
    home = os.path.join(str(tmp_path), "li-home")
    os.mkdir(home, 0o700)
    modules = os.path.join(str(tmp_path), "modules.json")
    readers = {"lionrun.domain.transcript", "lionrun.domain.agents.stream"}
    clis = {"lionrun.domain.agents.claude", "lionrun.domain.agents.codex", "lionrun.domain.agents.gemini",
            "lionrun.domain.agents.opencode"}
    loaded = _modules_after(["agent", "sh", "true", "--detach"], home, modules)
    assert "lionrun.application.submit" in loaded, "the submit did not run; the check would prove nothing"
    assert loaded & (readers | clis) == set(), sorted(loaded & (readers | clis))
