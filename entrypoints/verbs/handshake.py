"""`li handshake`: which contract this build speaks (D2)."""

from __future__ import annotations

import os

from lionrun.domain.contract import CONTRACT_VERSION, IMPLEMENTATION, MIN_SUPPORTED_VERSION
from lionrun.entrypoints.verb_table import summary
from lionrun.entrypoints.verbs._common import this
from lionrun.entrypoints.version import version

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("handshake", help=summary("handshake"))
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    """The D2 data. Kept to the standard library: a consumer may handshake often.

    The bootstrap has already refused (exit 78) an installation missing a required module; a
    module that is present but raises on import is diagnosed, also by 78, by the first verb
    that needs it.
    """
    return {  # the shape of domain.wire.HandshakeData, built without dataclasses (tests/unit/test_wire.py)
        "contract_version": CONTRACT_VERSION,
        "min_supported_version": MIN_SUPPORTED_VERSION,
        "implementation": IMPLEMENTATION,
        "implementation_version": version(),
        "module": os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    }


def human(args: Namespace) -> int:
    return show(run(args), args)


def show(data: dict[str, Any], args: Namespace) -> int:
    print(f"{data['implementation']} {data['implementation_version']}: contract v{data['contract_version']}"
          f" (oldest honoured: v{data['min_supported_version']}) at {data['module']}")
    return 0
