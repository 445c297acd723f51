"""`li mcp`: serve the contract to agents over MCP (stdio), as a consumer of `li` itself."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from domain.contract import ContractError, ErrorKind
from entrypoints.verbs._common import this


def register(sub: Any) -> None:
    parser = sub.add_parser("mcp", help="serve li's tools over MCP on stdio")
    parser.add_argument("--li", help="absolute path of the li executable to drive")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    raise ContractError(ErrorKind.INVALID_INPUT, "li mcp speaks MCP on stdio; run it without --machine")


def human(args: Namespace) -> int:
    from entrypoints.mcp_server import main

    return main(["--li", args.li] if args.li else [])
