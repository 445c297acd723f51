"""`li mcp`: serve the contract to agents over MCP (stdio), as a consumer of `li` itself."""

from __future__ import annotations

import os
import sys
from argparse import Namespace
from typing import Any

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.entrypoints.verb_table import summary
from lionrun.entrypoints.verbs._common import this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("mcp", help=summary("mcp"))
    parser.add_argument("--li", help="absolute path of the li executable to drive")
    parser.add_argument("--max-attempts", help="unresolved observations of a run before it is abandoned (5)")
    parser.add_argument("--backoff", help="first backoff in seconds, doubling (1)")
    parser.add_argument("--backoff-max", help="largest backoff in seconds (60)")
    parser.add_argument("--http", action="store_true",
                        help="serve Streamable HTTP on 127.0.0.1 behind a bearer token, not stdio")
    parser.add_argument("--port", help="the HTTP port (default: a free one)")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    raise ContractError(ErrorKind.INVALID_INPUT, "li mcp speaks MCP (stdio or --http); run it without --machine")


def human(args: Namespace) -> int:
    from lionrun.entrypoints.mcp_server import main

    options = {"--li": args.li or _this_li(), "--max-attempts": args.max_attempts, "--backoff": args.backoff,
               "--backoff-max": args.backoff_max, "--port": args.port}
    words = [f"{flag}={value}" for flag, value in options.items() if value is not None]
    return main([*words, *(["--http"] if args.http else [])])


def _this_li() -> str | None:
    """Without --li or LI_BIN, drive the very `li` that was started, by its absolute path (D1)."""
    if os.environ.get("LI_BIN"):
        return None  # the server's own resolution honours LI_BIN
    started = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return started if os.path.basename(started) == "li" and os.access(started, os.X_OK) else None
