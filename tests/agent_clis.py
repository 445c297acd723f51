"""The real agent CLIs (Claude Code, Codex, Gemini CLI) the e2e tests drive, pointed at the model
stub (tests/model_stub.py). `tools/agent_clis.sh` installs them, pinned, under `.tools/agent-clis`
(`.ci/run` runs it; `LI_AGENT_CLIS` names another prefix). Without them a test that needs them
is skipped locally and fails in CI, never silently passing.

`agent_env` is the one place that knows how each CLI is pointed at an endpoint: everything is
environment and files under a HOME of the test's own (li launches the CLI; it passes its own
environment on to it, entrypoints/runner.py `provider_environment`). The `agents` fixture
submits through the real `li` with a real CLI so pointed at the test's model stub.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import psutil
import pytest

from tests.model_stub import ModelStub, Step
from tests.support import machine, run_li

REPO = pathlib.Path(__file__).resolve().parent.parent
INSTALL = "tools/agent_clis.sh"
CLIS = ("claude", "codex", "gemini")
OPENCODE = "opencode"  # driven like the three, installed by the same script, recorded apart
OPENCODE_MODEL = "anthropic/claude-stub"  # OpenCode's model when li names none (its opencode.json default)
KEY = "sk-stub-key"
PROMPT = "Say hello."
# Every run of the `agents` fixture appends `cli, test, status, outcome, reason, seconds` here: the
# table CLI x case the closing note asks for (no test asserts wall time).
TABLE = REPO / "build" / "real-agents.tsv"
CODEX_MODEL = "gpt-stub"  # Codex's model when li names none (its config.toml default)


def prefix() -> pathlib.Path:
    return pathlib.Path(os.environ.get("LI_AGENT_CLIS") or REPO / ".tools" / "agent-clis")


def cli_bin(*needed: str) -> str:
    """The folder holding the real CLIs (the three, or those `needed`); skips the test locally,
    fails it in CI, without them."""
    folder = prefix() / "bin"
    missing = [cli for cli in needed or CLIS if not os.access(folder / cli, os.X_OK)]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"the real agent CLIs ({', '.join(missing)}) are not in {folder}: .ci/run installs "
                        f"them with {INSTALL}")
        pytest.skip(f"no real agent CLIs ({', '.join(missing)}) in {folder}: install them with `{INSTALL}`")
    return str(folder)


def agent_env(cli: str, url: str, home: pathlib.Path, *, key: str = KEY, retries: int = 1,
              trusted: bool = True, request_retries: int | None = None) -> dict[str, str]:
    """The environment (and the files under `home`) that point `cli` at the endpoint `url`.

    `url` is the stub's base (`ModelStub.url`) or any other address (`refused_url()`).
    `retries` bounds the CLI's own retries of a failed request (each CLI's documented knob:
    CLAUDE_CODE_MAX_RETRIES; a Codex provider's request_max_retries and stream_max_retries;
    Gemini's general.maxAttempts, attempts = retries + 1), so a failure ends in seconds, not the
    minutes their defaults take. Codex retries a failed request silently (request_max_retries)
    before it retries the stream, saying "Reconnecting... N/M" (stream_max_retries):
    `request_retries` sets the first apart (default: `retries`). `trusted=False` leaves Gemini's workspace untrusted (it refuses
    headless work there). The CLI's HOME, TMPDIR (Codex refuses its helpers under /tmp) and
    CODEX_HOME are under `home`, so nothing is read from or written to the real home.
    """
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {"PATH": f"{cli_bin(*([cli] if cli == OPENCODE else []))}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(home),
           "TMPDIR": str(tmp), "NO_COLOR": "1"}
    if cli == "claude":
        env.update({"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": key, "DISABLE_TELEMETRY": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                    "CLAUDE_CODE_MAX_RETRIES": str(retries)})
    elif cli == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(
            f'model = "{CODEX_MODEL}"\nmodel_provider = "stub"\n\n'
            f'[model_providers.stub]\nname = "model stub"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
            f'env_key = "LI_STUB_OPENAI_KEY"\nrequest_max_retries = {retries if request_retries is None else request_retries}\n'
            f'stream_max_retries = {retries}\n')
        env.update({"CODEX_HOME": str(codex_home), "LI_STUB_OPENAI_KEY": key})
    elif cli == "gemini":
        settings = home / ".gemini"
        settings.mkdir(exist_ok=True)
        (settings / "settings.json").write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"maxAttempts": retries + 1}}))
        env.update({"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": key})
        if trusted:
            env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
    elif cli == OPENCODE:
        # Its built-in Anthropic provider pointed at the stub, with a model of the stub's own; no
        # update check, no fetch of the models.dev catalogue (the machine may have no network).
        config = home / ".config" / "opencode"
        config.mkdir(parents=True, exist_ok=True)
        (config / "opencode.json").write_text(json.dumps({
            "model": OPENCODE_MODEL, "autoupdate": False, "share": "disabled",
            "provider": {"anthropic": {"options": {"baseURL": f"{url}/v1", "apiKey": key},
                                       "models": {OPENCODE_MODEL.split("/", 1)[1]: {"name": "model stub"}}}}}))
        env.update({"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"})
    else:
        raise ValueError(f"no real CLI {cli!r}")
    return env


def version(cli: str) -> str:
    """The pinned version of `cli` that tools/agent_clis.sh installs (read from the script)."""
    names = {"claude": "CLAUDE_CODE", "codex": "CODEX", "gemini": "GEMINI_CLI", OPENCODE: "OPENCODE"}
    for line in (REPO / INSTALL).read_text().splitlines():
        if line.startswith(f"{names[cli]}="):
            return line.split("=", 1)[1]
    raise AssertionError(f"{INSTALL} pins no version of {cli}")


# --- driving the real li with a real CLI --------------------------------------------------------

@dataclass
class Ended:
    """A run of one real CLI, ended: its status record, the person's transcript, the raw stream,
    and what li said of it (its li log, apart from the console)."""

    cli: str
    run_id: str
    data: dict[str, Any]
    transcript: str
    raw: str
    response: str | None
    workspace: pathlib.Path
    seconds: float
    requests: list[Any] = field(default_factory=list)
    said: str = ""

    @property
    def leg(self) -> dict[str, Any]:
        legs = self.data["manifest"]["value"]["legs"]
        assert len(legs) == 1, legs
        return legs[0]

    def events(self) -> list[dict[str, Any]]:
        found = []
        for line in self.raw.splitlines():
            with_brace = line[line.find("{"):] if "{" in line else ""
            try:
                found.append(json.loads(with_brace))
            except ValueError:
                continue
        return found

    def errors(self) -> list[str]:
        """The transcript's lines a person reads as an error."""
        return [line.strip() for line in self.transcript.splitlines() if line.strip().startswith("✗")]


