"""`li doctor`: check what a run needs on this machine, and say what to do about each failure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from lionrun.domain.agents import NAMES as PROVIDER_CLIS
from lionrun.domain.agents import agent
from lionrun.domain.vocabulary import Severity
from lionrun.domain.wire import DoctorCheck, DoctorData

if TYPE_CHECKING:
    from lionrun.application.ports import Cluster, RunRecords, StoreAdmin



@dataclass(frozen=True)
class StoreModes:
    """What a walk of the store found: folders and files open to group or others (links never followed).

    `loose` counts the entries still open when the walk ended (after tightening, when that was
    asked for), `example` names one with its mode; `tightened` counts those made private;
    `failed` those that could not be examined or tightened, `failure` says why for one of them;
    `truncated` is true when the walk stopped at its bound; `error` when the store could not
    be opened at all.
    """

    examined: int = 0
    loose: int = 0
    example: str | None = None
    tightened: int = 0
    failed: int = 0
    failure: str | None = None
    truncated: bool = False
    error: str | None = None


@dataclass(frozen=True)
class NotifySetting:
    """The configured notify command: where it came from, its argv, or why it could not be read."""

    source: str
    argv: tuple[str, ...] | None
    error: str | None = None


class Diagnostics(Protocol):
    """The questions doctor asks the machine; each answers with a fact, never raises."""

    def home(self) -> str:
        """Where runs are stored ($LI_HOME)."""
        ...

    def store_write_error(self) -> str | None:
        """Create and remove a temp file under the store; None when that worked, else why not."""
        ...

    def store_modes(self, tighten: bool) -> StoreModes:
        """Walk the store for folders and files open to group or others; take those bits away if asked."""
        ...

    def machine_id(self) -> str | None:
        ...

    def boot_id(self) -> str | None:
        ...

    def own_create_time(self) -> tuple[float | None, str | None]:
        """This process's create time as psutil reads it, or (None, why not)."""
        ...

    def find_executable(self, name: str) -> str | None:
        """The absolute path `name` resolves to (PATH lookup, or a path checked for +x)."""
        ...

    def notify_setting(self) -> NotifySetting | None:
        """LI_NOTIFY_COMMAND, else `notify` in $LI_HOME/config.toml, else None."""
        ...

    def confinement_refusal(self) -> str | None:
        """None when the kernel hides the store from a run's work here; else why not."""
        ...


def finding(name: str, ok: bool, severity: Severity, detail: str, fix: str | None = None) -> DoctorCheck:
    """One check's result; `severity` is how much it matters when `ok` is false."""
    return DoctorCheck(name=name, ok=ok, severity=severity, detail=detail, fix=fix)


def check_store(diag: Diagnostics) -> DoctorCheck:
    error = diag.store_write_error()
    if error is None:
        return finding("store.writable", True, "error", f"{diag.home()} is writable")
    return finding("store.writable", False, "error", f"cannot write under {diag.home()}: {error}",
                 "make the directory writable, or point LI_HOME at a directory you own")


PRIVATE_FIX = ("run `li doctor --fix` to take group and other permissions away (folders 0700, files "
               "0600): runs hold prompts and output, which may contain secrets")


def check_private(diag: Diagnostics, fix: bool = False) -> DoctorCheck:
    """`store.private`: nothing in the store is open to group or others; `--fix` tightens first."""
    found = diag.store_modes(tighten=fix)
    if found.error is not None:
        return finding("store.private", False, "warning", f"cannot examine {diag.home()}: {found.error}",
                     "make the directory one you own and can read, or point LI_HOME at one")
    done = f"tightened {_entries(found.tightened)}; " if found.tightened else ""
    problems = []
    if found.loose:
        problems.append(f"{_entries(found.loose)} open to group or others (e.g. {found.example})")
    if found.failed:
        problems.append(f"{_entries(found.failed)} could not be examined or tightened ({found.failure})")
    if found.truncated:
        problems.append(f"the walk stopped after {_entries(found.examined)}; the rest was not examined")
    if not problems:
        return finding("store.private", True, "warning",
                     f"{done}{diag.home()} is private: folders 0700, files 0600")
    advice = ("change what is left by hand (`chmod go-rwx PATH`), or prune old runs (`li job prune`)"
              if fix else PRIVATE_FIX)
    return finding("store.private", False, "warning", f"{done}under {diag.home()}: {'; '.join(problems)}", advice)


