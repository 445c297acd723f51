"""`li store init`: make the configured store ready — this host's folder, or a PostgreSQL schema."""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from domain.contract import ContractError, ErrorKind
from entrypoints.verbs._common import this


def register(sub: Any) -> None:
    parser = sub.add_parser("store", help="make the store ready (a PostgreSQL store needs `li store init` once)")
    verbs = parser.add_subparsers(dest="store_command", metavar="SUBCOMMAND")
    init = verbs.add_parser("init", help="create the store's folder, or the lionrun schema in the LI_STORE database "
                                         "(idempotent)")
    init.set_defaults(store_command="init")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    if getattr(args, "store_command", None) != "init":
        raise ContractError(ErrorKind.INVALID_INPUT, "li store needs a subcommand: init")
    from application.ports import StoreRefused
    from domain.wire import StoreData
    from entrypoints.container import get_container

    store = get_container().core.store()
    kind, location = store.describe()
    try:
        version = store.init_schema()
    except StoreRefused as exc:
        raise ContractError(ErrorKind.UNAVAILABLE, f"the store {location} could not be made ready: {exc}",
                            {"reason_code": "store_refused", "store": kind}) from None
    return StoreData(store=kind, location=location, schema_version=version).to_wire()


def human(args: Namespace) -> int:
    data = run(args)
    schema = "" if data["schema_version"] is None else f" (schema version {data['schema_version']})"
    sys.stdout.write(f"ready: {data['store']} store {data['location']}{schema}\n")
    return 0
