"""lionrun's domain as a library: one import for a test author or an outside tool.

    from lionrun.domain import Run, Finding, resolve
    answer = resolve(Run(...), Finding(...), now).derivation

The names load on first use (PEP 562), so `li` pays at start-up only for the modules a verb uses.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it
if TYPE_CHECKING:
    from typing import Any

_HOMES: dict[str, str] = {
    # the run record and its identity
    "Run": "lionrun.domain.run", "Incarnation": "lionrun.domain.run", "DeliveryValue": "lionrun.domain.run",
    "RecordUnusable": "lionrun.domain.run", "make_run_id": "lionrun.domain.run", "is_run_id": "lionrun.domain.run",
    "parse_record": "lionrun.domain.run", "iso": "lionrun.domain.run",
    # liveness evidence and the derivations
    "Finding": "lionrun.domain.evidence", "HostFacts": "lionrun.domain.evidence", "ProcessObservation": "lionrun.domain.evidence",
    "judge": "lionrun.domain.evidence",
    "Derivation": "lionrun.domain.lifecycle", "Resolution": "lionrun.domain.lifecycle", "resolve": "lionrun.domain.lifecycle",
    "derive": "lionrun.domain.lifecycle", "classify": "lionrun.domain.lifecycle", "exit_code_of": "lionrun.domain.lifecycle",
    "PREPARING_THRESHOLD_SECONDS": "lionrun.domain.lifecycle",
    "End": "lionrun.domain.ending", "decide": "lionrun.domain.ending", "leg_status": "lionrun.domain.ending",
    # (`partition`, the function, is `domain.partition.partition`: an export never shares a submodule's name)
    "Partition": "lionrun.domain.partition",
    # the closed vocabularies
    "Outcome": "lionrun.domain.vocabulary", "OUTCOMES": "lionrun.domain.vocabulary", "Status": "lionrun.domain.vocabulary",
    "STATUSES_AT_V1": "lionrun.domain.vocabulary", "SpawnState": "lionrun.domain.vocabulary",
    "PREPARING": "lionrun.domain.vocabulary", "STARTED": "lionrun.domain.vocabulary", "FAILED": "lionrun.domain.vocabulary",
    "ErrorKindName": "lionrun.domain.vocabulary", "KillAction": "lionrun.domain.vocabulary", "Severity": "lionrun.domain.vocabulary",
    # the contract and the wire model
    "ContractError": "lionrun.domain.contract", "ErrorKind": "lionrun.domain.contract", "CONTRACT_VERSION": "lionrun.domain.contract",
    "Envelope": "lionrun.domain.wire", "success": "lionrun.domain.contract", "failure": "lionrun.domain.contract",
    "Availability": "lionrun.domain.availability", "to_wire": "lionrun.domain.serialise", "Wire": "lionrun.domain.serialise",
    "Lifecycle": "lionrun.domain.wire", "StatusData": "lionrun.domain.wire", "Row": "lionrun.domain.wire", "RowError": "lionrun.domain.wire",
    "ListData": "lionrun.domain.wire", "OutputData": "lionrun.domain.wire", "WaitData": "lionrun.domain.wire",
    "KillData": "lionrun.domain.wire", "SubmitData": "lionrun.domain.wire", "VERBS": "lionrun.domain.wire",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'lionrun.domain' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # the same names for mypy, re-exported explicitly
    from lionrun.domain.availability import Availability as Availability
    from lionrun.domain.contract import CONTRACT_VERSION as CONTRACT_VERSION
    from lionrun.domain.contract import ContractError as ContractError
    from lionrun.domain.contract import ErrorKind as ErrorKind
    from lionrun.domain.contract import failure as failure
    from lionrun.domain.contract import success as success
    from lionrun.domain.ending import End as End
    from lionrun.domain.ending import decide as decide
    from lionrun.domain.ending import leg_status as leg_status
    from lionrun.domain.evidence import Finding as Finding
    from lionrun.domain.evidence import HostFacts as HostFacts
    from lionrun.domain.evidence import ProcessObservation as ProcessObservation
    from lionrun.domain.evidence import judge as judge
    from lionrun.domain.lifecycle import PREPARING_THRESHOLD_SECONDS as PREPARING_THRESHOLD_SECONDS
    from lionrun.domain.lifecycle import Derivation as Derivation
    from lionrun.domain.lifecycle import Resolution as Resolution
    from lionrun.domain.lifecycle import classify as classify
    from lionrun.domain.lifecycle import derive as derive
    from lionrun.domain.lifecycle import exit_code_of as exit_code_of
    from lionrun.domain.lifecycle import resolve as resolve
    from lionrun.domain.partition import Partition as Partition
    from lionrun.domain.run import DeliveryValue as DeliveryValue
    from lionrun.domain.run import Incarnation as Incarnation
    from lionrun.domain.run import RecordUnusable as RecordUnusable
    from lionrun.domain.run import Run as Run
    from lionrun.domain.run import is_run_id as is_run_id
    from lionrun.domain.run import iso as iso
    from lionrun.domain.run import make_run_id as make_run_id
    from lionrun.domain.run import parse_record as parse_record
    from lionrun.domain.serialise import Wire as Wire
    from lionrun.domain.serialise import to_wire as to_wire
    from lionrun.domain.vocabulary import FAILED as FAILED
    from lionrun.domain.vocabulary import OUTCOMES as OUTCOMES
    from lionrun.domain.vocabulary import PREPARING as PREPARING
    from lionrun.domain.vocabulary import STARTED as STARTED
    from lionrun.domain.vocabulary import STATUSES_AT_V1 as STATUSES_AT_V1
    from lionrun.domain.vocabulary import ErrorKindName as ErrorKindName
    from lionrun.domain.vocabulary import KillAction as KillAction
    from lionrun.domain.vocabulary import Outcome as Outcome
    from lionrun.domain.vocabulary import Severity as Severity
    from lionrun.domain.vocabulary import SpawnState as SpawnState
    from lionrun.domain.vocabulary import Status as Status
    from lionrun.domain.wire import VERBS as VERBS
    from lionrun.domain.wire import Envelope as Envelope
    from lionrun.domain.wire import KillData as KillData
    from lionrun.domain.wire import Lifecycle as Lifecycle
    from lionrun.domain.wire import ListData as ListData
    from lionrun.domain.wire import OutputData as OutputData
    from lionrun.domain.wire import Row as Row
    from lionrun.domain.wire import RowError as RowError
    from lionrun.domain.wire import StatusData as StatusData
    from lionrun.domain.wire import SubmitData as SubmitData
    from lionrun.domain.wire import WaitData as WaitData
