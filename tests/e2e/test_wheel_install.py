"""lionrun from a wheel, with no repository beside it: one import name at the top of site-packages,
and `li` whole from there (handshake, followed and detached runs, every `li job` verb, `li mcp`,
both supervisors, confinement and the broker, worktrees).

The wheel is built from this checkout and installed with `--no-deps` into a fresh virtual
environment; the dependencies it needs are the ones already installed beside this interpreter,
named by a `.pth` line (a path line adds the folder only: the editable finder of this checkout,
which sits there too, is never activated). `tools/wheel_check.sh` (run by .ci/run) does the same
from the package registry with two PyPI packages that share our old top-level names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import REPO, machine, run_li

LAYERS = ("domain", "application", "adapters", "entrypoints")
FAKES = os.path.join(REPO, "tests", "fakes", "bin")
SKIP_COPY = shutil.ignore_patterns(".git", ".venv*", ".tools", "build", "dist", "*.egg-info", "__pycache__",
                                   ".mypy_cache", ".ruff_cache", ".hypothesis", ".pytest_cache", "node_modules")

pytestmark = pytest.mark.skipif(bool(os.environ.get("LI_BIN")), reason="builds and installs lionrun itself")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A wheel of the working tree, built from a copy of it (the build writes beside its sources)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=SKIP_COPY)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(root / "dist"), str(source)],
                   check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    (found,) = (root / "dist").glob("lionrun-*.whl")
    return str(found)


@pytest.fixture(scope="module")
def installed(wheel: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A fresh venv holding the wheel; `li`, `python` and a cwd far from the repository."""
    root = tmp_path_factory.mktemp("installed")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, stdin=subprocess.DEVNULL, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", wheel],
                   check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "lionrun-test-dependencies.pth"), "w") as handle:
        handle.write(sysconfig.get_paths()["purelib"] + "\n")
    away = root / "elsewhere"
    away.mkdir()
    yield {"li": str(venv / "bin" / "li"), "python": python, "site": site, "cwd": str(away)}


