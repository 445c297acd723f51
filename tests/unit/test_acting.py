"""Item 2: what an `li` acting for a confined run's work sees of the store and may ask
(application/acting.py, entrypoints/acting.py), over the memory store."""

from __future__ import annotations

from argparse import Namespace
from datetime import UTC, datetime

import pytest

from lionrun.adapters.memory_store import MemoryRunStore
from lionrun.application.acting import ChildrenOf
from lionrun.application.ports import RunNotFound
from lionrun.domain.contract import ContractError
from lionrun.domain.run import Run

NOW = datetime(2026, 12, 5, 3, 0, tzinfo=UTC)


def made(store: MemoryRunStore | ChildrenOf, parent: str | None = None) -> str:
    run_id = store.reserve(NOW)
    run = Run(run_id=run_id, kind="agent", status="running", submitted_at=NOW.isoformat(),
              spawn_state="preparing", parent=parent)
    store.create(run)
    store.write_text(run_id, "request.json", "{}")
    return run_id


def test_a_run_made_through_the_view_records_its_parent_and_only_children_are_seen() -> None:
    store = MemoryRunStore()
    parent = made(store)
    stranger = made(store)
    cousin = made(store, parent=stranger)
    seen = ChildrenOf(store, parent)
    child = made(seen)  # whatever parent the maker wrote, the view's is recorded
    assert store.read(child).parent == parent
    assert list(seen.run_ids()) == [child]
    assert seen.read(child).run_id == child
    for other in (parent, stranger, cousin):
        with pytest.raises(RunNotFound):
            seen.read(other)
        with pytest.raises(RunNotFound):
            seen.read_text(other, "request.json")
        with pytest.raises(RunNotFound):
            seen.console(other, 100)
        with pytest.raises(RunNotFound):
            seen.li_log(other, 100)
        with pytest.raises(RunNotFound):
            seen.li_log_bytes(other, 0, 100)
        with pytest.raises(RunNotFound):
            seen.update(other, lambda run: run.evolve(label="forged"))
        with pytest.raises(RunNotFound):
            seen.write_text(other, "instruction.txt", "forged")
        with pytest.raises(RunNotFound):
            seen.remove(other)
        assert store.read(other).label is None
    assert seen.read_text(child, "request.json") == "{}"


def test_the_view_takes_no_store_upkeep_and_no_import() -> None:
    from lionrun.application.ports import StoreRefused

    seen = ChildrenOf(MemoryRunStore(), "20261205T030000-abcdef")
    with pytest.raises(StoreRefused):
        seen.init_schema()
    with pytest.raises(StoreRefused):
        seen.import_run(Run(run_id="20261205T030000-000000", kind="agent", status="running",
                            submitted_at=NOW.isoformat(), spawn_state="preparing"), {}, None)


def namespace(**fields: object) -> Namespace:
    return Namespace(**fields)


@pytest.mark.parametrize(("fields", "said"), [
    ({"command": "job", "job_command": "rm"}, "li job rm is not open"),
    ({"command": "job", "job_command": "prune"}, "li job prune is not open"),
    ({"command": "queue"}, "li queue is not open"),
    ({"command": "store"}, "li store is not open"),
    ({"command": "doctor"}, "li doctor is not open"),
    ({"command": "job", "job_command": "retry"}, "li job retry is not open"),
    ({"command": "agent", "notify": "touch x"}, "--notify"),
    ({"command": "agent", "setup": "make"}, "--setup"),
    ({"command": "agent", "confine": "off"}, "--confine off"),
    ({"command": "agent", "executor": "slurm"}, "--executor"),
    ({"command": "agent", "prompt_file": "/etc/passwd"}, "--prompt-file"),
    ({"command": "orchestrate", "mode": "flow", "spec": "/home/me/flow.yaml"}, "SPEC"),
    ({"command": "mcp", "li": "/tmp/not-li.sh"}, "--li"),
])
def test_what_the_work_may_not_ask_is_refused(monkeypatch: pytest.MonkeyPatch, fields: dict[str, object],
                                             said: str) -> None:
    from lionrun.entrypoints.acting import admit

    monkeypatch.setenv("LI_ACTING_FOR", "20261205T030000-abcdef")
    with pytest.raises(ContractError) as refused:
        admit(namespace(**fields))
    assert said in refused.value.message
    assert refused.value.kind.value == "invalid_input"
    assert refused.value.detail == {"reason_code": "not_open_to_the_work"}


def test_a_childs_submit_is_confined_and_reads_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    from lionrun.entrypoints.acting import admit

    monkeypatch.setenv("LI_ACTING_FOR", "20261205T030000-abcdef")
    submit = namespace(command="agent", confine=None, prompt_file="-")
    admit(submit)
    assert submit.confine == "required"
    for fields in ({"command": "job", "job_command": "status"}, {"command": "job", "job_command": "wait"},
                   {"command": "handshake"}, {"command": "mcp"}, {"command": "orchestrate", "mode": "fanout"}):
        admit(namespace(**fields))
    monkeypatch.delenv("LI_ACTING_FOR")
    admit(namespace(command="job", job_command="rm"))  # an li acting for no one takes everything


def test_the_marker_name_is_one_in_both_layers() -> None:
    from lionrun.adapters.fs_store import HIDDEN as STORE_SIDE
    from lionrun.entrypoints.home import HIDDEN as CLIENT_SIDE

    assert STORE_SIDE == CLIENT_SIDE


def test_the_broker_drops_the_runs_tags_and_sets_its_own() -> None:
    from lionrun.adapters import broker

    env = broker.environment({"PATH": "/bin", "LI_RUN_ID": "x", "LI_LEG_ID": "y", "LI_ARTIFACTS_DIR": "/a",
                              "LI_BROKER_MARK": "old", "LI_ACTING_FOR": "old"}, "run", "mark")
    assert env == {"PATH": "/bin", "LI_ACTING_FOR": "run", "LI_BROKER_MARK": "mark"}


def test_every_port_method_that_takes_a_run_is_checked_by_the_view() -> None:
    """A method the ports gain later must not reach another run's files through `__getattr__`."""
    import inspect

    from lionrun.application import ports

    for port in (ports.RunRecords, ports.RunFiles):
        for name, member in vars(port).items():
            if name.startswith("_") or not callable(member):
                continue
            parameters = list(inspect.signature(member).parameters)
            if parameters[1:2] == ["run_id"]:
                assert name in vars(ChildrenOf), f"ChildrenOf does not check {port.__name__}.{name}"
