"""Steps for features/d01, d02, d03 and d08: the real `li` (or `$LI_BIN`) as a subprocess."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import textwrap
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from pytest_bdd import given, parsers, then, when

from tests.support import Result, li_bin, run_li

ERROR_KINDS = {"not_found", "invalid_input", "conflict", "unavailable", "internal"}
ESC = "\x1b"




@dataclass
class ContractCall:
    """One scenario's li home, environment tweaks, and what li answered."""

    home: str
    site: str
    env: dict[str, str] = field(default_factory=dict)
    result: Result | None = None
    results: list[Result] = field(default_factory=list)
    launch_error: OSError | None = None

    @property
    def last(self) -> Result:
        assert self.result is not None, "no li call was made"
        return self.result

    def envelope(self) -> dict[str, Any]:
        return one_object(self.last.stdout)

    def add_site(self, code: str) -> None:
        """Add code to a `sitecustomize` that li's interpreter runs before anything of ours."""
        require_our_li()
        path = os.path.join(self.site, "sitecustomize.py")
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(code) + "\n")
        self.env["PYTHONPATH"] = self.site


def require_our_li() -> None:
    """Faults injected into Python's import system only apply to this package's own `li`."""
    if os.environ.get("LI_BIN"):
        pytest.skip("injects a fault into lionrun's own interpreter; not applicable to $LI_BIN")


def one_object(stdout: str) -> dict[str, Any]:
    """The single JSON object stdout holds; anything before or after it fails."""
    decoder = json.JSONDecoder()
    text = stdout.lstrip()
    value, end = decoder.raw_decode(text)
    assert text[end:].strip() == "", f"more than one JSON value on stdout: {stdout!r}"
    assert isinstance(value, dict), stdout
    return value


def parses(stdout: str) -> bool:
    try:
        one_object(stdout)
    except (ValueError, AssertionError):
        return False
    return True


@pytest.fixture
def contract_call(tmp_path: Any) -> ContractCall:
    site = tmp_path / "site"
    site.mkdir()
    return ContractCall(home=str(tmp_path / "li-home"), site=str(site))


# --- Given ---------------------------------------------------------------------------------


@given("a fresh li home")
def fresh_home(contract_call: ContractCall) -> None:
    assert not os.path.exists(contract_call.home)


@given(parsers.parse('a required dependency "{module}" that fails when imported'))
def dependency_raises(contract_call: ContractCall, module: str) -> None:
    require_our_li()
    package = os.path.join(contract_call.site, module)
    os.makedirs(package, exist_ok=True)
    with open(os.path.join(package, "__init__.py"), "w", encoding="utf-8") as handle:
        handle.write(f"raise ImportError('{module} is deliberately broken by this test')\n")
    contract_call.env["PYTHONPATH"] = contract_call.site


@given(parsers.parse('a required dependency "{module}" that is not installed'))
def dependency_missing(contract_call: ContractCall, module: str) -> None:
    # A None entry in sys.modules makes find_spec() answer None and `import` fail.
    contract_call.add_site(f"import sys\nsys.modules[{module!r}] = None")


@given(parsers.parse('li\'s own process writes "{words}" to its stdout, by both routes, as it exits'))
def stray_at_exit(contract_call: ContractCall, words: str) -> None:
    contract_call.add_site(f"""
        import atexit, os
        def _stray():
            print({words!r} + " via print")
            os.write(1, {(words + " via fd 1" + chr(10)).encode()!r})
        atexit.register(_stray)
    """)


@given("the handshake command fails with an unexpected exception")
def handshake_crashes(contract_call: ContractCall) -> None:
    contract_call.add_site("""
        import lionrun.entrypoints.verbs.handshake as _h
        def _boom(args):
            raise RuntimeError("handshake exploded for this test")
        _h.run = _boom
        _h.show = lambda data, args: 0
    """)


