"""`li job kill RUN_ID`: record the request, signal the run's own group, say what was done (D6)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from entrypoints.verbs._common import run_id_arg, this

_SAID = {
    "signalled": "signalled its processes",
    "already_terminal": "nothing to do: it has already ended",
    "no_process": "no process of this run to signal",
}


def register(sub: Any) -> None:
    parser = sub.add_parser("kill", help="stop a run: SIGTERM every process of it, SIGKILL after a grace")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from entrypoints.container import get_container

    result: dict[str, Any] = get_container().reads.killer().kill(run_id_arg(args, args.run_id))
    return result


def human(args: Namespace) -> int:
    return show(run(args), args)


def show(data: dict[str, Any], args: Namespace) -> int:
    outcome = data["outcome"] or "-"
    print(f"{data['run_id']}: {_SAID.get(data['action'], data['action'])} "
          f"(status {data['status']}, terminal: {'yes' if data['terminal'] else 'no'}, outcome: {outcome})")
    return 0
