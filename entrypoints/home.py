"""Where li's store is, and whether this `li` runs in a run's confined work. Standard
library only: the console script asks before it imports anything else."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

# In a run's confined work `$LI_HOME` is an empty tmpfs holding this one file (adapters/confinement.py):
# its one line names the socket of the run's broker (adapters/broker.py), else it is empty.
HIDDEN = ".li-store-hidden"
MARKER_MAX = 256


def default_home(environ: Mapping[str, str] | None = None) -> str:
    """`$LI_HOME`, else `$XDG_STATE_HOME/li`, else `~/.local/state/li`."""
    env = os.environ if environ is None else environ
    if env.get("LI_HOME"):
        return os.path.abspath(env["LI_HOME"])
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "li")


def broker_of_hidden_home(environ: Mapping[str, str] | None = None) -> str | None:
    """The name of the run's broker socket when the store is hidden from this process (the marker
    holds it), else None: one failed open on every other call. A marker this user did not make
    (another user's, planted in a store root reads) is no marker: this li's descriptors go to no
    one else's socket."""
    try:
        fd = os.open(os.path.join(default_home(environ), HIDDEN), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            return None
        said = os.read(fd, MARKER_MAX).decode("ascii", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    return said if said.startswith("li-broker-") and said.isprintable() and " " not in said else None
