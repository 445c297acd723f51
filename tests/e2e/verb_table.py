"""The verb table: every command `li` has, with good and bad arguments, each run with --machine.

Add rows here when you add a verb; `test_stdout_purity.py` fails if a registered command has
none. Keep rows cheap: submit rows use invalid input or `sh true`, waits use `--max-wait 0`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

UNKNOWN = "20990101T000000-abcdef"  # a well-formed run id that names no run
HUGE = "9" * 40
INVALID_UTF8 = os.fsdecode(b"\xff\xfe-not-utf8")  # raw argv bytes that are not UTF-8
UNICODE = "ünïcødé-✓-名前"


@dataclass(frozen=True)
class Row:
    """One request: `li <argv> --machine`."""

    name: str
    argv: tuple[str, ...]


def row(name: str, *argv: str) -> Row:
    return Row(name, tuple(argv))


TOP = [
    row("no-arguments"),
    row("help", "--help"),
    row("help-short", "-h"),
    row("version", "--version"),
    row("unknown-command", "no-such-command"),
    row("unknown-top-flag", "--no-such-flag"),
    row("unicode-command", UNICODE),
    row("invalid-utf8-command", INVALID_UTF8),
    row("traversal-command", "../../etc/passwd"),
    row("huge-command", HUGE),
]

HANDSHAKE = [
    row("handshake", "handshake"),
    row("handshake-help", "handshake", "--help"),
    row("handshake-unknown-flag", "handshake", "--no-such-flag"),
    row("handshake-extra-argument", "handshake", "extra"),
    row("handshake-invalid-utf8", "handshake", INVALID_UTF8),
]

AGENT = [
    row("agent-help", "agent", "--help"),
    row("agent-missing-prompt", "agent"),
    row("agent-unknown-flag", "agent", "--no-such-flag"),
    row("agent-sh-true", "agent", "sh", "true", "--detach"),
    row("agent-unicode-label", "agent", "sh", "true", "--detach", "--label", UNICODE),
    row("agent-unknown-model", "agent", "no-such-model/x", "hello", "--detach"),
    row("agent-missing-prompt-file", "agent", "sh", "--prompt-file", "/nonexistent/prompt.txt", "--detach"),
    row("agent-missing-cwd", "agent", "sh", "true", "--detach", "--cwd", "/nonexistent/dir"),
    row("agent-bad-timeout", "agent", "sh", "true", "--detach", "--timeout", "soon"),
    row("agent-negative-timeout", "agent", "sh", "true", "--detach", "--timeout", "-5"),
    row("agent-huge-timeout", "agent", "sh", "true", "--detach", "--timeout", HUGE + "e999"),
    row("agent-invalid-utf8-prompt-file", "agent", "sh", "--prompt-file", INVALID_UTF8, "--detach"),
    row("agent-bad-permission-mode", "agent", "claude", "hi", "--detach", "--permission-mode", UNICODE),
    row("agent-sh-permission-mode", "agent", "sh", "true", "--detach", "--permission-mode", "full"),
    row("agent-sh-provider-arg", "agent", "sh", "true", "--detach", "--provider-arg=--x"),
    row("agent-command-as-model", "agent", "echo", "hi", "--detach"),
    row("agent-raw-detached", "agent", "sh", "true", "--detach", "--raw"),
]

ORCHESTRATE = [
    row("orchestrate-help", "orchestrate", "--help"),
    row("orchestrate-missing-mode", "orchestrate"),
    row("orchestrate-unknown-mode", "orchestrate", "no-such-mode"),
    row("flow-help", "orchestrate", "flow", "--help"),
    row("flow-missing-spec", "orchestrate", "flow"),
    row("flow-nonexistent-spec", "orchestrate", "flow", "/nonexistent/flow.yaml", "--detach"),
    row("flow-traversal-spec", "orchestrate", "flow", "../../etc/passwd", "--detach"),
    row("flow-unknown-flag", "orchestrate", "flow", "x.yaml", "--no-such-flag"),
    row("fanout-help", "orchestrate", "fanout", "--help"),
    row("fanout-missing-prompt", "orchestrate", "fanout"),
    row("fanout-bad-legs", "orchestrate", "fanout", "sh", "true", "--legs", "many", "--detach"),
    row("fanout-negative-legs", "orchestrate", "fanout", "sh", "true", "--legs", "-1", "--detach"),
    row("fanout-huge-legs", "orchestrate", "fanout", "sh", "true", "--legs", HUGE, "--detach"),
]

JOB = [
    row("job", "job"),
    row("job-help", "job", "--help"),
    row("job-unknown-subcommand", "job", "no-such-subcommand"),
    row("status-help", "job", "status", "--help"),
    row("status-missing-id", "job", "status"),
    row("status-unknown-id", "job", "status", UNKNOWN),
    row("status-traversal-id", "job", "status", "../../etc/passwd"),
    row("status-absolute-path-id", "job", "status", "/etc/passwd"),
    row("status-empty-id", "job", "status", ""),
    row("status-unicode-id", "job", "status", UNICODE),
    row("status-invalid-utf8-id", "job", "status", INVALID_UTF8),
    row("status-huge-id", "job", "status", HUGE * 10),
    row("status-unknown-flag", "job", "status", UNKNOWN, "--no-such-flag"),
    row("output-help", "job", "output", "--help"),
    row("output-missing-id", "job", "output"),
    row("output-unknown-id", "job", "output", UNKNOWN),
    row("output-traversal-id", "job", "output", "../../etc/passwd"),
    row("output-huge-tail", "job", "output", UNKNOWN, "--tail-chars", HUGE),
    row("output-negative-tail", "job", "output", UNKNOWN, "--tail-chars", "-1"),
    row("output-bad-tail", "job", "output", UNKNOWN, "--tail-chars", "lots"),
    row("output-follow-unknown-id", "job", "output", UNKNOWN, "--follow"),
    row("output-raw-unknown-id", "job", "output", UNKNOWN, "--raw"),
    row("list", "job", "list"),
    row("list-help", "job", "list", "--help"),
    row("list-zero-limit", "job", "list", "--limit", "0"),
    row("list-huge-limit", "job", "list", "--limit", HUGE),
    row("list-bad-limit", "job", "list", "--limit", "some"),
    row("list-unicode-status", "job", "list", "--status", UNICODE),
    row("list-invalid-utf8-status", "job", "list", "--status", INVALID_UTF8),
    row("kill-help", "job", "kill", "--help"),
    row("kill-missing-id", "job", "kill"),
    row("kill-unknown-id", "job", "kill", UNKNOWN),
    row("kill-traversal-id", "job", "kill", ".."),
    row("list-label-model-since", "job", "list", "--label", UNICODE, "--model", "claude", "--since", "2h"),
    row("list-bad-since", "job", "list", "--since", "last tuesday"),
    row("wait-by-label", "job", "wait", "--label", UNICODE, "--max-wait", "0"),
    row("wait-by-status", "job", "wait", UNKNOWN, "--status", "running", "--max-wait", "0"),
    row("kill-several", "job", "kill", UNKNOWN, UNKNOWN),
    row("kill-by-label", "job", "kill", "--label", UNICODE),
    row("retry-help", "job", "retry", "--help"),
    row("retry-missing-id", "job", "retry"),
    row("retry-unknown-id", "job", "retry", UNKNOWN),
    row("retry-traversal-id", "job", "retry", ".."),
    row("retry-short-id", "job", "retry", "abcdef"),
    row("retry-unknown-id-detached", "job", "retry", UNKNOWN, "--detach"),
    row("diff-help", "job", "diff", "--help"),
    row("diff-missing-id", "job", "diff"),
    row("diff-unknown-id", "job", "diff", UNKNOWN, "--stat"),
    row("diff-traversal-id", "job", "diff", ".."),
    row("reply-help", "job", "reply", "--help"),
    row("reply-missing-id", "job", "reply"),
    row("reply-unknown-id", "job", "reply", UNKNOWN, "next"),
    row("reply-traversal-id", "job", "reply", "..", "next"),
    row("apply-help", "job", "apply", "--help"),
    row("apply-missing-id", "job", "apply"),
    row("apply-unknown-id", "job", "apply", UNKNOWN),
    row("apply-bad-cwd", "job", "apply", UNKNOWN, "--cwd", "/nonexistent/dir"),
    row("approvals", "job", "approvals"),
    row("approvals-help", "job", "approvals", "--help"),
    row("approve-help", "job", "approve", "--help"),
    row("approve-missing-id", "job", "approve"),
    row("approve-unknown-id", "job", "approve", UNKNOWN),
    row("deny-help", "job", "deny", "--help"),
    row("deny-missing-id", "job", "deny"),
    row("deny-unknown-id", "job", "deny", UNKNOWN, "--reason", "no"),
    row("approval-request-help", "job", "approval-request", "--help"),
    row("approval-request-outside-a-run", "job", "approval-request"),
    row("agent-worktree-bad-base", "agent", "sh", "true", "--worktree", "--base", "--all"),
    row("agent-setup-without-worktree", "agent", "sh", "true", "--setup", "make"),
    row("wait-help", "job", "wait", "--help"),
    row("wait-no-ids", "job", "wait", "--max-wait", "0"),
    row("wait-unknown-id", "job", "wait", UNKNOWN, "--max-wait", "0"),
    row("wait-traversal-id", "job", "wait", "../../etc/passwd", UNKNOWN, "--max-wait", "0"),
    row("wait-nan-bounds", "job", "wait", UNKNOWN, "--max-wait", "nan", "--poll-interval", "nan"),
    row("wait-huge-poll", "job", "wait", UNKNOWN, "--max-wait", "0", "--poll-interval", HUGE),
    row("wait-bad-max-wait", "job", "wait", UNKNOWN, "--max-wait", "forever"),
    row("wait-ids-from-empty-stdin", "job", "wait", "-", "--max-wait", "0"),
    row("prune-help", "job", "prune", "--help"),
    row("prune-empty-home", "job", "prune"),
    row("prune-dry-run", "job", "prune", "--dry-run"),
    row("prune-bad-days", "job", "prune", "--older-than", "yesterday"),
    row("prune-huge-days", "job", "prune", "--older-than", HUGE, "--dry-run"),
    row("prune-duration", "job", "prune", "--older-than", "2h", "--dry-run"),
    row("rm-help", "job", "rm", "--help"),
    row("rm-no-id", "job", "rm"),
    row("rm-unknown", "job", "rm", UNKNOWN),
    row("rm-unknown-forced", "job", "rm", UNKNOWN, "--force"),
    row("rm-traversal-id", "job", "rm", "../../etc/passwd"),
    row("list-unknown-status", "job", "list", "--status", "runing"),
    row("list-watch", "job", "list", "--watch"),
    row("output-lines", "job", "output", UNKNOWN, "--lines", "3"),
    row("output-bad-lines", "job", "output", UNKNOWN, "--lines", "x"),
    row("output-artifact", "job", "output", UNKNOWN, "--artifact", "a.txt"),
]

OTHERS = [
    row("store-missing-subcommand", "store"),
    row("store-help", "store", "--help"),
    row("store-init", "store", "init"),
    row("store-init-help", "store", "init", "--help"),
    row("store-init-extra", "store", "init", "extra"),
    row("store-unknown-subcommand", "store", "drop"),
    row("store-copy-help", "store", "copy", "--help"),
    row("store-copy-missing-from", "store", "copy", "--to", "postgresql://127.0.0.1:1/none"),
    row("store-copy-missing-to", "store", "copy", "--from", "/nonexistent-li-home"),
    row("store-copy-not-postgresql", "store", "copy", "--from", "/nonexistent-li-home", "--to", "/tmp/x"),
    row("store-copy-not-a-store", "store", "copy", "--from", "/nonexistent-li-home", "--to",
        "postgresql://127.0.0.1:1/none"),
    row("queue-missing-subcommand", "queue"),
    row("queue-help", "queue", "--help"),
    row("queue-unknown-subcommand", "queue", "drop"),
    row("queue-list", "queue", "list"),
    row("queue-list-help", "queue", "list", "--help"),
    row("queue-set-help", "queue", "set", "--help"),
    row("queue-set-missing-name", "queue", "set"),
    row("queue-set", "queue", "set", "table-q", "--parallel", "2"),
    row("queue-set-unlimited", "queue", "set", "table-q", "--parallel", "none"),
    row("queue-set-bad-parallel", "queue", "set", "table-q", "--parallel", "-1"),
    row("queue-set-huge-parallel", "queue", "set", "table-q", "--parallel", HUGE),
    row("queue-set-bad-name", "queue", "set", "../x", "--parallel", "1"),
    row("queue-set-unicode-name", "queue", "set", UNICODE, "--parallel", "1"),
    row("queue-pause-help", "queue", "pause", "--help"),
    row("queue-pause", "queue", "pause", "table-q"),
    row("queue-pause-missing-name", "queue", "pause"),
    row("queue-resume-help", "queue", "resume", "--help"),
    row("queue-resume", "queue", "resume", "table-q"),
    row("queue-resume-unknown", "queue", "resume", "no-such-queue"),
    row("usage", "usage"),
    row("usage-help", "usage", "--help"),
    row("usage-since", "usage", "--since", "7d"),
    row("usage-bad-since", "usage", "--since", "yesterday"),
    row("usage-by-model", "usage", "--by", "model"),
    row("usage-bad-by", "usage", "--by", "colour"),
    row("doctor", "doctor"),
    row("doctor-fix", "doctor", "--fix"),
    row("doctor-help", "doctor", "--help"),
    row("doctor-unknown-flag", "doctor", "--no-such-flag"),
    row("completion-bash", "completion", "bash"),
    row("completion-zsh", "completion", "zsh"),
    row("completion-help", "completion", "--help"),
    row("completion-unknown-shell", "completion", "fish"),
    row("completion-missing-shell", "completion"),
    row("mcp-under-machine", "mcp"),
    row("mcp-help", "mcp", "--help"),
    row("mcp-unknown-flag", "mcp", "--no-such-flag"),
    row("serve-under-machine", "serve"),
    row("serve-help", "serve", "--help"),
    row("serve-bad-port", "serve", "--port", "http"),
    row("serve-unknown-flag", "serve", "--no-such-flag"),
]

ROWS: list[Row] = [*TOP, *HANDSHAKE, *AGENT, *ORCHESTRATE, *JOB, *OTHERS]