class Agents:
    """Submits through the real `li` with a real CLI pointed at this test's stub."""

    def __init__(self, stub: ModelStub, tmp_path: pathlib.Path, li_home: str, request: pytest.FixtureRequest) -> None:
        self.stub, self.tmp, self.home, self.request = stub, tmp_path, li_home, request
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.started: list[str] = []

    def env(self, cli: str, *, url: str | None = None, retries: int | None = 1, trusted: bool = True,
            key: str = KEY, request_retries: int | None = None) -> dict[str, str]:
        env = agent_env(cli, url or self.stub.url, self.tmp / f"home-{cli}", key=key,
                        retries=1 if retries is None else retries, trusted=trusted, request_retries=request_retries)
        if retries is None:  # the CLI's own default retries
            env.pop("CLAUDE_CODE_MAX_RETRIES", None)
            if cli == "codex":
                config = pathlib.Path(env["CODEX_HOME"]) / "config.toml"
                config.write_text("\n".join(line for line in config.read_text().splitlines()
                                            if "max_retries" not in line) + "\n")
            if cli == "gemini":
                (pathlib.Path(env["HOME"]) / ".gemini" / "settings.json").write_text(
                    json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
        env["LI_KILL_GRACE"] = "1"
        return env

    def submit(self, cli: str, *words: str, steps: tuple[Step, ...] = (), model: str | None = None,
               extra_env: dict[str, str] | None = None, **env_options: Any) -> tuple[str, dict[str, str]]:
        if steps:
            self.stub.script(*steps)
        env = {**self.env(cli, **env_options), **(extra_env or {})}
        spec = f"{cli}/{model}" if model else cli
        done = machine("agent", "--detach", *words, spec, PROMPT, home=self.home, env=env, cwd=str(self.workspace))
        run_id = done.data["run_id"]
        self.started.append(run_id)
        return run_id, env

    def finish(self, cli: str, run_id: str, env: dict[str, str], began: float, limit: float = 150) -> Ended:
        deadline = time.monotonic() + limit
        data = machine("job", "status", run_id, home=self.home, env=env).data
        while not data["terminal"] and time.monotonic() < deadline:
            machine("job", "wait", "--max-wait", "10", "--poll-interval", "0.2", run_id, home=self.home, env=env)
            data = machine("job", "status", run_id, home=self.home, env=env).data
        seconds = round(time.monotonic() - began, 1)
        assert data["terminal"], f"{cli} run {run_id} did not end in {limit} s: {data['status']}"
        transcript = run_li("job", "output", run_id, home=self.home, env=env).stdout
        raw = run_li("job", "output", "--raw", run_id, home=self.home, env=env).stdout
        response_path = pathlib.Path(self.home, "runs", run_id, "artifacts", "response.md")
        response = response_path.read_text() if response_path.exists() else None
        said = pathlib.Path(self.home, "runs", run_id, "li.log").read_text(errors="replace")
        assert "li runner" not in raw, raw  # the console is the CLI's own stream, nothing of li's
        ended = Ended(cli, run_id, data, transcript, raw, response, self.workspace, seconds, list(self.stub.requests),
                      said)
        TABLE.parent.mkdir(exist_ok=True)
        with open(TABLE, "a", encoding="utf-8") as table:
            table.write(f"{cli}\t{self.request.node.name}\t{data['status']}\t{data['outcome']}\t"
                        f"{data['reason_code']}\t{seconds}\n")
        return ended

    def run(self, cli: str, *words: str, steps: tuple[Step, ...] = (), model: str | None = None,
            limit: float = 150, extra_env: dict[str, str] | None = None, **env_options: Any) -> Ended:
        began = time.monotonic()
        run_id, env = self.submit(cli, *words, steps=steps, model=model, extra_env=extra_env, **env_options)
        return self.finish(cli, run_id, env, began, limit)


@pytest.fixture
def agents(model_stub: ModelStub, tmp_path: pathlib.Path, li_home: str, request: pytest.FixtureRequest
           ) -> Iterator[Agents]:
    cli_bin()  # skips locally / fails in CI without the CLIs
    made = Agents(model_stub, tmp_path, li_home, request)
    yield made
    for run_id in made.started:  # nothing of a run outlives its test
        for process in members(run_id):
            with_suppress_kill(process)


def members(run_id: str, token: str | None = None) -> list[psutil.Process]:
    """Every live process carrying the run's LI_RUN_ID (or `token` on its command line)."""
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            if token and token in " ".join(process.cmdline()):
                found.append(process)
                continue
            if process.environ().get("LI_RUN_ID") == run_id:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def with_suppress_kill(process: psutil.Process) -> None:
    with contextlib.suppress(psutil.Error):
        process.kill()


def one_line_with(ended: Ended, fragment: str) -> str:
    """The one error line of the transcript that says `fragment` (a person sees it once, as an error)."""
    lines = [line for line in ended.errors() if fragment.lower() in line.lower()]
    assert len(lines) == 1, (fragment, ended.errors(), ended.transcript)
    assert "success" not in lines[0].split(":", 1)[0], lines  # never labelled a success
    return lines[0]
