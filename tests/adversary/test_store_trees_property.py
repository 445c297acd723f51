"""Hypothesis over small hostile store trees, through the real `li --machine`.

A tree is one to three run folders; each is a folder, a link to a run-shaped folder outside the
store, or a regular file, and each of its record.json / console.log / manifest.json / artifacts
is absent, valid (cloned from a real finished run), a link to a canary, a FIFO, a folder, deep
JSON, invalid UTF-8, of another run id, or huge. Whatever the tree: every verb answers exactly one
envelope (contract_version 1, never `internal`) within the call timeout, never serves a canary
byte or digest, answers a per-run problem per run (list and wait still `ok: true`, the other runs
answered normally), `kill` of a record naming the live decoy signals nothing, and nothing outside
the store changes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.adversary.harness import Arena, Template, new_run_id, show

RECORD_KINDS = ["absent", "valid", "link", "fifo", "folder", "deep", "bad_utf8", "wrong_id", "huge"]
CONSOLE_KINDS = ["absent", "valid", "link", "fifo", "folder", "deep", "bad_utf8", "huge"]
MANIFEST_KINDS = ["absent", "valid", "link", "fifo", "folder", "deep", "bad_utf8", "wrong_id", "huge"]
ARTIFACT_KINDS = ["absent", "valid", "link", "link_proc", "fifo", "file", "hardlink"]
FOLDER_KINDS = ["folder", "folder", "folder", "link", "file"]  # mostly real folders

RECORD_REASON = {"link": "not_regular_file", "fifo": "not_regular_file", "folder": "not_regular_file",
                 "deep": "too_deep", "bad_utf8": "malformed", "wrong_id": "run_id_mismatch",
                 "huge": "too_large"}
CONSOLE_REASON = {"absent": "missing", "link": "not_regular_file", "fifo": "not_regular_file",
                  "folder": "not_regular_file"}
MANIFEST_REASON = {"absent": "missing", "link": "not_regular_file", "fifo": "not_regular_file",
                   "folder": "not_regular_file", "deep": "too_deep", "bad_utf8": "malformed",
                   "huge": "too_large"}
ARTIFACT_REASON = {"absent": "missing", "link": "not_a_directory", "link_proc": "not_a_directory",
                   "fifo": "not_a_directory", "file": "not_a_directory"}
NAMES_THE_DECOY = {"link", "deep", "bad_utf8", "wrong_id", "huge"}  # record kinds whose bytes name it


@dataclass(frozen=True)
class RunSpec:
    folder: str
    record: str
    console: str
    manifest: str
    artifacts: str
    depth: int


runs_strategy = st.lists(
    st.builds(RunSpec, st.sampled_from(FOLDER_KINDS), st.sampled_from(RECORD_KINDS),
              st.sampled_from(CONSOLE_KINDS), st.sampled_from(MANIFEST_KINDS),
              st.sampled_from(ARTIFACT_KINDS), st.sampled_from([33, 1000, 100_000])),
    min_size=1, max_size=3)

trees = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _deep(depth: int, inner: str) -> bytes:
    return ("[" * depth + json.dumps(inner) + "]" * depth).encode()


def _build(arena: Arena, run_id: str, spec: RunSpec, others: list[str]) -> None:
    """Lay the run down by hand with os calls (outside first for a linked run folder)."""
    template = arena.template.run_dir
    decoy = arena.record_naming_decoy(run_id, label=arena.canary())
    if spec.folder == "file":
        (arena.runs / run_id).write_text(json.dumps(decoy))
        return
    if spec.folder == "link":
        fake = arena.outside / f"fake-{run_id}"
        os.mkdir(fake)
        (fake / "record.json").write_text(json.dumps(decoy))
        (fake / "console.log").write_text(arena.canary() + "\n")
        (fake / "manifest.json").write_text(json.dumps({"run_id": run_id, "secret": arena.canary()}))
        os.mkdir(fake / "artifacts")
        (fake / "artifacts" / "loot.txt").write_text(arena.canary())
        os.symlink(fake, arena.runs / run_id)
        return
    run = arena.runs / run_id
    os.mkdir(run, 0o700)
    shutil.copy2(template / "record.lock", run / "record.lock")
    shutil.copy2(template / "instruction.txt", run / "instruction.txt")
    wrong = next((o for o in others if o != run_id), "20250101T000000-0ther0")

    record = spec.record
    if record == "valid":
        data = dict(arena.template.record, run_id=run_id)
        (run / "record.json").write_text(json.dumps(data, indent=1, sort_keys=True))
    elif record == "link":
        target = arena.outside / f"record-{run_id}.json"
        target.write_text(json.dumps(decoy, indent=1))
        os.symlink(target, run / "record.json")
    elif record == "fifo":
        os.mkfifo(run / "record.json")
    elif record == "folder":
        os.mkdir(run / "record.json")
    elif record == "deep":
        (run / "record.json").write_bytes(_deep(spec.depth, arena.canary()))
    elif record == "bad_utf8":
        (run / "record.json").write_bytes(b"\xff\xfe" + json.dumps(decoy).encode())
    elif record == "wrong_id":
        (run / "record.json").write_text(json.dumps(dict(decoy, run_id=wrong)))
    elif record == "huge":
        (run / "record.json").write_text(json.dumps(dict(decoy, label=arena.canary() + "x" * (1 << 20))))

    console = spec.console
    if console == "valid":
        shutil.copy2(template / "console.log", run / "console.log")
    elif console == "link":
        os.symlink(arena.outside / "secret.txt", run / "console.log")
    elif console == "fifo":
        os.mkfifo(run / "console.log")
    elif console == "folder":
        os.mkdir(run / "console.log")
    elif console == "deep":
        (run / "console.log").write_bytes(_deep(spec.depth, "console"))
    elif console == "bad_utf8":
        (run / "console.log").write_bytes(b"text \xff\xfe\xc3\x28 more\n")
    elif console == "huge":
        (run / "console.log").write_bytes(b"y" * ((2 << 20) + 17))

    manifest = spec.manifest
    template_manifest = json.loads((template / "manifest.json").read_text())
    if manifest == "valid":
        (run / "manifest.json").write_text(json.dumps(dict(template_manifest, run_id=run_id)))
    elif manifest == "link":
        os.symlink(arena.outside / "manifest-secret.json", run / "manifest.json")
    elif manifest == "fifo":
        os.mkfifo(run / "manifest.json")
    elif manifest == "folder":
        os.mkdir(run / "manifest.json")
    elif manifest == "deep":
        (run / "manifest.json").write_bytes(_deep(spec.depth, arena.canary()))
    elif manifest == "bad_utf8":
        (run / "manifest.json").write_bytes(b"\xff" + json.dumps({"secret": arena.canary()}).encode())
    elif manifest == "wrong_id":
        (run / "manifest.json").write_text(json.dumps(dict(template_manifest, run_id=wrong)))
    elif manifest == "huge":
        (run / "manifest.json").write_text(json.dumps({"run_id": run_id, "pad": arena.canary() + "z" * (8 << 20)}))

    artifacts = spec.artifacts
    if artifacts in ("valid", "hardlink"):
        shutil.copytree(template / "artifacts", run / "artifacts")
        if artifacts == "hardlink":
            os.link(arena.outside / "secret.txt", run / "artifacts" / "loot.txt")
    elif artifacts == "link":
        os.symlink(arena.outside / "vault", run / "artifacts")
    elif artifacts == "link_proc":
        os.symlink("/proc", run / "artifacts")
    elif artifacts == "fifo":
        os.mkfifo(run / "artifacts")
    elif artifacts == "file":
        (run / "artifacts").write_text("not a folder\n")


def _record_reason(spec: RunSpec) -> str | None:
    """The run's record_unusable reason; None for a usable record, "absent" for no record at all."""
    if spec.folder != "folder":
        return "not_a_directory"
    if spec.record == "absent":
        return "absent"
    return RECORD_REASON.get(spec.record)


