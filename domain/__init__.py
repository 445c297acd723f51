"""lionrun's domain as a library: one import for a test author or an outside tool.

    from domain import Run, Finding, resolve
    answer = resolve(Run(...), Finding(...), now).derivation

The names load on first use (PEP 562), so `li` pays at start-up only for the modules a verb uses.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it
if TYPE_CHECKING:
    from typing import Any

_HOMES: dict[str, str] = {
    # the run record and its identity
    "Run": "domain.run", "Incarnation": "domain.run", "DeliveryValue": "domain.run",
    "RecordUnusable": "domain.run", "make_run_id": "domain.run", "is_run_id": "domain.run",
    "parse_record": "domain.run", "iso": "domain.run",
    # liveness evidence and the derivations
    "Finding": "domain.evidence", "HostFacts": "domain.evidence", "ProcessObservation": "domain.evidence",
    "judge": "domain.evidence",
    "Derivation": "domain.lifecycle", "Resolution": "domain.lifecycle", "resolve": "domain.lifecycle",
    "derive": "domain.lifecycle", "classify": "domain.lifecycle", "exit_code_of": "domain.lifecycle",
    "PREPARING_THRESHOLD_SECONDS": "domain.lifecycle",
    "End": "domain.ending", "decide": "domain.ending", "leg_status": "domain.ending",
    # (`partition`, the function, is `domain.partition.partition`: an export never shares a submodule's name)
    "Partition": "domain.partition",
    # the closed vocabularies
    "Outcome": "domain.vocabulary", "OUTCOMES": "domain.vocabulary", "Status": "domain.vocabulary",
    "STATUSES_AT_V1": "domain.vocabulary", "SpawnState": "domain.vocabulary",
    "PREPARING": "domain.vocabulary", "STARTED": "domain.vocabulary", "FAILED": "domain.vocabulary",
    "ErrorKindName": "domain.vocabulary", "KillAction": "domain.vocabulary", "Severity": "domain.vocabulary",
    # the contract and the wire model
    "ContractError": "domain.contract", "ErrorKind": "domain.contract", "CONTRACT_VERSION": "domain.contract",
    "Envelope": "domain.wire", "success": "domain.contract", "failure": "domain.contract",
    "Availability": "domain.availability", "to_wire": "domain.serialise", "Wire": "domain.serialise",
    "Lifecycle": "domain.wire", "StatusData": "domain.wire", "Row": "domain.wire", "RowError": "domain.wire",
    "ListData": "domain.wire", "OutputData": "domain.wire", "WaitData": "domain.wire",
    "KillData": "domain.wire", "SubmitData": "domain.wire", "VERBS": "domain.wire",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'domain' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # the same names for mypy, re-exported explicitly
    from domain.availability import Availability as Availability
    from domain.contract import CONTRACT_VERSION as CONTRACT_VERSION
    from domain.contract import ContractError as ContractError
    from domain.contract import ErrorKind as ErrorKind
    from domain.contract import failure as failure
    from domain.contract import success as success
    from domain.ending import End as End
    from domain.ending import decide as decide
    from domain.ending import leg_status as leg_status
    from domain.evidence import Finding as Finding
    from domain.evidence import HostFacts as HostFacts
    from domain.evidence import ProcessObservation as ProcessObservation
    from domain.evidence import judge as judge
    from domain.lifecycle import PREPARING_THRESHOLD_SECONDS as PREPARING_THRESHOLD_SECONDS
    from domain.lifecycle import Derivation as Derivation
    from domain.lifecycle import Resolution as Resolution
    from domain.lifecycle import classify as classify
    from domain.lifecycle import derive as derive
    from domain.lifecycle import exit_code_of as exit_code_of
    from domain.lifecycle import resolve as resolve
    from domain.partition import Partition as Partition
    from domain.run import DeliveryValue as DeliveryValue
    from domain.run import Incarnation as Incarnation
    from domain.run import RecordUnusable as RecordUnusable
    from domain.run import Run as Run
    from domain.run import is_run_id as is_run_id
    from domain.run import iso as iso
    from domain.run import make_run_id as make_run_id
    from domain.run import parse_record as parse_record
    from domain.serialise import Wire as Wire
    from domain.serialise import to_wire as to_wire
    from domain.vocabulary import FAILED as FAILED
    from domain.vocabulary import OUTCOMES as OUTCOMES
    from domain.vocabulary import PREPARING as PREPARING
    from domain.vocabulary import STARTED as STARTED
    from domain.vocabulary import STATUSES_AT_V1 as STATUSES_AT_V1
    from domain.vocabulary import ErrorKindName as ErrorKindName
    from domain.vocabulary import KillAction as KillAction
    from domain.vocabulary import Outcome as Outcome
    from domain.vocabulary import Severity as Severity
    from domain.vocabulary import SpawnState as SpawnState
    from domain.vocabulary import Status as Status
    from domain.wire import VERBS as VERBS
    from domain.wire import Envelope as Envelope
    from domain.wire import KillData as KillData
    from domain.wire import Lifecycle as Lifecycle
    from domain.wire import ListData as ListData
    from domain.wire import OutputData as OutputData
    from domain.wire import Row as Row
    from domain.wire import RowError as RowError
    from domain.wire import StatusData as StatusData
    from domain.wire import SubmitData as SubmitData
    from domain.wire import WaitData as WaitData
