"""D8: the installed `li` over a broken installation exits 78 with an empty stdout, before any run exists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.support import REPO, Result, li_bin, run_li

pytestmark = pytest.mark.skipif(bool(os.environ.get("LI_BIN")), reason="injects faults into lionrun's interpreter")

COMMANDS = [("handshake",), ("agent", "sh", "true", "--detach")]
IDS = ["handshake", "agent-submit"]


def broken(tmp_path: object, module: str, fault: str) -> dict[str, str]:
    """A PYTHONPATH under which `module` raises on import, or cannot be found at all."""
    site = os.path.join(str(tmp_path), "site")
    os.makedirs(site, exist_ok=True)
    if fault == "raises":
        os.makedirs(os.path.join(site, module))
        with open(os.path.join(site, module, "__init__.py"), "w") as handle:
            handle.write(f"raise ImportError('{module} is deliberately broken')\n")
    else:  # a None entry in sys.modules: find_spec() answers None and import fails
        with open(os.path.join(site, "sitecustomize.py"), "w") as handle:
            handle.write(f"import sys\nsys.modules[{module!r}] = None\n")
    return {"PYTHONPATH": site}


def runs_in(home: str) -> list[str]:
    runs = os.path.join(home, "runs")
    return os.listdir(runs) if os.path.isdir(runs) else []


def assert_environment_fault(result: Result, module: str) -> None:
    assert result.returncode == 78, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and module in lines[0], result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
@pytest.mark.parametrize("fault", ["raises", "not-found"])
@pytest.mark.parametrize("module", ["psutil", "dependency_injector", "filelock"])
def test_a_broken_dependency_exits_78_with_empty_stdout_and_allocates_nothing(
    tmp_path: object, li_home: str, module: str, fault: str, command: tuple[str, ...]
) -> None:
    if command == ("handshake",) and fault == "raises":
        pytest.skip("handshake imports no dependency (start-up budget); a module that raises is "
                    "diagnosed by the first verb that imports it, as the other rows prove")
    result = run_li(*command, "--machine", home=li_home, env=broken(tmp_path, module, fault))
    assert_environment_fault(result, module)
    assert runs_in(li_home) == []


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_human_mode_over_a_broken_dependency_also_exits_78(
    tmp_path: object, li_home: str, command: tuple[str, ...]
) -> None:
    fault = "not-found" if command == ("handshake",) else "raises"
    result = run_li(*command, home=li_home, env=broken(tmp_path, "psutil", fault))
    assert_environment_fault(result, "psutil")


def test_an_agent_submit_does_not_need_yaml_but_orchestrate_does(tmp_path: object, li_home: str) -> None:
    # yaml reads only orchestrate's plan: an agent submit (and its runner) never imports it, so a
    # broken yaml does not stop one (10-20 ms of every submit); orchestrate still exits 78.
    env = broken(tmp_path, "yaml", "raises")
    submitted = run_li("agent", "sh", "true", "--detach", "--machine", home=li_home, env=env)
    assert submitted.returncode == 0 and json.loads(submitted.stdout)["ok"] is True, submitted.stdout
    assert len(runs_in(li_home)) == 1
    refused = run_li("orchestrate", "flow", "-", "--machine", home=li_home, env=env)
    assert_environment_fault(refused, "yaml")
    assert len(runs_in(li_home)) == 1


def test_a_read_verb_over_a_dependency_that_raises_exits_78(tmp_path: object, li_home: str) -> None:
    result = run_li("job", "list", "--machine", home=li_home, env=broken(tmp_path, "dependency_injector", "raises"))
    assert_environment_fault(result, "dependency_injector")


def test_a_healthy_installation_is_not_diagnosed(li_home: str) -> None:
    result = run_li("handshake", "--machine", home=li_home)
    assert result.returncode == 0 and json.loads(result.stdout)["ok"] is True


# A submit that allocates a run and only then fails to import: D8 forbids 78 once a run exists.
ALLOCATE_THEN_FAIL = textwrap.dedent("""
    import sys
    import lionrun.entrypoints.verbs.agent as agent
    def allocate_then_fail(args):
        from lionrun.entrypoints.container import get_container
        container = get_container()
        container.core.store().reserve(container.core.clock().now())
        import a_module_that_is_not_installed  # noqa: F401
    agent.run = agent.human = allocate_then_fail
    from lionrun.entrypoints.bootstrap import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.parametrize("machine", [True, False], ids=["machine", "human"])
def test_a_submit_that_fails_after_allocating_a_run_is_never_answered_with_78(li_home: str, machine: bool) -> None:
    argv = ["agent", "sh", "true", "--detach", *(["--machine"] if machine else [])]
    proc = subprocess.run([sys.executable, "-c", ALLOCATE_THEN_FAIL, *argv], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "LI_HOME": li_home}, stdin=subprocess.DEVNULL, timeout=60)
    assert len(runs_in(li_home)) == 1
    assert proc.returncode != 78
    if machine:
        envelope = json.loads(proc.stdout)
        assert proc.returncode == 0 and envelope["error"]["kind"] == "internal", proc.stdout
    else:
        assert proc.returncode == 70 and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_the_installed_console_script_is_the_one_under_test() -> None:
    assert os.path.isabs(li_bin())