def _field(value: dict[str, Any], reason: str | None, what: str) -> None:
    if reason == "either":  # a manifest naming another run: the product may show it or refuse it
        assert value["available"] is True or value["reason_code"], (what, show(value))
    elif reason is None:
        assert value["available"] is True, (what, show(value))
    else:
        assert (value["available"], value["reason_code"]) == (False, reason), (what, show(value))


def _check_rows(arena: Arena, run_id: str, spec: RunSpec, listed: dict[str, Any],
                waited: dict[str, Any]) -> None:
    """The run's rows in the one list and the one wait over every id: its own problem, or normal."""
    reason = _record_reason(spec)
    rows = {r["run_id"]: r for r in listed["data"]["runs"]}
    wait_rows = {r["run_id"]: r for r in waited["data"]["runs"]}
    if reason == "absent":
        assert run_id not in rows or rows[run_id]["error"] is not None, show(listed)
        assert wait_rows[run_id]["error"]["kind"] == "not_found", show(waited)
    elif reason is not None:
        for row in (rows[run_id], wait_rows[run_id]):
            assert (row["error"]["kind"], row["error"]["reason_code"]) == ("record_unusable", reason), show(row)
    else:
        for row in (rows[run_id], wait_rows[run_id]):
            assert row["error"] is None and row["status"] == arena.template.status["status"], show(row)


