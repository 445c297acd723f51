"""`li job kill RUN_ID`: record the request, signal the run's own group, say what was done (D6)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from lionrun.entrypoints.verbs._common import run_id_arg, this

_SAID = {
    "signalled": "signalled its processes",
    "requested": "kill requested: the run is another host's, and its runner stops it (nothing signalled from here)",
    "already_terminal": "nothing to do: it has already ended",
    "no_process": "no process of this run to signal",
}


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("kill", help="stop a run: SIGTERM every process of it, SIGKILL after a grace")
    parser.add_argument("run_ids", nargs="*", metavar="RUN_ID")
    parser.add_argument("--label", help="also kill every run whose label is exactly this (a person's selection)")
    parser.add_argument("--status", help="also kill every run whose status is exactly this (a person's selection)")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    """Under --machine one run id, one answer (the D6 shape); a batch is for people (`human`)."""
    from lionrun.domain.contract import ContractError, ErrorKind
    from lionrun.entrypoints.container import get_container

    if len(args.run_ids) != 1 or args.label is not None or args.status is not None:
        raise ContractError(ErrorKind.INVALID_INPUT, "under --machine li job kill takes exactly one run id; "
                            "select runs with li job list --machine and kill each")
    result: dict[str, Any] = get_container().reads.killer().kill(run_id_arg(args, args.run_ids[0]))
    return result


def human(args: Namespace) -> int:
    """One line per run killed, in order; the ids named first, then the selection's."""
    from lionrun.domain.contract import ContractError, ErrorKind
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.verbs._common import selected_ids, selection_words

    ids = [run_id_arg(args, word) for word in args.run_ids]
    selected = selected_ids(args)
    if selected is not None:
        if not selected and not ids:
            raise ContractError(ErrorKind.NOT_FOUND, "no run matches " + selection_words(args))
        ids.extend(run_id for run_id in selected if run_id not in ids)
    if not ids:
        raise ContractError(ErrorKind.INVALID_INPUT, "li job kill needs a run id (or --label/--status)")
    killer = get_container().reads.killer()
    for run_id in ids:
        show(killer.kill(run_id), args)
    return 0


def show(data: dict[str, Any], args: Namespace) -> int:
    outcome = data["outcome"] or "-"
    print(f"{data['run_id']}: {_SAID.get(data['action'], data['action'])} "
          f"(status {data['status']}, terminal: {'yes' if data['terminal'] else 'no'}, outcome: {outcome})")
    return 0
