"""`li doctor` through the real executable: one envelope under --machine, exit 1 for a person on errors."""

from __future__ import annotations

import os
import stat

from tests.support import machine, run_li


def test_a_healthy_home_answers_ok_with_every_check(li_home) -> None:
    data = machine("doctor", home=li_home, env={"PATH": os.environ["PATH"]}).data
    assert data["ok"] is True
    names = {c["name"] for c in data["checks"]}
    assert {"store.writable", "host.machine_id", "host.boot_id", "process.create_time", "provider.sh",
            "provider.claude", "provider.codex", "provider.gemini", "notify.command", "work.confinement"} <= names
    confinement = next(c for c in data["checks"] if c["name"] == "work.confinement")
    assert confinement["ok"] is True, confinement  # the kernel here (and CI's) allows user and mount namespaces
    assert os.listdir(li_home) == []  # the write probe leaves nothing behind


def test_a_missing_notify_command_is_an_error_in_both_modes(li_home) -> None:
    env = {"LI_NOTIFY_COMMAND": "no-such-notifier-xyz {run_id}"}
    data = machine("doctor", home=li_home, env=env).data
    notify = next(c for c in data["checks"] if c["name"] == "notify.command")
    assert data["ok"] is False and notify["ok"] is False and "no-such-notifier-xyz" in notify["detail"]
    human = run_li("doctor", home=li_home, env=env)
    assert human.returncode == 1 and "FAIL  notify.command" in human.stdout and "fix:" in human.stdout


def test_a_notify_command_from_the_config_file_is_resolved(li_home, tmp_path) -> None:
    tool = tmp_path / "notifier"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    with open(os.path.join(li_home, "config.toml"), "w") as handle:
        handle.write(f'notify = ["{tool}", "{{run_id}}"]\n')
    data = machine("doctor", home=li_home).data
    notify = next(c for c in data["checks"] if c["name"] == "notify.command")
    assert notify["ok"] is True and str(tool) in notify["detail"]


def test_missing_agent_clis_are_warnings_and_do_not_fail_the_doctor(li_home, tmp_path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    human = run_li("doctor", home=li_home, env={"PATH": str(empty)})
    assert human.returncode == 0, human.stdout
    assert "warn  provider.claude" in human.stdout and "ready" in human.stdout


def test_doctor_fix_makes_an_old_store_private_without_following_a_link(tmp_path) -> None:
    home, outside = tmp_path / "li", tmp_path / "outside.txt"
    run = home / "runs" / "20260725T175010-abcdef"
    run.mkdir(parents=True)
    outside.write_text("not the store's")
    os.chmod(outside, 0o644)
    for path, mode in ((home, 0o755), (home / "runs", 0o755), (run, 0o755)):
        os.chmod(path, mode)
    (run / "console.log").write_text("a secret printed by the work")
    os.chmod(run / "console.log", 0o644)
    os.symlink(outside, run / "link")

    def private(data: dict) -> dict:
        return next(c for c in data["checks"] if c["name"] == "store.private")

    before = private(machine("doctor", home=str(home)).data)
    assert (before["ok"], before["severity"]) == (False, "warning") and "4 entries" in before["detail"]
    person = run_li("doctor", "--fix", home=str(home))
    assert person.returncode == 0 and "tightened 4 entries" in person.stdout, person.stdout
    assert [stat.S_IMODE(os.stat(p).st_mode) for p in (home, home / "runs", run, run / "console.log")] == [
        0o700, 0o700, 0o700, 0o600]
    assert stat.S_IMODE(os.stat(outside).st_mode) == 0o644
    assert private(machine("doctor", home=str(home)).data)["ok"] is True