@given("the handshake command exits abruptly with status 3 midway")
def handshake_exits(contract_call: ContractCall) -> None:
    contract_call.add_site("""
        import sys
        import lionrun.entrypoints.verbs.handshake as _h
        _h.run = lambda args: sys.exit(3)
    """)


@given("the agent command allocates a run and then fails to import a module")
def agent_allocates_then_fails(contract_call: ContractCall) -> None:
    contract_call.add_site("""
        import lionrun.entrypoints.verbs.agent as _a
        def _allocate_then_fail(args):
            from lionrun.entrypoints.container import get_container
            container = get_container()
            container.core.store().reserve(container.core.clock().now())
            import a_module_that_is_not_installed  # noqa: F401
        _a.run = _a.human = _allocate_then_fail
    """)


@given("li stalls before it can answer")
def stall(contract_call: ContractCall) -> None:
    contract_call.add_site("import time\ntime.sleep(120)")


@given("an environment that asks for colour and names a pager")
def loud_environment(contract_call: ContractCall) -> None:
    contract_call.env.update({
        "TERM": "xterm-256color", "FORCE_COLOR": "1", "CLICOLOR_FORCE": "1", "PY_COLORS": "1",
        "PAGER": "echo PAGED-BY-PAGER", "GIT_PAGER": "echo PAGED-BY-PAGER", "NO_COLOR": "",
    })


# --- When ----------------------------------------------------------------------------------


@when(parsers.parse('a program runs li with "{arguments}"'))
def run_once(contract_call: ContractCall, arguments: str) -> None:
    contract_call.result = run_li(*shlex.split(arguments), home=contract_call.home, env=contract_call.env)
    contract_call.results.append(contract_call.result)


@when(parsers.parse('a program runs li with "{arguments}" twice'))
def run_twice(contract_call: ContractCall, arguments: str) -> None:
    for _ in range(2):
        run_once(contract_call, arguments)


@when("a program runs each of these li calls:")
def run_each(contract_call: ContractCall, datatable: list[list[str]]) -> None:
    header, *rows = datatable
    assert header == ["arguments"], header
    for (arguments,) in rows:
        run_once(contract_call, arguments)


@when(parsers.parse('a program runs li with "{arguments}" over a broken installation'))
def run_broken(contract_call: ContractCall, arguments: str) -> None:
    dependency_raises(contract_call, "psutil")
    run_once(contract_call, arguments)


