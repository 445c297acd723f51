"""`li store init`: make the configured store ready — this host's folder, or a PostgreSQL schema.
`li store copy --from DIR --to postgresql://…`: move a filesystem store's ended runs into PostgreSQL."""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any, Literal

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.entrypoints.verb_table import summary
from lionrun.entrypoints.verbs._common import StoreLocked, this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("store", help=summary("store"))
    verbs = parser.add_subparsers(dest="store_command", metavar="SUBCOMMAND")
    init = verbs.add_parser("init", help="create the store's folder, or the lionrun schema in the LI_STORE database "
                                         "(idempotent)")
    init.set_defaults(store_command="init")
    copy = verbs.add_parser("copy", help="copy the ended runs of a filesystem store (an LI_HOME folder) into a "
                                         "PostgreSQL store (idempotent; a re-run copies only what is missing)")
    copy.add_argument("--from", dest="source", required=True, metavar="DIR",
                      help="the filesystem store's folder (the LI_HOME holding runs/)")
    copy.add_argument("--to", dest="target", required=True, metavar="URL",
                      help="the PostgreSQL store (postgresql://…), made ready with `li store init`")
    copy.set_defaults(store_command="copy")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    command = getattr(args, "store_command", None)
    if command == "copy":
        return _copy(args)
    if command != "init":
        raise ContractError(ErrorKind.INVALID_INPUT, "li store needs a subcommand: init or copy")
    from lionrun.application.ports import StoreRefused
    from lionrun.domain.wire import StoreData
    from lionrun.entrypoints.container import get_container

    store = get_container().core.store()
    kind, location = store.describe()
    try:
        version = store.init_schema()
    except StoreRefused as exc:
        raise ContractError(ErrorKind.UNAVAILABLE, f"the store {location} could not be made ready: {exc}",
                            {"reason_code": "store_refused", "store": kind}) from None
    shown: Literal["filesystem", "postgresql"] = "postgresql" if kind == "postgresql" else "filesystem"
    return StoreData(store=shown, location=location, schema_version=version).to_wire()


def _copy(args: Namespace) -> dict[str, Any]:
    import os

    from lionrun.adapters.fs_store import FsRunStore
    from lionrun.adapters.pg_store import PgRunStore
    from lionrun.application.ports import StoreRefused
    from lionrun.application.store_copy import copy_runs
    from lionrun.domain.wire import StoreCopyData, StoreCopySkipped

    source_dir, url = str(args.source), str(args.target)
    if not url.startswith(("postgresql://", "postgres://")):
        raise ContractError(ErrorKind.INVALID_INPUT, "--to must name a PostgreSQL store (postgresql://…)",
                            {"reason_code": "not_postgresql"})
    if not os.path.isdir(os.path.join(source_dir, "runs")):
        raise ContractError(ErrorKind.INVALID_INPUT, f"--from {source_dir} is not a filesystem store "
                            "(no runs/ folder in it)", {"reason_code": "not_a_store"})
    source = FsRunStore(os.path.abspath(source_dir))
    target = PgRunStore(url, os.path.join(source.home, "spool"))  # an import spools nothing
    try:
        problems = target.health()  # a target down or without the schema says so, even with nothing to copy
        if problems:
            raise StoreRefused("; ".join(problems))
        with StoreLocked(source.home, reads_only=True):  # no prune removes a run of the source while it is copied
            outcome = copy_runs(source, target)
    except StoreRefused as exc:
        raise ContractError(ErrorKind.UNAVAILABLE, f"the store {target.location} could not take the runs "
                            f"(the runs copied so far are whole; copy again to resume): {exc}",
                            {"reason_code": "store_refused", "store": "postgresql"}) from None
    finally:
        target.close()
    return StoreCopyData(
        source=source.describe()[1], target=target.location, copied=outcome.copied,
        already_there=outcome.already_there, skipped=outcome.skipped,
        skipped_runs=[StoreCopySkipped(run_id=s.run_id, reason_code=s.reason_code, detail=s.detail)
                      for s in outcome.skipped_runs]).to_wire()


def human(args: Namespace) -> int:
    data = run(args)
    if "copied" in data:
        sys.stdout.write(f"copied {data['copied']} runs into {data['target']}; {data['already_there']} already "
                         f"there, {data['skipped']} skipped\n")
        return 0
    schema = "" if data["schema_version"] is None else f" (schema version {data['schema_version']})"
    sys.stdout.write(f"ready: {data['store']} store {data['location']}{schema}\n")
    return 0
