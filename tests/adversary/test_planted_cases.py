"""Every hostile plant of the issue, planted two ways, then every verb on it.

(a) `work`: the run's own `sh` work plants into `$LI_ARTIFACTS_DIR/..` while it runs (and, for a
file the runner rewrites at its end, again from a detached process once the end is recorded),
then `li job wait <id> --max-wait 30`. (b) `hand`: the same plant done by hand on a finished
run's folder. Then `status`, `output`, `list`, `wait --max-wait 0`, `kill` and `prune` (for
real: a run it removes goes, never what its links name), each bounded by a timeout; a second,
normal run must be answered normally by the same list, wait and prune. No canary byte may reach
any output, nothing outside the store may change, and the live decoy named by planted records is
never signalled.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.adversary.harness import (
    PLACEHOLDER,
    TEMPLATE_SCRIPT,
    Arena,
    eventually,
    sh_script,
    show,
    wait_gone,
)

Prepare = Callable[[Arena, str], None]


def _nothing(arena: Arena, other: str) -> None:
    return None


@dataclass(frozen=True)
class Case:
    name: str
    plant: list[str]  # sh lines; R is the run folder, ID the run id, OUT/MADE/OTHER/PH as named
    planted: Callable[[Path], bool]  # the run folder's path -> the plant is in place
    record: str | None = None  # reason_code of the run's record_unusable, when the record is the target
    console: str | None = None  # reason_code of output.console
    manifest: str | None = None  # reason_code of status.manifest and output.manifest
    artifacts: str | None = None  # reason_code of output.artifacts
    after_end: bool = False  # the runner rewrites this file at its end: the work plants it again after
    entries: tuple[tuple[str, str], ...] = ()  # artifacts entries (name, type) listed, never digested
    prepare: Prepare = field(default=_nothing)


def _is(kind: Callable[[int], bool], *names: str) -> Callable[[Path], bool]:
    def check(run: Path) -> bool:
        path = run.joinpath(*names)
        return os.path.lexists(path) and kind(os.lstat(path).st_mode)
    return check


def _bigger(name: str, size: int) -> Callable[[Path], bool]:
    return lambda run: (run / name).is_file() and not (run / name).is_symlink() \
        and (run / name).stat().st_size > size


def _deep_payload(arena: Arena, other: str) -> None:
    arena.payload("deep.json", ("[" * 100_000 + json.dumps(arena.canary()) + "]" * 100_000).encode())


def _bad_utf8_payload(arena: Arena, other: str) -> None:
    record = json.dumps(arena.record_naming_decoy(PLACEHOLDER, label=arena.canary())).encode()
    arena.payload("bad-utf8.json", b"\xff\xfe" + record.replace(b'"label"', b'"lab\xc3\x28el"'))


def _wrong_id_payload(arena: Arena, other: str) -> None:
    record = arena.record_naming_decoy(other, label=arena.canary())
    arena.payload("wrong-id.json", json.dumps(record, indent=1).encode())


def _huge_record_payload(arena: Arena, other: str) -> None:
    record = arena.record_naming_decoy(PLACEHOLDER, label=arena.canary() + "x" * ((1 << 20) + 4096))
    arena.payload("huge-record.json", json.dumps(record).encode())


def _huge_manifest_payload(arena: Arena, other: str) -> None:
    manifest = {"run_id": PLACEHOLDER, "schema_version": 1, "kind": "agent", "legs": [],
                "pad": arena.canary() + "x" * ((8 << 20) + 4096)}
    arena.payload("huge-manifest.json", json.dumps(manifest).encode())


def _copy_in(payload: str, name: str) -> list[str]:
    """Lines that put a payload (its placeholder id made this run's) in place of `name`, by rename."""
    return [f'sed "s/$PH/$ID/g" "$OUT/payloads/{payload}" > "$R/.plant"', f'mv -f "$R/.plant" "$R/{name}"']


def _fake_run_folder(record: str) -> list[str]:
    """Lines that build a run-shaped folder in made/ (its record from `record`) and swap the run folder
    for a link to it. A reader that followed the link would kill (a live decoy) or reap (a gone
    run, writing `exited` there)."""
    return ['F="$MADE/fake-$ID"', 'mkdir -p "$F/artifacts"',
            f'sed "s/$PH/$ID/g" "$OUT/{record}" > "$F/record.json"',
            'cp "$OUT/secret.txt" "$F/console.log"',
            'sed "s/$PH/$ID/g" "$OUT/manifest-secret.json" > "$F/manifest.json"',
            'cp "$OUT/vault/notes.txt" "$F/artifacts/notes.txt"', ': > "$F/record.lock"',
            'rm -rf "$R"', 'ln -s "$F" "$R"']


CASES = [
    Case("console_link_to_canary", ['ln -sf "$OUT/secret.txt" "$R/console.log"'],
         _is(stat.S_ISLNK, "console.log"), console="not_regular_file"),
    Case("manifest_link_to_canary",
         ['sed "s/$PH/$ID/g" "$OUT/manifest-secret.json" > "$MADE/manifest-$ID.json"',
          'ln -sf "$MADE/manifest-$ID.json" "$R/manifest.json"'],
         _is(stat.S_ISLNK, "manifest.json"), manifest="not_regular_file", after_end=True),
    Case("artifacts_link_to_canary_folder", ['rm -rf "$R/artifacts"', 'ln -s "$OUT/vault" "$R/artifacts"'],
         _is(stat.S_ISLNK, "artifacts"), artifacts="not_a_directory"),
    Case("artifacts_link_to_proc", ['rm -rf "$R/artifacts"', 'ln -s /proc "$R/artifacts"'],
         _is(stat.S_ISLNK, "artifacts"), artifacts="not_a_directory"),
    Case("record_link_to_outside_record_naming_the_decoy",
         ['sed "s/$PH/$ID/g" "$OUT/decoy-record.json" > "$MADE/record-$ID.json"',
          'ln -sf "$MADE/record-$ID.json" "$R/record.json"'],
         _is(stat.S_ISLNK, "record.json"), record="not_regular_file"),
    Case("run_folder_link_to_outside_folder", _fake_run_folder("decoy-record.json"),
         _is(stat.S_ISLNK), record="not_a_directory"),
    Case("console_fifo", ['rm -f "$R/console.log"', 'mkfifo "$R/console.log"'],
         _is(stat.S_ISFIFO, "console.log"), console="not_regular_file"),
    Case("manifest_fifo", ['rm -f "$R/manifest.json"', 'mkfifo "$R/manifest.json"'],
         _is(stat.S_ISFIFO, "manifest.json"), manifest="not_regular_file", after_end=True),
    Case("record_nested_100000_deep", _copy_in("deep.json", "record.json"),
         _bigger("record.json", 200_000), record="too_deep", prepare=_deep_payload),
    Case("record_invalid_utf8", _copy_in("bad-utf8.json", "record.json"),
         lambda run: (run / "record.json").read_bytes().startswith(b"\xff\xfe"), record="malformed",
         prepare=_bad_utf8_payload),
    Case("record_run_id_names_the_other_run", _copy_in("wrong-id.json", "record.json"),
         lambda run: json.loads((run / "record.json").read_text())["run_id"] != run.name,
         record="run_id_mismatch", prepare=_wrong_id_payload),
    Case("record_over_1_MiB", _copy_in("huge-record.json", "record.json"),
         _bigger("record.json", 1 << 20), record="too_large", prepare=_huge_record_payload),
    Case("manifest_over_8_MiB", _copy_in("huge-manifest.json", "manifest.json"),
         _bigger("manifest.json", 8 << 20), manifest="too_large", after_end=True,
         prepare=_huge_manifest_payload),
    Case("artifacts_hard_link_to_canary", ['ln "$OUT/secret.txt" "$R/artifacts/loot.txt"'],
         lambda run: (run / "artifacts" / "loot.txt").stat().st_nlink == 2,
         entries=(("loot.txt", "hardlink"),)),
    # Beyond the list: the same attacks on the other names the store opens.
    Case("record_fifo", ['rm -f "$R/record.json"', 'mkfifo "$R/record.json"'],
         _is(stat.S_ISFIFO, "record.json"), record="not_regular_file"),
    Case("run_folder_link_to_outside_folder_whose_run_is_gone", _fake_run_folder("dead-record.json"),
         _is(stat.S_ISLNK), record="not_a_directory"),
    Case("console_hard_link_to_canary", ['ln -f "$OUT/secret.txt" "$R/console.log"'],
         lambda run: (run / "console.log").stat().st_nlink == 2, console="not_regular_file"),
    Case("record_hard_link_to_outside_record_naming_the_decoy",
         ['sed "s/$PH/$ID/g" "$OUT/decoy-record.json" > "$MADE/record-$ID.json"',
          'ln -f "$MADE/record-$ID.json" "$R/record.json"'],
         lambda run: (run / "record.json").stat().st_nlink == 2, record="not_regular_file"),
    Case("console_sparse_10_GiB", ['truncate -s 10G "$R/console.log"'],
         lambda run: (run / "console.log").stat().st_size >= 10 << 30),
    Case("artifacts_holding_links_a_fifo_and_40_nested_folders",
         ['A="$R/artifacts"', 'ln -s "$OUT/secret.txt" "$A/link.txt"', 'ln -s "$OUT/vault" "$A/vault"',
          'mkfifo "$A/pipe"', 'mkdir -p "$A/' + "/".join(["d"] * 40) + '"'],
         _is(stat.S_ISFIFO, "artifacts", "pipe"),
         entries=(("link.txt", "symlink"), ("vault", "symlink"), ("pipe", "fifo"))),
    # The runner takes a planted lock away at its end (the name is the store's), so the work's
    # plant is made for good only after the runner's last write, like the manifest cases.
    Case("record_lock_link_to_canary", ['ln -sf "$OUT/secret.txt" "$R/record.lock"'],
         _is(stat.S_ISLNK, "record.lock"), after_end=True),
]

# The work waits for the submitter's `started` before planting, so its plant is the last word.
AFTER_START = [
    'i=0',
    'while ! grep -q \'"spawn_state": "started"\' "$R/record.json" 2>/dev/null; do',
    '  i=$((i+1)); [ "$i" -lt 400 ] || break; sleep 0.05',
    'done',
]
# A process the work leaves behind (its own session, so it outlives the run) plants again once
# the test has seen the runner exit and touched the go file: after the runner's last write.
AFTER_END = [
    'i=0',
    'while [ ! -e "$GO" ]; do',
    '  i=$((i+1)); [ "$i" -lt 600 ] || exit 1; sleep 0.05',
    'done',
]


def plant(arena: Arena, case: Case, way: str, other: str) -> str:
    """Plant the case; the planted run's id (its work ended, and everything it planted in place)."""
    variables = {"OUT": str(arena.outside), "MADE": str(arena.made), "OTHER": other, "PH": PLACEHOLDER}
    plant_sh = arena.scratch / "plant.sh"
    plant_sh.write_text(sh_script(['R="$1"; ID="$2"', "set -e", *case.plant], **variables))
    if way == "hand":
        target = arena.clone()
        subprocess.run(["sh", str(plant_sh), str(arena.runs / target), target], check=True, timeout=60)
        return target
    marker, go = arena.scratch / "planted-after-end", arena.scratch / "go"
    after_sh = arena.scratch / "after.sh"
    after_sh.write_text(sh_script(['R="$1"; ID="$2"', *AFTER_END, f'sh {plant_sh} "$R" "$ID"',
                                   f': > {marker}'], GO=str(go)))
    lines = ['R=$(dirname "$LI_ARTIFACTS_DIR"); ID=$LI_RUN_ID', *AFTER_START,
             f'sh {plant_sh} "$R" "$ID" || echo plant-failed']
    target, pid = arena.submit(sh_script([*lines, TEMPLATE_SCRIPT]))
    if case.after_end:
        # No process of the run outlives it any more (the runner stops every one before it records
        # the end: tests/e2e/test_run_tree.py), so what is planted after the runner's last write
        # comes from outside the run: any other process of the store's user.
        subprocess.Popen(["sh", str(after_sh), str(arena.runs / target), target], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not case.after_end:  # (a file the runner rewrites at its end is planted for good only after it)
        # wait only once the plant is whole, so the wait never sees a half-done plant (a gap
        # between `rm` and `ln` is "no such run", which is not what this case is about)
        eventually(f"the work planting {case.name}", lambda: case.planted(arena.runs / target))
    waited = arena.li("job", "wait", target, "--max-wait", "30", "--poll-interval", "0.2")
    row = _row(waited, target)
    if case.record:
        assert row["error"]["reason_code"] == case.record, show(waited)
    else:
        assert row["terminal"] is True and row["error"] is None, show(waited)
    wait_gone(pid)
    if case.after_end:
        go.touch()
        eventually("the work's detached planter", marker.exists)
    return target


def _row(envelope: dict[str, Any], run_id: str) -> dict[str, Any]:
    assert envelope["ok"] is True, show(envelope)
    rows: list[dict[str, Any]] = [r for r in envelope["data"]["runs"] if r["run_id"] == run_id]
    assert len(rows) == 1, (run_id, show(envelope))
    return rows[0]


def _field(value: dict[str, Any], reason: str | None, what: str) -> None:
    if reason is None:
        assert value["available"] is True, (what, show(value))
    else:
        assert (value["available"], value["value"], value["reason_code"]) == (False, None, reason), \
            (what, show(value))


def _refused(envelope: dict[str, Any], reason: str, run_id: str) -> None:
    assert envelope["ok"] is False, show(envelope)
    assert envelope["error"]["kind"] == "unavailable", show(envelope)
    assert envelope["error"]["detail"]["reason_code"] == reason, show(envelope)
    assert envelope["error"]["detail"].get("run_id") == run_id, show(envelope)


def _normal_row(arena: Arena, row: dict[str, Any]) -> None:
    want = arena.template.status
    assert row["error"] is None, show(row)
    assert (row["status"], row["terminal"], row["outcome"]) == (want["status"], True, want["outcome"]), show(row)


@pytest.mark.parametrize("way", ["work", "hand"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_plant_is_answered_per_run_and_never_reaches_outside_the_store(arena: Arena, case: Case,
                                                                          way: str) -> None:
    other = arena.clone()
    case.prepare(arena, other)
    arena.seal()
    target = plant(arena, case, way, other)
    run = arena.runs / target
    assert case.planted(run), f"the plant did not take: {sorted(os.listdir(run)) if run.is_dir() else run}"
    arena.seal_made()

    status = arena.li("job", "status", target)
    output = arena.li("job", "output", target)
    listed = arena.li("job", "list")
    waited = arena.li("job", "wait", target, other, "--max-wait", "0")
    killed = arena.li("job", "kill", target)
    arena.assert_decoy_alive(f"li job kill {target} answered {killed}")
    pruned = arena.li("job", "prune")

    _normal_row(arena, _row(listed, other))
    _normal_row(arena, _row(waited, other))
    assert pruned["ok"] is True and other in pruned["data"]["removed"], show(pruned)
    assert not os.path.lexists(arena.runs / other)

    if case.record:
        for envelope in (status, output, killed):
            _refused(envelope, case.record, target)
        for envelope in (listed, waited):
            row = _row(envelope, target)
            assert (row["error"]["kind"], row["error"]["reason_code"]) == ("record_unusable", case.record), show(row)
            assert row["status"] is None and row["terminal"] is None, show(row)
        assert waited["data"]["all_terminal"] is False, show(waited)
        assert target not in pruned["data"]["removed"], show(pruned)
        assert target in [k["run_id"] for k in pruned["data"]["kept"]], show(pruned)
        assert os.path.lexists(run)  # kept: its end is unknown
    else:
        assert status["ok"] is True, show(status)
        want = arena.template.status
        assert (status["data"]["status"], status["data"]["terminal"], status["data"]["outcome"]) == \
            (want["status"], True, want["outcome"]), show(status)  # the runner recorded the work's own end
        _field(status["data"]["manifest"], case.manifest, "status.manifest")
        assert output["ok"] is True, show(output)
        _field(output["data"]["console"], case.console, "output.console")
        _field(output["data"]["manifest"], case.manifest, "output.manifest")
        _field(output["data"]["artifacts"], case.artifacts, "output.artifacts")
        _normal_row(arena, _row(listed, target))
        _normal_row(arena, _row(waited, target))
        assert waited["data"]["all_terminal"] is True, show(waited)
        assert killed["ok"] is True and killed["data"]["action"] == "already_terminal", show(killed)
        assert target in pruned["data"]["removed"], show(pruned)
        assert not os.path.lexists(run)  # removed: the link went, never its target (verify below)
    if case.entries:
        entries = {e["name"]: e for e in output["data"]["artifacts"]["value"]}
        for name, kind in case.entries:
            assert (entries[name]["type"], entries[name]["sha256"]) == (kind, None), show(entries[name])
        assert isinstance(entries["response.md"]["sha256"], str), show(entries)
    arena.verify()