def _entries(count: int) -> str:
    return f"{count} entr{'y' if count == 1 else 'ies'}"


def check_machine_id(diag: Diagnostics) -> DoctorCheck:
    if diag.machine_id():
        return finding("host.machine_id", True, "warning", "machine id readable (/etc/machine-id)")
    return finding("host.machine_id", False, "warning",
                 "no readable /etc/machine-id; runs are attributed to this host by hostname",
                 "run `systemd-machine-id-setup` (or `dbus-uuidgen --ensure=/etc/machine-id`) as root")


def check_boot_id(diag: Diagnostics) -> DoctorCheck:
    if diag.boot_id():
        return finding("host.boot_id", True, "warning", "boot id readable (/proc/sys/kernel/random/boot_id)")
    return finding("host.boot_id", False, "warning",
                 "no readable boot id; a run orphaned by a reboot is only found by its pid",
                 "mount /proc (Linux) so /proc/sys/kernel/random/boot_id can be read")


def check_create_time(diag: Diagnostics) -> DoctorCheck:
    created, error = diag.own_create_time()
    if created is not None:
        return finding("process.create_time", True, "error", "psutil reads process create times")
    return finding("process.create_time", False, "error",
                 f"psutil cannot read a process create time: {error}",
                 "reinstall psutil (`pip install --force-reinstall psutil`) and make /proc readable; "
                 "without it a run's process cannot be told from a later one with the same pid")


def check_shell(diag: Diagnostics) -> DoctorCheck:
    found = diag.find_executable("sh")
    if found:
        return finding("provider.sh", True, "error", f"sh runs shell work ({found})")
    return finding("provider.sh", False, "error", "no `sh` on PATH or at /bin/sh",
                 "put a POSIX shell on PATH; `li agent sh ...` needs it")


def check_provider(diag: Diagnostics, name: str) -> DoctorCheck:
    """`provider.NAME`: the agent CLI's own probe (`domain/agents/`: its executable, what to do without it)."""
    probe = agent(name).doctor
    found = diag.find_executable(probe.executable)
    if found:
        return finding(f"provider.{name}", True, "warning", f"{probe.executable} found at {found}")
    return finding(f"provider.{name}", False, "warning", f"{probe.executable} not found on PATH", probe.fix)


def check_notify(diag: Diagnostics) -> DoctorCheck:
    setting = diag.notify_setting()
    if setting is None:
        return finding("notify.command", True, "info", "no notify command configured (runs end silently)")
    if setting.error is not None or not setting.argv:
        return finding("notify.command", False, "error",
                     f"notify command from {setting.source} cannot be read: {setting.error or 'empty'}",
                     f"fix {setting.source}: an argv template such as `notify-send li {{run_id}}`")
    found = diag.find_executable(setting.argv[0])
    if found:
        return finding("notify.command", True, "error", f"notify command {found} (from {setting.source})")
    return finding("notify.command", False, "error",
                 f"notify command {setting.argv[0]!r} (from {setting.source}) is not an executable",
                 f"install {setting.argv[0]!r} or change {setting.source} to a command that exists")


def check_confinement(diag: Diagnostics) -> DoctorCheck:
    why = diag.confinement_refusal()
    if why is None:
        return finding("work.confinement", True, "warning",
                       "the store is hidden from a run's work (user and mount namespaces)")
    return finding("work.confinement", False, "warning",
                   f"a run's work would run unconfined, able to reach the store: {why}",
                   "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
                   "user.max_user_namespaces > 0, AppArmor's restrict_unprivileged_userns=0); "
                   "`--confine required` refuses to start such a run")


HOST_CHECKS: tuple[Callable[[Diagnostics], DoctorCheck], ...] = (
    check_machine_id, check_boot_id, check_create_time, check_shell, check_confinement,
)


def check_shared_store(admin: StoreAdmin) -> DoctorCheck | None:
    """`store.shared`: a PostgreSQL store is reachable, holds this li's schema and lets this role
    read and write runs. None for the filesystem store (the folder checks cover it)."""
    kind, location = admin.describe()
    if kind != "postgresql":
        return None
    problems = admin.health()
    if not problems:
        return finding("store.shared", True, "error", f"{location}: reachable, schema current, runs readable and writable")
    fix = ("run `li store init` once" if any("li store init" in p for p in problems) else
           "check LI_STORE (or `store` in config.toml), that the server is up, and this role's privileges")
    return finding("store.shared", False, "error", f"{location}: {'; '.join(problems)}", fix)


