"""`li serve`: one local page over the configured store's runs, live, with the CLI's actions.

Loopback or a 0600 Unix socket only; the guards are entrypoints/http_guards.py. Starlette and
uvicorn (installed with `mcp`) are imported only here, when the page is asked for.
"""

from __future__ import annotations

import contextlib
import os
import sys
from argparse import Namespace
from typing import Any

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.entrypoints.verb_table import summary
from lionrun.entrypoints.verbs._common import this

TOKEN_FILE = "serve.token"


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("serve", help=summary("serve"),
                            description="Serve a page over the configured store (every host's runs): grouped by "
                                        "what they need, live, each run's console, diff and actions. Only on "
                                        "127.0.0.1 (or a 0600 Unix socket); the printed URL carries a one-time "
                                        "token, also kept in $LI_HOME/serve.token (0600) for scripts "
                                        "(Authorization: Bearer).")
    parser.add_argument("--port", default="0", help="the loopback port (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="127.0.0.1 or ::1; anything else is refused")
    parser.add_argument("--socket", metavar="PATH", help="serve on a Unix socket made 0600 instead of a port")
    parser.add_argument("--open", action="store_true", help="open the page in the browser")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    raise ContractError(ErrorKind.INVALID_INPUT, "li serve is a server for people; run it without --machine")


def human(args: Namespace) -> int:
    import socket

    from lionrun.entrypoints.http_guards import NotLoopback, loopback_socket, unix_socket

    port = _port(args.port)
    try:
        sock = unix_socket(os.path.abspath(args.socket)) if args.socket else loopback_socket(args.host, port)
    except NotLoopback as exc:
        raise ContractError(ErrorKind.INVALID_INPUT, str(exc), {"argument": "--host"}) from None
    except OSError as exc:
        raise ContractError(ErrorKind.UNAVAILABLE, f"li serve could not listen: {exc}") from None
    try:
        return serve(sock, args)
    finally:
        sock.close()
        if args.socket and sock.family == socket.AF_UNIX:
            _unlink(os.path.abspath(args.socket))


def serve(sock: Any, args: Namespace) -> int:
    import asyncio

    import uvicorn

    from lionrun.application.board import Board
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.http_guards import Guard, new_token, write_token_file
    from lionrun.entrypoints.serve.app import build
    from lionrun.entrypoints.serve.hub import Hub

    token = new_token()
    bound_port = None if args.socket else int(sock.getsockname()[1])
    guard = Guard(token=token, port=bound_port, cookie_name=f"li-serve-{bound_port or 'socket'}")
    token_path = os.path.join(get_container().core.home(), TOKEN_FILE)
    write_token_file(token_path, token)
    hub = Hub(Board(get_container().reads.reads(), get_container().core.store(), get_container().core.queues, get_container().core.clock()), _changes())
    hub.refresh()  # the first page is the board as it is now, not an empty one
    app = build(guard, hub)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    host = f"[{sock.getsockname()[0]}]" if ":" in str(sock.getsockname()[0]) and not args.socket else "127.0.0.1"
    url = f"http://{host}:{bound_port}/?token={token}" if bound_port else f"http://localhost/?token={token}"
    where = f"on {args.socket} (curl --unix-socket)" if args.socket else ""
    print(url + (f"  {where}" if where else ""), flush=True)
    print(f"li serve: the token is also in {token_path} (0600); Ctrl-C stops", file=sys.stderr, flush=True)
    if args.open and bound_port:
        import webbrowser

        webbrowser.open(url)

    async def main() -> None:
        hub.start(asyncio.get_running_loop())
        try:
            await server.serve(sockets=[sock])
        finally:
            hub.stop()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        _unlink(token_path)
    return 0


def _changes() -> Any:
    """The store's change wake-ups (inotify, LISTEN/NOTIFY), or None: the poll alone."""
    from lionrun.entrypoints.container import get_container

    try:
        return get_container().core.run_changes()
    except Exception:  # noqa: BLE001 - no wake-ups: the board's poll still finds every change
        return None


def _port(raw: str) -> int:
    text = str(raw).strip()
    if not text.isdigit() or not text.isascii() or int(text) > 65535:
        raise ContractError(ErrorKind.INVALID_INPUT, f"--port must be 0-65535, not {raw!r}", {"argument": "--port"})
    return int(text)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
