"""The machine as `li doctor` sees it: the real `Diagnostics` adapter."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping

from lionrun.adapters.config_file import read_config
from lionrun.adapters.processes import BOOT_ID_PATH, MACHINE_ID_PATHS, first_line
from lionrun.adapters.safe_open import FOLDER_MODE
from lionrun.application.doctor import NotifySetting, StoreModes
from lionrun.domain.config import ConfigFile, parse_table


class SystemDiagnostics:
    """Answers doctor's questions from this process, its environment and the filesystem."""

    def __init__(self, home: str, environ: Mapping[str, str] | None = None, config: ConfigFile | None = None) -> None:
        """`config`: config.toml as the process read it (entrypoints/settings.py); read here when not given."""
        self._home = os.path.abspath(home)
        self._environ = os.environ if environ is None else environ
        self._config = config

    def home(self) -> str:
        return self._home

    def store_write_error(self) -> str | None:
        try:
            os.makedirs(self._home, mode=FOLDER_MODE, exist_ok=True)  # a store doctor creates is private too
            fd, path = tempfile.mkstemp(prefix=".doctor-", dir=self._home)
            os.close(fd)
            os.unlink(path)
        except OSError as exc:
            return exc.strerror or str(exc)
        return None

    def store_modes(self, tighten: bool) -> StoreModes:
        from lionrun.adapters.store_modes import store_modes

        return store_modes(self._home, tighten)

    def machine_id(self) -> str | None:
        return next((found for p in MACHINE_ID_PATHS if (found := first_line(p))), None)

    def boot_id(self) -> str | None:
        return first_line(BOOT_ID_PATH)

    def own_create_time(self) -> tuple[float | None, str | None]:
        try:
            import psutil

            return psutil.Process(os.getpid()).create_time(), None
        except Exception as exc:  # noqa: BLE001 - any failure here is the finding itself
            return None, f"{type(exc).__name__}: {exc}"

    def find_executable(self, name: str) -> str | None:
        if os.sep in name:
            path = os.path.abspath(os.path.expanduser(name))
            return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
        found = shutil.which(name, path=self._environ.get("PATH", os.defpath))
        if found is None and name == "sh" and os.access("/bin/sh", os.X_OK):
            found = "/bin/sh"
        return os.path.abspath(found) if found else None

    def confinement_refusal(self) -> str | None:
        from lionrun.adapters.confinement import probe

        where = self._home
        while not os.path.isdir(where) and os.path.dirname(where) != where:
            where = os.path.dirname(where)  # no store yet: its nearest folder stands in for it
        try:
            return probe(where)
        except OSError as exc:
            return f"the confinement could not be tried: {exc}"

    def notify_setting(self) -> NotifySetting | None:
        from lionrun.domain.notify import NotifyTemplateError, split_template, template_of

        env_value = self._environ.get("LI_NOTIFY_COMMAND")
        if env_value:
            try:
                return NotifySetting("LI_NOTIFY_COMMAND", tuple(split_template(env_value)))
            except NotifyTemplateError as exc:
                return NotifySetting("LI_NOTIFY_COMMAND", None, str(exc))
        config = self._config if self._config is not None else read_config(self._home)
        path = config.path
        try:
            entry = self._config_entry(config)
            return None if entry is None else NotifySetting(path, tuple(template_of(entry)))
        except (NotifyTemplateError, ConfigUnreadable) as exc:
            return NotifySetting(path, None, str(exc))

    @staticmethod
    def _config_entry(config: ConfigFile) -> object:
        if config.error is not None:
            raise ConfigUnreadable(f"cannot read {config.path}: {config.error}")
        try:
            return parse_table(config.raw, config.path).get("notify")
        except ValueError as exc:
            raise ConfigUnreadable(str(exc)) from exc


class ConfigUnreadable(Exception):
    """`config.toml` exists but cannot be read or parsed."""
