"""The verb table: (command, module, summary) for every verb of `li`, in the order `li --help`
lists them. Standard library only, importing nothing: the parser (entrypoints/cli.py) imports the
module of the verb a request names and no other, and `li --help` lists every verb from the
summaries here (as pip's command table carries them), importing no verb module. It stands outside
`entrypoints/verbs/` so that no verb module is imported to read it, and each verb registers its
parser with its summary from here (`summary`), so the two cannot disagree.
"""

from __future__ import annotations

VERB_TABLE: tuple[tuple[str, str, str], ...] = (
    ("handshake", "lionrun.entrypoints.verbs.handshake", "print the contract version this li speaks"),
    ("agent", "lionrun.entrypoints.verbs.agent", "run one agent (sh, claude, codex, gemini, opencode)"),
    ("orchestrate", "lionrun.entrypoints.verbs.orchestrate", "run a flow (DAG) or a fanout of agents"),
    ("job", "lionrun.entrypoints.verbs.job",
     "status, output, list, kill, wait, prune, retry, rm, diff, apply, reply, approvals, approve, deny"),
    ("store", "lionrun.entrypoints.verbs.store",
     "make the store ready (a PostgreSQL store needs `li store init` once)"),
    ("queue", "lionrun.entrypoints.verbs.queue", "queues with parallel limits: set, pause, resume, list"),
    ("usage", "lionrun.entrypoints.verbs.usage", "what ended runs spent: tokens, cost, wall time"),
    ("doctor", "lionrun.entrypoints.verbs.doctor", "check that runs can be started and observed here"),
    ("completion", "lionrun.entrypoints.verbs.completion", "print a bash, zsh or fish completion script"),
    ("mcp", "lionrun.entrypoints.verbs.mcp", "serve li's tools over MCP on stdio (or --http on 127.0.0.1)"),
    ("serve", "lionrun.entrypoints.verbs.serve",
     "serve a live page of the store's runs on this machine (loopback only)"),
)


def summary(command: str) -> str:
    """A top-level verb's one-line summary, as `li --help` lists it."""
    return next(text for name, _, text in VERB_TABLE if name == command)