def _check_reads(arena: Arena, run_id: str, spec: RunSpec) -> None:
    """`status` and `output` of one run: refused with its reason, or every field judged per D7."""
    reason = _record_reason(spec)
    status = arena.li("job", "status", run_id)
    output = arena.li("job", "output", run_id)
    if reason == "absent":
        for envelope in (status, output):
            assert envelope["error"]["kind"] == "not_found", show(envelope)
        return
    if reason is not None:
        for envelope in (status, output):
            assert envelope["ok"] is False and envelope["error"]["kind"] == "unavailable", show(envelope)
            assert envelope["error"]["detail"]["reason_code"] == reason, show(envelope)
        return
    assert status["ok"] is True, show(status)
    assert (status["data"]["status"], status["data"]["terminal"]) == (arena.template.status["status"], True)
    manifest_reason = "either" if spec.manifest == "wrong_id" else MANIFEST_REASON.get(spec.manifest)
    _field(status["data"]["manifest"], manifest_reason, "status.manifest")
    assert output["ok"] is True, show(output)
    _field(output["data"]["console"], CONSOLE_REASON.get(spec.console), "output.console")
    _field(output["data"]["manifest"], manifest_reason, "output.manifest")
    _field(output["data"]["artifacts"], ARTIFACT_REASON.get(spec.artifacts), "output.artifacts")
    if spec.artifacts == "hardlink":
        loot = [e for e in output["data"]["artifacts"]["value"] if e["name"] == "loot.txt"]
        assert len(loot) == 1 and loot[0]["sha256"] is None, show(loot)


def _names_the_decoy(spec: RunSpec) -> bool:
    return spec.folder != "folder" or spec.record in NAMES_THE_DECOY


@trees
@given(specs=runs_strategy, focus=st.integers(min_value=0, max_value=2))
def test_any_small_hostile_tree_is_answered_per_run_in_bounded_time(template: Template, specs: list[RunSpec],
                                                                     focus: int) -> None:
    """list and wait over every run; status and output of one run; kill of a record naming the decoy.

    (One run's reads per example keeps the cost near five `li` calls an example.)
    """
    root = Path(tempfile.mkdtemp(prefix="li-adversary-tree-"))
    arena = Arena(root / "arena", template).setup()
    try:
        ids: list[str] = []
        while len(ids) < len(specs):
            run_id = new_run_id()
            if run_id not in ids:
                ids.append(run_id)
        for run_id, spec in zip(ids, specs, strict=True):
            _build(arena, run_id, spec, ids)
        arena.seal()
        listed = arena.li("job", "list")
        waited = arena.li("job", "wait", *ids, "--max-wait", "0")
        assert listed["ok"] is True and waited["ok"] is True, show((listed, waited))
        assert sorted(r["run_id"] for r in waited["data"]["runs"]) == sorted(ids), show(waited)
        for run_id, spec in zip(ids, specs, strict=True):
            _check_rows(arena, run_id, spec, listed, waited)
        chosen = focus % len(ids)
        _check_reads(arena, ids[chosen], specs[chosen])
        armed = [i for i, spec in enumerate(specs) if _names_the_decoy(spec)]
        if armed:
            run_id = ids[chosen] if chosen in armed else ids[armed[0]]
            killed = arena.li("job", "kill", run_id)
            assert killed["ok"] is False and killed["error"]["kind"] == "unavailable", show(killed)
            arena.assert_decoy_alive(f"li job kill {run_id} answered {killed}")
        arena.verify()
    finally:
        arena.close()
        shutil.rmtree(root, ignore_errors=True)