@pytest.fixture
def wheel_li(installed: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every `run_li`/`machine` of the test drives the wheel's `li`, from far away, with no PYTHONPATH."""
    monkeypatch.setenv("LI_BIN", installed["li"])
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.chdir(installed["cwd"])
    return installed


def record_names(wheel: str) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        (record,) = [name for name in archive.namelist() if name.endswith(".dist-info/RECORD")]
        return [line.split(",")[0] for line in archive.read(record).decode().splitlines() if line]


def test_the_wheel_installs_one_top_level_name_and_every_module_of_the_four_layers(wheel: str) -> None:
    names = record_names(wheel)
    tops = {name.split("/")[0] for name in names}
    assert tops == {"lionrun", "lionrun-0.1.0.dist-info"}, sorted(tops)
    shipped = {name for name in names if name.endswith(".py")}
    expected = {f"lionrun/{path.relative_to(REPO)}" for layer in LAYERS for path in Path(REPO, layer).rglob("*.py")
                if "__pycache__" not in path.parts}
    assert expected and expected <= shipped, sorted(expected - shipped)
    assert {"lionrun/__init__.py", "lionrun/__main__.py"} <= shipped
    with zipfile.ZipFile(wheel) as archive:
        (points,) = [name for name in archive.namelist() if name.endswith("entry_points.txt")]
        assert "li = lionrun.entrypoints.bootstrap:console" in archive.read(points).decode()


def test_the_install_loads_lionrun_from_site_packages_and_claims_no_generic_name(wheel_li: dict[str, str]) -> None:
    probe = textwrap.dedent("""
        import importlib.util, json, lionrun.entrypoints
        print(json.dumps({"lionrun": lionrun.entrypoints.__file__,
                          "generic": [n for n in ("domain", "application", "adapters", "entrypoints")
                                      if importlib.util.find_spec(n) is not None]}))
    """)
    done = subprocess.run([wheel_li["python"], "-c", probe], capture_output=True, text=True, check=True,
                          cwd=wheel_li["cwd"])
    found = json.loads(done.stdout)
    assert found["lionrun"].startswith(wheel_li["site"]), found
    assert found["generic"] == [], found


def test_python_m_lionrun_is_li(wheel_li: dict[str, str], li_home: str) -> None:
    by_module = subprocess.run([wheel_li["python"], "-m", "lionrun", "handshake", "--machine"], capture_output=True,
                               text=True, env={**os.environ, "LI_HOME": li_home}, cwd=wheel_li["cwd"])
    assert by_module.returncode == 0, by_module.stderr
    assert json.loads(by_module.stdout) == machine("handshake", home=li_home).envelope
    assert json.loads(by_module.stdout)["data"]["module"].startswith(wheel_li["site"])
    version = subprocess.run([wheel_li["python"], "-m", "lionrun", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("li "), version


def test_a_followed_run_and_every_job_verb_work_from_the_wheel(wheel_li: dict[str, str], li_home: str) -> None:
    followed = run_li("agent", "sh", "echo hello from the wheel", home=li_home)
    assert followed.returncode == 0 and "hello from the wheel" in followed.stdout, followed
    done = machine("agent", "--detach", "sh", "echo done; exit 3", home=li_home).data["run_id"]
    waited = machine("job", "wait", done, "--max-wait", "30", "--poll-interval", "0.1", home=li_home).data
    assert waited["all_terminal"] is True, waited
    status = machine("job", "status", done, home=li_home).data
    assert (status["outcome"], status["exit_code"]) == ("failed", 3), status
    assert "done" in machine("job", "output", done, home=li_home).data["console"]["value"]
    sleeper = machine("agent", "--detach", "sh", "sleep 60", home=li_home).data["run_id"]
    listed = {row["run_id"] for row in machine("job", "list", home=li_home).data["runs"]}
    assert {done, sleeper} <= listed
    machine("job", "kill", sleeper, home=li_home)
    machine("job", "wait", sleeper, "--max-wait", "30", "--poll-interval", "0.1", home=li_home)
    assert machine("job", "status", sleeper, home=li_home).data["outcome"] == "cancelled"
    again = machine("job", "retry", done, home=li_home).data["run_id"]
    machine("job", "wait", again, "--max-wait", "30", "--poll-interval", "0.1", home=li_home)
    assert machine("job", "status", again, home=li_home).data["exit_code"] == 3
    machine("job", "rm", done, home=li_home)
    assert machine("job", "status", done, home=li_home).envelope["ok"] is False
    pruned = machine("job", "prune", home=li_home).data
    assert pruned, pruned
    assert machine("job", "list", home=li_home).data["runs"] == []


@pytest.mark.parametrize("supervisor", ["lean", "full"])
def test_a_confined_run_reaches_its_children_through_its_broker_from_the_wheel(
        wheel_li: dict[str, str], li_home: str, supervisor: str) -> None:
    env = {"LI_SUPERVISOR": supervisor}
    script = (f"child=$({wheel_li['li']} agent --detach sh 'echo CHILD-RAN' 2>/dev/null); "
              f"{wheel_li['li']} job wait \"$child\" --max-wait 30 --poll-interval 0.1 >/dev/null; "
              f"{wheel_li['li']} job output \"$child\"; echo \"CHILD=$child\"")
    parent = machine("agent", "--detach", "sh", script, home=li_home, env=env).data["run_id"]
    machine("job", "wait", parent, "--max-wait", "60", "--poll-interval", "0.1", home=li_home)
    status = machine("job", "status", parent, home=li_home).data
    assert (status["outcome"], status["confinement"]) == ("succeeded", "store_hidden"), status
    console = machine("job", "output", parent, home=li_home).data["console"]["value"]
    assert "CHILD-RAN" in console, console
    child = console.split("CHILD=")[1].split()[0]
    assert machine("job", "status", child, home=li_home).data["parent"] == parent


def git(repo: str, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p",
           "GIT_COMMITTER_EMAIL": "p@x"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git: apt-get install -y git")
def test_a_worktree_run_its_diff_apply_and_reply_work_from_the_wheel(wheel_li: dict[str, str], li_home: str,
                                                                     tmp_path: Path) -> None:
    repo = str(tmp_path / "repo")
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    Path(repo, "shared.txt").write_text("one\ntwo\n")
    git(repo, "add", "shared.txt")
    git(repo, "commit", "-qm", "init")
    fakes = {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}", "FAKE_EDIT_FILE": "shared.txt"}
    run_id = machine("agent", "--detach", "--worktree", "claude", "edit it", home=li_home, cwd=repo,
                     env=fakes).data["run_id"]
    machine("job", "wait", run_id, "--max-wait", "60", "--poll-interval", "0.1", home=li_home, env=fakes)
    status: dict[str, Any] = machine("job", "status", run_id, home=li_home).data
    assert status["outcome"] == "succeeded" and status["worktree"]["branch"] == f"li/{run_id}", status
    diff = machine("job", "diff", run_id, home=li_home).data
    assert "shared.txt" in json.dumps(diff), diff
    reply = machine("job", "reply", run_id, "second turn", "--detach", home=li_home, env=fakes).data["run_id"]
    machine("job", "wait", reply, "--max-wait", "60", "--poll-interval", "0.1", home=li_home)
    assert machine("job", "status", reply, home=li_home).data["outcome"] == "succeeded"
    machine("job", "apply", run_id, home=li_home, cwd=repo)
    assert git(repo, "status", "--porcelain").strip() != ""  # the run's change, now in the person's checkout


def test_li_mcp_from_the_wheel_answers_an_sdk_client(wheel_li: dict[str, str], li_home: str) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    run_id = machine("agent", "--detach", "sh", "echo via mcp", home=li_home).data["run_id"]
    params = StdioServerParameters(command=wheel_li["li"], args=["mcp"], env={"LI_HOME": li_home,
                                   "PATH": os.environ["PATH"]}, cwd=wheel_li["cwd"])

    async def session() -> None:
        with anyio.fail_after(120):
            async with Client(params, mode="legacy") as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert {"status", "wait", "handshake"} <= names, names
                result = await client.call_tool("status", {"run_id": run_id})
                assert not result.is_error, result
                assert run_id in json.dumps(result.structured_content)

    anyio.run(session)
