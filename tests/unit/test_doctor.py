"""`li doctor`: each check on a fake machine, the real adapter on tmp_path, and the verb's exit code."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

import pytest

from lionrun.adapters.diagnostics import SystemDiagnostics
from lionrun.application.doctor import NotifySetting, StoreModes, diagnose


@dataclass
class FakeDiagnostics:
    """A machine described by attributes; every question answered from them."""

    write_error: str | None = None
    machine: str | None = "m-1"
    boot: str | None = "b-1"
    create_time: float | None = 1000.0
    executables: dict[str, str] = field(default_factory=lambda: {"sh": "/bin/sh"})
    notify: NotifySetting | None = None
    modes: StoreModes = field(default_factory=StoreModes)
    tightened_modes: StoreModes | None = None  # what the store looks like once tightened
    tighten_calls: int = 0
    confinement_refused: str | None = None

    def home(self) -> str:
        return "/state/li"

    def store_write_error(self) -> str | None:
        return self.write_error

    def store_modes(self, tighten: bool) -> StoreModes:
        if tighten:
            self.tighten_calls += 1
            self.modes = self.tightened_modes or StoreModes(examined=self.modes.examined,
                                                            tightened=self.modes.loose)
        return self.modes

    def machine_id(self) -> str | None:
        return self.machine

    def boot_id(self) -> str | None:
        return self.boot

    def own_create_time(self) -> tuple[float | None, str | None]:
        return (self.create_time, None) if self.create_time is not None else (None, "AccessDenied")

    def find_executable(self, name: str) -> str | None:
        return self.executables.get(name)

    def notify_setting(self) -> NotifySetting | None:
        return self.notify

    def confinement_refusal(self) -> str | None:
        return self.confinement_refused


def check(report: dict, name: str) -> dict:
    return next(c for c in report["checks"] if c["name"] == name)


def test_a_healthy_machine_without_agent_clis_is_ready_with_warnings() -> None:
    report = diagnose(FakeDiagnostics())
    assert report["ok"] is True
    for provider in ("claude", "codex", "gemini", "opencode"):
        found = check(report, f"provider.{provider}")
        assert (found["ok"], found["severity"]) == (False, "warning")
        assert provider in found["fix"]
    assert check(report, "provider.sh")["ok"] is True


def test_every_check_has_the_wire_shape() -> None:
    report = diagnose(FakeDiagnostics())
    names = [c["name"] for c in report["checks"]]
    assert names == ["store.writable", "store.private", "host.machine_id", "host.boot_id", "process.create_time", "provider.sh",
                     "work.confinement", "provider.claude", "provider.codex", "provider.gemini", "provider.opencode",
                     "notify.command"]
    for c in report["checks"]:
        assert set(c) == {"name", "ok", "severity", "detail", "fix"}
        assert c["severity"] in ("error", "warning", "info")
        assert isinstance(c["detail"], str) and c["detail"]
        assert c["ok"] or c["fix"], c


def test_an_unwritable_store_is_an_error_with_a_fix() -> None:
    report = diagnose(FakeDiagnostics(write_error="Read-only file system"))
    store = check(report, "store.writable")
    assert report["ok"] is False
    assert (store["ok"], store["severity"]) == (False, "error")
    assert "Read-only file system" in store["detail"] and "LI_HOME" in store["fix"]


def test_unreadable_process_create_times_are_an_error() -> None:
    report = diagnose(FakeDiagnostics(create_time=None))
    assert report["ok"] is False
    assert check(report, "process.create_time")["ok"] is False


def test_missing_host_identities_are_warnings_not_errors() -> None:
    report = diagnose(FakeDiagnostics(machine=None, boot=None))
    assert report["ok"] is True
    for name in ("host.machine_id", "host.boot_id"):
        assert (check(report, name)["ok"], check(report, name)["severity"]) == (False, "warning")


def test_found_provider_clis_are_reported_with_their_paths() -> None:
    diag = FakeDiagnostics(executables={"sh": "/bin/sh", "claude": "/opt/bin/claude"})
    found = check(diagnose(diag), "provider.claude")
    assert found["ok"] is True and "/opt/bin/claude" in found["detail"]


def test_no_notify_command_is_only_a_note() -> None:
    notify = check(diagnose(FakeDiagnostics()), "notify.command")
    assert (notify["ok"], notify["severity"]) == (True, "info")


def test_a_notify_command_that_cannot_be_found_fails_the_doctor() -> None:
    diag = FakeDiagnostics(notify=NotifySetting("LI_NOTIFY_COMMAND", ("nosuch", "{run_id}")))
    report = diagnose(diag)
    notify = check(report, "notify.command")
    assert report["ok"] is False
    assert (notify["ok"], notify["severity"]) == (False, "error")
    assert "nosuch" in notify["detail"] and "LI_NOTIFY_COMMAND" in notify["fix"]


def test_a_notify_command_that_resolves_passes() -> None:
    diag = FakeDiagnostics(notify=NotifySetting("/h/config.toml", ("sh", "-c", "true")))
    assert check(diagnose(diag), "notify.command")["ok"] is True


def test_an_unreadable_notify_setting_fails_with_its_reason() -> None:
    diag = FakeDiagnostics(notify=NotifySetting("/h/config.toml", None, "bad TOML"))
    notify = check(diagnose(diag), "notify.command")
    assert notify["ok"] is False and "bad TOML" in notify["detail"]


# The real adapter, on this machine and tmp_path.

def test_the_real_store_check_creates_and_removes_its_temp_file(tmp_path) -> None:
    home = tmp_path / "li"
    assert SystemDiagnostics(str(home)).store_write_error() is None
    assert home.is_dir() and list(home.iterdir()) == []


def test_the_real_store_check_reports_a_home_that_is_a_file(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert SystemDiagnostics(str(blocker / "li")).store_write_error()


def test_the_real_adapter_reads_its_own_create_time(tmp_path) -> None:
    created, error = SystemDiagnostics(str(tmp_path)).own_create_time()
    assert error is None and created is not None and created > 0


def test_the_real_adapter_finds_executables_on_path_and_by_path(tmp_path) -> None:
    tool = tmp_path / "bin" / "mytool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    diag = SystemDiagnostics(str(tmp_path), {"PATH": str(tool.parent)})
    assert diag.find_executable("mytool") == str(tool)
    assert diag.find_executable(str(tool)) == str(tool)
    assert diag.find_executable("nosuch-tool-xyz") is None
    assert diag.find_executable("sh") is not None  # /bin/sh even when PATH lacks it


def test_the_environment_notify_command_wins_over_the_config_file(tmp_path) -> None:
    (tmp_path / "config.toml").write_text('notify = ["from-config", "{run_id}"]\n')
    diag = SystemDiagnostics(str(tmp_path), {"LI_NOTIFY_COMMAND": "from-env '{status}'"})
    assert diag.notify_setting() == NotifySetting("LI_NOTIFY_COMMAND", ("from-env", "{status}"))


def test_the_config_file_notify_command_is_read_as_a_list_or_a_string(tmp_path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('notify = ["notify-send", "li {run_id}"]\n')
    assert SystemDiagnostics(str(tmp_path), {}).notify_setting() == NotifySetting(
        str(config), ("notify-send", "li {run_id}"))
    config.write_text('notify = "notify-send \'li {run_id}\'"\n')
    assert SystemDiagnostics(str(tmp_path), {}).notify_setting().argv == ("notify-send", "li {run_id}")


@pytest.mark.parametrize("body", ["notify = [", "notify = 3\n", "notify = []\n"])
def test_a_broken_config_file_is_reported_not_raised(tmp_path, body: str) -> None:
    (tmp_path / "config.toml").write_text(body)
    setting = SystemDiagnostics(str(tmp_path), {}).notify_setting()
    assert setting is not None and setting.argv is None and setting.error


def test_nothing_configured_means_no_notify_setting(tmp_path) -> None:
    assert SystemDiagnostics(str(tmp_path), {}).notify_setting() is None
    (tmp_path / "config.toml").write_text("other = 1\n")
    assert SystemDiagnostics(str(tmp_path), {}).notify_setting() is None


def test_the_verb_answers_from_the_containers_diagnostics(tmp_path, capsys) -> None:
    from dependency_injector import providers

    from lionrun.entrypoints.container import Container, set_container
    from lionrun.entrypoints.dispatch import answer, human

    container = Container()
    container.config.from_dict({"home": str(tmp_path)})
    container.upkeep.diagnostics.override(providers.Object(FakeDiagnostics(write_error="No space left on device")))
    set_container(container)
    envelope = answer(["doctor"])
    assert envelope["ok"] is True and envelope["data"]["ok"] is False
    assert human(["doctor"], os.sys.stdout) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "No space left on device" in out and "fix:" in out


# store.private: the store holds prompts and output, so nothing in it is open to group or others.

def test_a_private_store_passes_without_being_changed() -> None:
    diag = FakeDiagnostics(modes=StoreModes(examined=12))
    private = check(diagnose(diag), "store.private")
    assert (private["ok"], private["severity"], private["fix"]) == (True, "warning", None)
    assert "0700" in private["detail"] and "0600" in private["detail"] and diag.tighten_calls == 0


def test_a_store_open_to_others_is_a_warning_naming_how_many_and_one_of_them() -> None:
    example = "/state/li/runs/20260725T175010-abcdef/console.log (0644)"
    diag = FakeDiagnostics(modes=StoreModes(examined=40, loose=17, example=example))
    report = diagnose(diag)
    private = check(report, "store.private")
    assert report["ok"] is True  # a warning never fails the doctor
    assert (private["ok"], private["severity"]) == (False, "warning")
    assert "17 entries" in private["detail"] and example in private["detail"]
    assert "li doctor --fix" in private["fix"] and "secrets" in private["fix"]
    assert diag.tighten_calls == 0  # only --fix changes anything


def test_fix_tightens_first_and_then_reports_the_store_private() -> None:
    diag = FakeDiagnostics(modes=StoreModes(examined=40, loose=17, example="/state/li (0755)"))
    private = check(diagnose(diag, fix=True), "store.private")
    assert diag.tighten_calls == 1
    assert private["ok"] is True and "tightened 17 entries" in private["detail"]


def test_a_fix_that_could_not_change_everything_still_warns_and_says_why() -> None:
    left = StoreModes(examined=40, loose=1, example="/state/li/runs/x/artifacts/hard (0644)", tightened=16,
                      failed=1, failure="/state/li/runs/x/artifacts/hard: has 2 hard links")
    diag = FakeDiagnostics(modes=StoreModes(examined=40, loose=17), tightened_modes=left)
    private = check(diagnose(diag, fix=True), "store.private")
    assert (private["ok"], private["severity"]) == (False, "warning")
    assert "tightened 16 entries" in private["detail"] and "has 2 hard links" in private["detail"]
    assert "chmod go-rwx" in private["fix"]


def test_a_walk_cut_at_its_bound_is_never_called_private() -> None:
    private = check(diagnose(FakeDiagnostics(modes=StoreModes(examined=100_000, truncated=True))), "store.private")
    assert private["ok"] is False and "stopped after 100000 entries" in private["detail"]


def test_a_store_that_cannot_be_examined_is_a_warning_with_its_reason() -> None:
    private = check(diagnose(FakeDiagnostics(modes=StoreModes(error="Permission denied"))), "store.private")
    assert (private["ok"], private["severity"]) == (False, "warning")
    assert "Permission denied" in private["detail"] and private["fix"]


def test_the_verb_passes_fix_through_to_the_diagnostics(tmp_path) -> None:
    from dependency_injector import providers

    from lionrun.entrypoints.container import Container, set_container
    from lionrun.entrypoints.dispatch import answer

    diag = FakeDiagnostics(modes=StoreModes(examined=3, loose=2, example="/state/li (0755)"))
    container = Container()
    container.config.from_dict({"home": str(tmp_path)})
    container.upkeep.diagnostics.override(providers.Object(diag))
    set_container(container)
    assert check(answer(["doctor"])["data"], "store.private")["ok"] is False and diag.tighten_calls == 0
    assert check(answer(["doctor", "--fix"])["data"], "store.private")["ok"] is True and diag.tighten_calls == 1


def test_the_slurm_executor_adds_a_check_naming_the_cluster() -> None:
    from lionrun.adapters.fakes import ScriptedCluster

    cluster = ScriptedCluster("lionrun")
    data = diagnose(FakeDiagnostics(), cluster=cluster)
    [check] = [c for c in data["checks"] if c["name"] == "executor.slurm"]
    assert check["ok"] and "lionrun" in check["detail"] and data["ok"]
    cluster.problems = ["the Slurm tools sbatch, scancel are not on PATH"]
    data = diagnose(FakeDiagnostics(), cluster=cluster)
    [check] = [c for c in data["checks"] if c["name"] == "executor.slurm"]
    assert not check["ok"] and check["severity"] == "error" and "sbatch, scancel" in check["detail"]
    assert check["fix"] and data["ok"] is False
    assert not [c for c in diagnose(FakeDiagnostics())["checks"] if c["name"] == "executor.slurm"]


def test_doctor_says_when_the_work_would_run_unconfined_and_why() -> None:
    """A kernel refusal is reported with its reason, as a warning."""
    hidden = check(diagnose(FakeDiagnostics()), "work.confinement")
    assert (hidden["ok"], hidden["severity"]) == (True, "warning")
    refused = check(diagnose(FakeDiagnostics(confinement_refused="unshare: Operation not permitted")),
                    "work.confinement")
    assert refused["ok"] is False and "unshare: Operation not permitted" in refused["detail"]
    assert diagnose(FakeDiagnostics(confinement_refused="no"))["ok"] is True  # a warning, not an error
