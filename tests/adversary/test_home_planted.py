"""The store itself planted: LI_HOME a regular file, and `runs/` replaced by a link to an outside folder.

The work can reach `$LI_ARTIFACTS_DIR/../..` (the `runs/` folder) as easily as its own run folder.
Whatever is there instead of a folder, every verb answers one envelope with error.kind
`unavailable`, nothing outside the store is read, written or signalled, and no canary is served.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.adversary.harness import PLACEHOLDER, Arena, eventually, sh_script, show, wait_gone


def _verbs(run_ids: list[str]) -> list[tuple[str, ...]]:
    first = run_ids[0]
    calls: list[tuple[str, ...]] = [("job", "list"), ("job", "wait", *run_ids, "--max-wait", "0"),
                                    ("job", "prune")]
    for run_id in run_ids:
        calls += [("job", "status", run_id), ("job", "output", run_id), ("job", "kill", run_id)]
    return [*calls, ("agent", "--detach", "--cwd", "SCRATCH", "sh", f"echo {first}")]


def _all_unavailable(arena: Arena, run_ids: list[str], home: str | None = None) -> None:
    for argv in _verbs(run_ids):
        argv = tuple(str(arena.scratch) if a == "SCRATCH" else a for a in argv)
        envelope = arena.li(*argv, home=None if home is None else arena.root / home)
        assert envelope["ok"] is False and envelope["error"]["kind"] == "unavailable", (argv, show(envelope))
        arena.assert_decoy_alive(f"li {' '.join(argv)} answered {envelope}")


def test_li_home_that_is_a_regular_file_makes_every_verb_unavailable(arena: Arena) -> None:
    home_file = arena.outside / "home-file"
    home_file.write_text(arena.canary() + "\n")
    arena.seal()
    _all_unavailable(arena, [arena.template.run_id], home="outside/home-file")
    arena.verify()


def _fake_runs(arena: Arena, fake_id: str) -> str:
    """Lines that build, in made/, a runs folder holding one live-looking run naming the decoy."""
    return sh_script([
        'RUNS="$1"', 'F="$MADE/runs/$FAKE"', 'mkdir -p "$F/artifacts"',
        'sed "s/$PH/$FAKE/g" "$OUT/decoy-record.json" > "$F/record.json"',
        'cp "$OUT/secret.txt" "$F/console.log"', 'cp "$OUT/vault/notes.txt" "$F/artifacts/notes.txt"',
        ': > "$F/record.lock"', 'mv "$RUNS" "$RUNS.moved-away"', 'ln -s "$MADE/runs" "$RUNS"',
    ], OUT=str(arena.outside), MADE=str(arena.made), PH=PLACEHOLDER, FAKE=fake_id)


@pytest.mark.parametrize("way", ["work", "hand"])
def test_a_runs_folder_replaced_by_a_link_is_never_followed(arena: Arena, way: str) -> None:
    fake_id = "20250101T000000-fa4e00"
    other = arena.clone()
    plant_sh = arena.scratch / "plant-runs.sh"
    plant_sh.write_text(_fake_runs(arena, fake_id))
    arena.seal()
    if way == "hand":
        subprocess.run(["sh", str(plant_sh), str(arena.runs)], check=True, timeout=60)
        ids = [fake_id, other]
    else:
        target, pid = arena.submit(sh_script(
            ['RUNS=$(dirname "$(dirname "$LI_ARTIFACTS_DIR")")', f'sh {plant_sh} "$RUNS"', "echo done"]))
        eventually("the work planting runs/", arena.runs.is_symlink)
        waited = arena.li("job", "wait", target, "--max-wait", "30", "--poll-interval", "0.2")
        assert waited["ok"] is False and waited["error"]["kind"] == "unavailable", show(waited)
        wait_gone(pid)
        ids = [fake_id, other, target]
    assert os.path.islink(arena.runs)
    arena.seal_made()
    _all_unavailable(arena, ids)
    arena.verify()


@pytest.mark.parametrize("plant", ["fifo", "link"])
def test_a_config_toml_planted_as_a_fifo_or_a_link_never_hangs_li_nor_is_followed(tmp_path, plant: str) -> None:
    """Work that reaches $LI_HOME (`--confine off`) can put a FIFO or a link where config.toml goes.
    Every call still answers, promptly, in one envelope (D3/D8 checked by call_li, which fails on a
    hang); what the link names is never read; a call that needs the file says why it is unusable."""
    from tests.adversary.harness import call_li

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    canary = tmp_path / "canary.toml"
    canary.write_text('notify = ["sh", "-c", "echo CANARY-CONFIG > /dev/null"]\nstore = "CANARY-STORE"\n')
    if plant == "fifo":
        os.mkfifo(home / "config.toml")
    else:
        os.symlink(canary, home / "config.toml")
    for argv in (("job", "list"), ("job", "wait", "20250101T000000-abcdef", "--max-wait", "0"), ("doctor",),
                 ("agent", "--detach", "sh", "echo hi")):
        envelope, out, _ = call_li(argv, str(home), str(tmp_path), timeout=20)
        assert b"CANARY" not in out, (argv, show(envelope))
        if argv[0] == "agent":  # a submit reads its defaults there: refused, saying what the file is
            assert envelope["ok"] is False and "config.toml" in envelope["error"]["message"], show(envelope)
            assert ("symbolic link" if plant == "link" else "not a regular file") in envelope["error"]["message"]