@when(parsers.parse('a program runs li with "{arguments}" while stdin stays open'))
def run_with_open_stdin(contract_call: ContractCall, arguments: str) -> None:
    env = {**os.environ, "LI_HOME": contract_call.home, **contract_call.env}
    proc = subprocess.Popen([li_bin(), *shlex.split(arguments)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        out, err = proc.communicate(timeout=60)  # stdin is a pipe nobody writes to or closes
    finally:
        if proc.poll() is None:
            proc.kill()
    contract_call.result = Result(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


@when(parsers.parse('a program runs li by absolute path with an empty PATH and "{arguments}"'))
def run_without_path(contract_call: ContractCall, arguments: str) -> None:
    executable = li_bin()
    assert os.path.isabs(executable)
    env = {"LI_HOME": contract_call.home, "PATH": ""}
    proc = subprocess.run([executable, *shlex.split(arguments)], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=60)
    contract_call.result = Result(proc.returncode, proc.stdout, proc.stderr)


@when(parsers.parse('a program starts li with "{arguments}" and kills it'))
def start_and_kill(contract_call: ContractCall, arguments: str) -> None:
    env = {**os.environ, "LI_HOME": contract_call.home, **contract_call.env}
    proc = subprocess.Popen([li_bin(), *shlex.split(arguments)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    time.sleep(0.2)  # it is stalled before answering; the exact moment does not matter
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    contract_call.result = Result(proc.returncode, out.decode(), err.decode())


@when(parsers.parse('a program runs li with "{arguments}" and its stdout {fault}'))
def run_with_broken_stdout(contract_call: ContractCall, arguments: str, fault: str) -> None:
    """stdout on /dev/full, on a pipe whose reader already left, or closed (`>&-`)."""
    env = {**os.environ, "LI_HOME": contract_call.home, **contract_call.env}
    argv = [li_bin(), *shlex.split(arguments)]
    if fault == "is closed":
        argv, stdout = ["/bin/sh", "-c", 'exec "$@" >&-', "sh", *argv], None
    elif fault == "is a full device":
        if not os.path.exists("/dev/full"):
            pytest.skip("no /dev/full on this system")
        stdout = os.open("/dev/full", os.O_WRONLY)
    else:
        assert fault == "is a pipe nobody reads", fault
        read_end, stdout = os.pipe()
        os.close(read_end)
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
                              text=True, env=env, timeout=60)
    finally:
        if stdout is not None:
            os.close(stdout)
    contract_call.result = Result(proc.returncode, "", proc.stderr)


@when("a program launches li from a path that does not exist")
def launch_missing(contract_call: ContractCall, tmp_path: Any) -> None:
    try:
        subprocess.run([str(tmp_path / "no-such-li"), "handshake", "--machine"], capture_output=True)
    except OSError as error:
        contract_call.launch_error = error


# --- Then ----------------------------------------------------------------------------------


@then("stdout holds exactly one JSON object and nothing else")
def exactly_one_object(contract_call: ContractCall) -> None:
    envelope = contract_call.envelope()
    assert envelope["contract_version"] == 1
    assert (envelope["data"] is None) != (envelope["error"] is None), envelope


@then("stdout is readable text, not a JSON object")
def human_text(contract_call: ContractCall) -> None:
    assert contract_call.last.stdout.strip()
    assert not parses(contract_call.last.stdout), contract_call.last.stdout


@then("stdout is empty")
def stdout_empty(contract_call: ContractCall) -> None:
    assert contract_call.last.stdout == "", contract_call.last.stdout


@then("stderr is exactly one line")
def one_stderr_line(contract_call: ContractCall) -> None:
    lines = contract_call.last.stderr.splitlines()
    assert len(lines) == 1 and lines[0].strip(), contract_call.last.stderr


@then(parsers.parse('stderr mentions "{words}"'))
def stderr_mentions(contract_call: ContractCall, words: str) -> None:
    assert words in contract_call.last.stderr, contract_call.last.stderr


@then(parsers.parse("the exit status is {code:d}"))
def exit_status(contract_call: ContractCall, code: int) -> None:
    assert contract_call.last.returncode == code, (contract_call.last.returncode, contract_call.last.stderr)


@then("the exit status is not 0")
def exit_not_zero(contract_call: ContractCall) -> None:
    assert contract_call.last.returncode != 0


@then("the exit status is neither 0 nor 78")
def exit_neither(contract_call: ContractCall) -> None:
    assert contract_call.last.returncode not in (0, 78), contract_call.last.returncode


@then(parsers.parse("the envelope says ok is {ok}"))
def envelope_ok(contract_call: ContractCall, ok: str) -> None:
    assert contract_call.envelope()["ok"] is {"true": True, "false": False}[ok]


@then(parsers.parse("the handshake data names contract_version {version:d}"))
def handshake_version(contract_call: ContractCall, version: int) -> None:
    data = contract_call.envelope()["data"]
    assert type(data["contract_version"]) is int and data["contract_version"] == version


@then("the envelope's contract_version is the integer 1")
def envelope_version(contract_call: ContractCall) -> None:
    value = contract_call.envelope()["contract_version"]
    assert type(value) is int and value == 1


@then("the envelope's data carries the help text")
def help_in_data(contract_call: ContractCall) -> None:
    assert "usage:" in contract_call.envelope()["data"]["help"]


@then("li finished without reading stdin")
def finished(contract_call: ContractCall) -> None:
    assert contract_call.last.returncode == 0
    one_object(contract_call.last.stdout)


@then("neither stream holds an escape sequence or the pager's words")
def plain_streams(contract_call: ContractCall) -> None:
    for stream in (contract_call.last.stdout, contract_call.last.stderr):
        assert ESC not in stream and "PAGED-BY-PAGER" not in stream, stream


@then("the handshake's module is an absolute path that exists")
def module_path(contract_call: ContractCall) -> None:
    module = contract_call.envelope()["data"]["module"]
    assert os.path.isabs(module) and os.path.exists(module), module


@then("both handshakes are identical")
def identical(contract_call: ContractCall) -> None:
    first, second = (one_object(r.stdout) for r in contract_call.results[-2:])
    assert first == second


@then(parsers.parse("the handshake data has the fields {names}"))
def handshake_fields(contract_call: ContractCall, names: str) -> None:
    data = contract_call.envelope()["data"]
    assert {n.strip() for n in names.split(",")} <= set(data), data


@then("the li home was not touched")
def home_untouched(contract_call: ContractCall) -> None:
    assert not os.path.exists(contract_call.home)


@then("every answer is an envelope carrying the handshake's contract_version")
def every_version(contract_call: ContractCall) -> None:
    version = one_object(contract_call.results[0].stdout)["data"]["contract_version"]
    for result in contract_call.results:
        assert result.returncode == 0
        assert one_object(result.stdout)["contract_version"] == version


@then("min_supported_version is the integer 1, not above contract_version")
def min_supported(contract_call: ContractCall) -> None:
    data = contract_call.envelope()["data"]
    assert type(data["min_supported_version"]) is int and data["min_supported_version"] == 1
    assert data["min_supported_version"] <= data["contract_version"]


@then(parsers.parse('the implementation is "{name}" at the version li --version prints'))
def implementation(contract_call: ContractCall, name: str) -> None:
    data = contract_call.envelope()["data"]
    printed = run_li("--version", home=contract_call.home).stdout.split()
    assert data["implementation"] == name
    assert isinstance(data["implementation_version"], str) and data["implementation_version"] in printed


@then("every answer sets exactly one of data and error, as ok says")
def exactly_one_side(contract_call: ContractCall) -> None:
    for result in contract_call.results:
        envelope = one_object(result.stdout)
        assert (envelope["data"] is None) != (envelope["error"] is None), envelope
        assert envelope["ok"] is (envelope["error"] is None), envelope


@then(parsers.parse('the error kind is "{kind}"'))
def error_kind(contract_call: ContractCall, kind: str) -> None:
    envelope = contract_call.envelope()
    assert envelope["ok"] is False and envelope["data"] is None, envelope
    assert envelope["error"]["kind"] == kind and kind in ERROR_KINDS, envelope


@then("every refusal has a non-empty message and a detail that is an object or null")
def refusals_explained(contract_call: ContractCall) -> None:
    for result in contract_call.results:
        error = one_object(result.stdout)["error"]
        assert error["kind"] in ERROR_KINDS
        assert isinstance(error["message"], str) and error["message"].strip()
        assert error["detail"] is None or isinstance(error["detail"], dict)


@then("no traceback reached either stream")
def no_traceback(contract_call: ContractCall) -> None:
    assert "Traceback" not in contract_call.last.stdout + contract_call.last.stderr


@then("no run was allocated")
def no_run(contract_call: ContractCall) -> None:
    runs = os.path.join(contract_call.home, "runs")
    assert not os.path.isdir(runs) or os.listdir(runs) == []


@then("a run was allocated")
def a_run(contract_call: ContractCall) -> None:
    assert len(os.listdir(os.path.join(contract_call.home, "runs"))) == 1


@then("the launch itself failed")
def launch_failed(contract_call: ContractCall) -> None:
    assert isinstance(contract_call.launch_error, OSError)


@then("an answer holds a valid envelope exactly when its exit status is 0")
def envelope_iff_zero(contract_call: ContractCall) -> None:
    codes = set()
    for result in contract_call.results:
        assert parses(result.stdout) == (result.returncode == 0), result
        codes.add(result.returncode)
    assert codes == {0, 78}, codes
