"""Settings of the composition root: every default in one place, and what the environment changes.

Standard library and domain/application constants only: `get_container()` reads these on every
`li` call, and a fresh `Container()` takes `DEFAULTS` without any further configuration.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from lionrun.application.kill import KILL_GRACE_DEFAULT
from lionrun.application.outage import OUTAGE_SECONDS_DEFAULT
from lionrun.domain.lifecycle import PREPARING_THRESHOLD_SECONDS
from lionrun.domain.notify import DEFAULT_TIMEOUT_SECONDS
from lionrun.entrypoints.home import default_home

if TYPE_CHECKING:
    from lionrun.domain.config import Settings

KILL_GRACE_MAX: Final = 60.0
STORE_CONNECT_TIMEOUT: Final = 5.0  # seconds a shared store's server has to accept a connection
STORE_STATEMENT_TIMEOUT: Final = 30.0  # seconds one statement (or a wait for a lock) may take
NO_FAULT: Final = ""

# The one table of defaults. `home` is "" here: it means `default_home()`, found when the store is built.
DEFAULTS: Final[Mapping[str, Any]] = {
    "home": "",
    "preparing_threshold": PREPARING_THRESHOLD_SECONDS,
    "kill_grace": KILL_GRACE_DEFAULT,
    "notify_timeout": DEFAULT_TIMEOUT_SECONDS,
    "fault_pause": NO_FAULT,  # the fault suite's pause phase (adapters/faults.py); "" for none
    "store": "",  # "" for the filesystem store under `home`; `postgresql://…` for a shared store
    # A shared store's server: how long a connection and a statement may take before the call
    # answers `unavailable`, and how long a runner waits out an outage to record its end.
    "store_connect_timeout": STORE_CONNECT_TIMEOUT,
    "store_statement_timeout": STORE_STATEMENT_TIMEOUT,
    "store_outage": OUTAGE_SECONDS_DEFAULT,
    "settings": None,  # the process's `Settings` (config.toml as read once); None: read on each use
}

STORE_SCHEMES: Final = ("postgresql://", "postgres://")


def home_refusal(environ: Mapping[str, str] | None = None, check_folder: bool = False) -> str | None:
    """Why `$LI_HOME` cannot name li's store, naming LI_HOME; None when it can (or is unset).

    A relative LI_HOME is refused: it would name another store in every directory. With
    `check_folder` (the error path only: it costs a stat), one that is not a folder is named too.
    """
    env = os.environ if environ is None else environ
    raw = env.get("LI_HOME")
    if not raw:
        return None
    if not os.path.isabs(raw):
        return (f"LI_HOME={raw!r} is a relative path, which would name another store in every "
                f"directory; give an absolute one (export LI_HOME=\"$PWD/{raw}\")")
    if check_folder and os.path.exists(raw) and not os.path.isdir(raw):
        return f"LI_HOME={raw!r} is not a directory; point LI_HOME at a folder for li's store, or unset it"
    return None


def home_or_default(home: str) -> str:
    """The configured home, or the environment's when none was configured."""
    return home or default_home()


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings the environment gives; a value that is not usable keeps its default.

    `LI_HOME`/`XDG_STATE_HOME` (the store), `LI_KILL_GRACE` (a number in [0, 60]),
    `LI_NOTIFY_TIMEOUT` (a positive number), `LI_FAULT_PAUSE` (the fault suite only),
    `LI_STORE` (else `store` in `$LI_HOME/config.toml`; a `postgresql://` URL names a shared store),
    `LI_STORE_CONNECT_TIMEOUT` and `LI_STORE_STATEMENT_TIMEOUT` (seconds, positive, at most an
    hour), `LI_STORE_OUTAGE` (seconds, 0 to a day; 0: never wait out an outage) and
    `LI_ACTING_FOR` (the run whose confined work this li acts for: it sees that run's children only).
    `settings` is the one `Settings` of the process (config.toml read here, once): `get_container().core.settings()`.
    """
    env = os.environ if environ is None else environ
    loaded = load_settings(env)
    settings: dict[str, Any] = {"home": loaded.home, "store": loaded.store, "settings": loaded}
    grace = _number(env.get("LI_KILL_GRACE"))
    if grace is not None and 0.0 <= grace <= KILL_GRACE_MAX:
        settings["kill_grace"] = grace
    timeout = _number(env.get("LI_NOTIFY_TIMEOUT"))
    if timeout is not None and 0.0 < timeout < float("inf"):
        settings["notify_timeout"] = timeout
    for name, key, zero, high in (("LI_STORE_CONNECT_TIMEOUT", "store_connect_timeout", False, 3600.0),
                                  ("LI_STORE_STATEMENT_TIMEOUT", "store_statement_timeout", False, 3600.0),
                                  ("LI_STORE_OUTAGE", "store_outage", True, 86400.0)):
        value = _number(env.get(name))
        if value is not None and (value > 0.0 or (zero and value == 0.0)) and value <= high:
            settings[key] = value
    if env.get("LI_FAULT_PAUSE"):
        settings["fault_pause"] = env["LI_FAULT_PAUSE"]
    if env.get("LI_ACTING_FOR"):  # set by a run's broker only (adapters/broker.py)
        settings["acting_for"] = env["LI_ACTING_FOR"]
    return settings


def load_settings(environ: Mapping[str, str] | None = None, home: str | None = None) -> Settings:
    """Read config.toml (the one read of it) and the environment variables that win over it;
    `home` is the environment's unless given (a container configured with its own)."""
    from lionrun.adapters.config_file import read_config
    from lionrun.domain.config import Settings, store_of

    env = os.environ if environ is None else environ
    home = home or default_home(env)
    file = read_config(home)
    return Settings(home=home, file=file, store=env.get("LI_STORE") or store_of(file.raw, file.path),
                    notify_command=env.get("LI_NOTIFY_COMMAND") or None)


def is_shared_store(store: str) -> bool:
    """True for a `postgresql://` (or `postgres://`) store URL."""
    return store.startswith(STORE_SCHEMES)


def _number(raw: str | None) -> float | None:
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def runner_command() -> list[str]:
    """The detached child: this interpreter running `entrypoints.runner` (the run id is appended)."""
    return [sys.executable, "-m", "lionrun.entrypoints.runner"]


def li_command() -> list[str]:
    """`li` itself, as a run's head runs it for the work (adapters/broker.py): the console script
    installed beside this interpreter, else this interpreter with no directory of the caller's on
    sys.path (-P: the caller's cwd is the work's)."""
    beside = os.path.join(os.path.dirname(sys.executable), "li")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return [beside]
    return [sys.executable, "-P", "-m", "lionrun.entrypoints.bootstrap"]


def notice_command() -> list[str]:
    """The detached notice sender (the run id is appended)."""
    return [sys.executable, "-m", "lionrun.entrypoints.notice"]


def runner_environment(home: str) -> dict[str, str]:
    """What a runner inherits: this environment, `LI_HOME`, and no cwd on sys.path (PYTHONSAFEPATH)."""
    return {**os.environ, "LI_HOME": home, "PYTHONSAFEPATH": "1"}
