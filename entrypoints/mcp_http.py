"""`li mcp --http`: the same tools over MCP's Streamable HTTP, on 127.0.0.1 only, behind the guards
every li server wears (`http_guards`: a bearer token printed at start and kept 0600 in the store,
the Host header checked against loopback names, a foreign Origin refused)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Any

#: The token's file in the store (`$LI_HOME`), for a script on this machine.
TOKEN_FILE = "mcp-http.token"
PATH = "/mcp"


def http_app(server: Any, token: str, port: int) -> Any:
    """The SDK's Streamable HTTP app for `server`, wrapped in li's guards."""
    from mcp.server.transport_security import TransportSecuritySettings

    from lionrun.entrypoints.http_guards import LOOPBACK_NAMES, Guard, GuardMiddleware

    # The SDK's own DNS-rebinding check agrees with the guards (they answer first: 403).
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in LOOPBACK_NAMES],
        allowed_origins=[f"http://{name}:{port}" for name in LOOPBACK_NAMES],
    )
    app = server.streamable_http_app(streamable_http_path=PATH, transport_security=security)
    return GuardMiddleware(app, Guard(token=token, port=port, cookie_name=f"li-mcp-{port}"))


def serve_http(server: Any, tools: Any, port: int) -> int:
    import uvicorn

    from lionrun.entrypoints.home import default_home
    from lionrun.entrypoints.http_guards import loopback_socket, new_token, write_token_file

    try:
        sock = loopback_socket("127.0.0.1", port)
    except OSError as exc:
        print(f"li mcp: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    # uvicorn re-raises the SIGTERM it caught once it has shut down: let that (or one that comes
    # before uvicorn listens) be an exit that runs the `finally` below (children stopped, token
    # file removed), not the default handler's death.
    signal.signal(signal.SIGTERM, _exit)
    bound = int(sock.getsockname()[1])
    token = new_token()
    token_path = os.path.join(default_home(), TOKEN_FILE)
    try:
        write_token_file(token_path, token)
        config = uvicorn.Config(http_app(server, token, bound), log_level="warning", access_log=False,
                                lifespan="on", timeout_graceful_shutdown=1)
        print(f"http://127.0.0.1:{bound}{PATH}", flush=True)
        print(f"token: {token}", flush=True)
        print(f"li mcp: MCP over Streamable HTTP; send Authorization: Bearer <token> (also in {token_path}, "
              "0600); Ctrl-C stops", file=sys.stderr, flush=True)
        uvicorn.Server(config).run(sockets=[sock])
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        tools.stop_all()
        with contextlib.suppress(OSError):
            os.unlink(token_path)
    return 0


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(0)
