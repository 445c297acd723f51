"""The official MCP conformance suite (npm @modelcontextprotocol/conformance, installed pinned by
tools/mcp_conformance.sh) against `li mcp --http`: every scenario that applies passes; the others
are listed below with why they do not apply, and a scenario in neither list fails the test."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import pytest

from tests.support import REPO, li_bin

SUITE = pathlib.Path(os.environ.get("LI_MCP_CONFORMANCE") or pathlib.Path(REPO, ".tools", "mcp-conformance"))

#: Scenarios li mcp must pass.
APPLIES = {"server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"}

#: Scenarios that do not apply, and why. The `tools-call-*`, `resources-*`, `prompts-*` and
#: elicitation scenarios call fixtures of the suite's own reference server by name
#: (`test_simple_text`, `test_tool_with_progress`, `test://static-text`, `test_simple_prompt`, ...),
#: which li does not have: li's tools are its verbs, and calling one of them is proven through the
#: SDK client in tests/e2e/test_mcp_*.py (progress and errors included).
NOT_APPLICABLE = {
    "logging-set-level": "li mcp serves no logging capability (deprecated in MCP 2026-07-28); only tools",
    "completion-complete": "li mcp serves no prompts or resource templates, so nothing to complete",
    **{name: "calls a fixture tool of the suite's reference server, not one of li's"
       for name in ("tools-call-simple-text", "tools-call-image", "tools-call-audio",
                    "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging",
                    "tools-call-error", "tools-call-with-progress", "tools-call-sampling",
                    "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums")},
    **{name: "li mcp advertises no resources capability (nothing behind it)"
       for name in ("resources-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
                    "resources-subscribe", "resources-unsubscribe")},
    **{name: "li mcp advertises no prompts capability (nothing behind it)"
       for name in ("prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
                    "prompts-get-with-image")},
}


def suite_or_skip() -> None:
    if (SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js").exists():
        return
    why = f"the MCP conformance suite is not installed in {SUITE} (tools/mcp_conformance.sh install)"
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


def test_li_mcp_over_http_passes_every_conformance_scenario_that_applies(tmp_path: pathlib.Path,
                                                                         li_home: str) -> None:
    suite_or_skip()
    env = {**os.environ, "LI_HOME": li_home}
    server = subprocess.Popen([li_bin(), "mcp", "--http"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, env=env)
    try:
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
        token = server.stdout.readline().strip().removeprefix("token: ")  # type: ignore[union-attr]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp") and token, (url, token)
        out = tmp_path / "results"
        ran = subprocess.run([os.path.join(REPO, "tools", "mcp_conformance.sh"), "run", url, token, str(out)],
                             capture_output=True, text=True, timeout=600,
                             env={**os.environ, "LI_MCP_CONFORMANCE": str(SUITE)})
    finally:
        server.terminate()
        server.communicate(timeout=30)
    results: dict[str, list[dict[str, object]]] = {}
    for checks in out.glob("server-*/checks.json"):
        scenario = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        results[scenario] = json.loads(checks.read_text())
    assert set(results) >= APPLIES, (sorted(APPLIES - set(results)), ran.stdout[-3000:], ran.stderr[-3000:])
    unclassified = set(results) - APPLIES - set(NOT_APPLICABLE)
    assert not unclassified, f"scenarios neither passed nor explained: {sorted(unclassified)}"
    for scenario in APPLIES:
        failed = [c for c in results[scenario] if c.get("status") == "FAILURE"]
        passed = [c for c in results[scenario] if c.get("status") == "SUCCESS"]
        assert passed and not failed, (scenario, failed)
