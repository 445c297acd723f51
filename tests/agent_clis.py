"""The real agent CLIs (Claude Code, Codex, Gemini CLI) the e2e tests drive, pointed at the model
stub (tests/model_stub.py). `tools/agent_clis.sh` installs them, pinned, under `.tools/agent-clis`
(`.ci/run` runs it; `LI_AGENT_CLIS` names another prefix). Without them a test that needs them
is skipped locally and fails in CI, never silently passing.

`agent_env` is the one place that knows how each CLI is pointed at an endpoint: everything is
environment and files under a HOME of the test's own (li launches the CLI; it passes its own
environment on to it, entrypoints/runner.py `provider_environment`).
"""

from __future__ import annotations

import json
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
INSTALL = "tools/agent_clis.sh"
CLIS = ("claude", "codex", "gemini")
KEY = "sk-stub-key"
CODEX_MODEL = "gpt-stub"  # Codex's model when li names none (its config.toml default)


def prefix() -> pathlib.Path:
    return pathlib.Path(os.environ.get("LI_AGENT_CLIS") or REPO / ".tools" / "agent-clis")


def cli_bin() -> str:
    """The folder holding the three real CLIs; skips the test locally, fails it in CI, without them."""
    folder = prefix() / "bin"
    missing = [cli for cli in CLIS if not os.access(folder / cli, os.X_OK)]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"the real agent CLIs ({', '.join(missing)}) are not in {folder}: .ci/run installs "
                        f"them with {INSTALL}")
        pytest.skip(f"no real agent CLIs ({', '.join(missing)}) in {folder}: install them with `{INSTALL}`")
    return str(folder)


def agent_env(cli: str, url: str, home: pathlib.Path, *, key: str = KEY, retries: int = 1,
              trusted: bool = True) -> dict[str, str]:
    """The environment (and the files under `home`) that point `cli` at the endpoint `url`.

    `url` is the stub's base (`ModelStub.url`) or any other address (`refused_url()`).
    `retries` bounds the CLI's own retries of a failed request (each CLI's documented knob:
    CLAUDE_CODE_MAX_RETRIES; a Codex provider's request_max_retries and stream_max_retries;
    Gemini's general.maxAttempts, attempts = retries + 1), so a failure ends in seconds, not the
    minutes their defaults take. `trusted=False` leaves Gemini's workspace untrusted (it refuses
    headless work there). The CLI's HOME, TMPDIR (Codex refuses its helpers under /tmp) and
    CODEX_HOME are under `home`, so nothing is read from or written to the real home.
    """
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {"PATH": f"{cli_bin()}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(home),
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
            f'env_key = "LI_STUB_OPENAI_KEY"\nrequest_max_retries = {retries}\nstream_max_retries = {retries}\n')
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
    else:
        raise ValueError(f"no real CLI {cli!r}")
    return env


def version(cli: str) -> str:
    """The pinned version of `cli` that tools/agent_clis.sh installs (read from the script)."""
    names = {"claude": "CLAUDE_CODE", "codex": "CODEX", "gemini": "GEMINI_CLI"}
    for line in (REPO / INSTALL).read_text().splitlines():
        if line.startswith(f"{names[cli]}="):
            return line.split("=", 1)[1]
    raise AssertionError(f"{INSTALL} pins no version of {cli}")