def check_slurm(cluster: Cluster) -> DoctorCheck:
    """`executor.slurm`: the Slurm tools are on PATH and the controller answers; names the cluster."""
    problems = cluster.health()
    if problems:
        return finding("executor.slurm", False, "error", f"Slurm is the executor, but {'; '.join(problems)}",
                       "install the Slurm client tools (sbatch, squeue, scontrol, scancel), set SLURM_CONF, "
                       "and check that slurmctld is up (`scontrol ping`); or set `executor = \"local\"`")
    name = cluster.name()
    return finding("executor.slurm", True, "error",
                   f"sbatch, squeue and scancel reach cluster {name or '(name unreadable)'}")


def check_worktrees(stale: list[str]) -> DoctorCheck:
    """Worktrees li made whose run is gone: the work in them is on their branches."""
    if not stale:
        return finding("worktrees", True, "warning", "no stale li worktree")
    shown = ", ".join(stale[:5]) + (" …" if len(stale) > 5 else "")
    return finding("worktrees", False, "warning", f"{len(stale)} li worktree(s) whose run is gone: {shown}",
                   "check nothing in them is wanted, then: git worktree remove PATH")


CHANGED_REPOSITORY_WINDOW_S = 7 * 24 * 3600  # runs ended this recently are looked at
CHANGED_REPOSITORY_MAX_RUNS = 500  # newest records read at most


def runs_that_changed_repositories(store: RunRecords, now: datetime) -> list[str]:
    """Runs still in the store, ended within the window, whose work changed the repository's shared
    config, hooks or info (`repository_changes`), newest first; bounded in records read.
    A record that cannot be read is skipped (doctor's other checks speak of the store)."""
    from lionrun.domain.run import parse_iso

    found: list[str] = []
    for count, run_id in enumerate(store.run_ids()):
        if count >= CHANGED_REPOSITORY_MAX_RUNS:
            break
        try:
            run = store.read(run_id)
        except Exception:  # noqa: BLE001 - advisory
            continue
        if not run.repository_changes or run.finished_at is None:
            continue
        try:
            ended = parse_iso(run.finished_at)
        except ValueError:
            continue
        if ended is not None and (now - ended).total_seconds() <= CHANGED_REPOSITORY_WINDOW_S:
            found.append(run_id)
    return found


def check_repository_changes(runs: list[str]) -> DoctorCheck:
    """Runs whose work changed the person's repository config or hooks: git runs what
    they name for the person, so they are looked at before the next git command."""
    if not runs:
        return finding("work.repo_changes", True, "warning",
                       "no recent run changed a repository's shared config, hooks or info")
    shown = ", ".join(runs[:5]) + (" …" if len(runs) > 5 else "")
    return finding("work.repo_changes", False, "warning",
                   f"{len(runs)} recent run(s) changed their repository's shared git config, hooks or info: {shown}",
                   "li job status RUN names the paths; check them (git config -l --show-origin, .git/hooks/) "
                   "before running git there")


def diagnose(diag: Diagnostics, fix: bool = False, admin: StoreAdmin | None = None,
             cluster: Cluster | None = None, stale_worktrees: list[str] | None = None,
             changed_repositories: list[str] | None = None) -> dict[str, Any]:
    """`{ok, checks}`: ok is false when any check of severity `error` failed.

    With `fix`, what doctor can repair itself (the store's modes) is repaired before it is judged.
    A shared store (`admin` says which) adds its own check; so does the Slurm executor (`cluster`,
    given when config.toml makes Slurm the executor).
    """
    checks = [check_store(diag), check_private(diag, fix)]
    shared = None if admin is None else check_shared_store(admin)
    if shared is not None:
        checks.append(shared)
    if cluster is not None:
        checks.append(check_slurm(cluster))
    checks += [check(diag) for check in HOST_CHECKS]
    checks += [check_provider(diag, name) for name in PROVIDER_CLIS]
    checks.append(check_notify(diag))
    if stale_worktrees is not None:
        checks.append(check_worktrees(stale_worktrees))
    if changed_repositories is not None:
        checks.append(check_repository_changes(changed_repositories))
    ok = not any(not c.ok and c.severity == "error" for c in checks)
    return DoctorData(ok=ok, checks=checks).to_wire()
