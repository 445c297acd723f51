"""What an `li` acting for a confined run's work may be asked.

A run's broker (`adapters/broker.py`) runs `li` for the work with `LI_ACTING_FOR=<run id>`. That
`li` sees the run's children only (`application/acting.py`), and takes only what submits a child
or reads, waits on or kills one: no other verb, nothing that would run outside the confinement a
command or a path of the work's choosing (`--notify`, `--setup`, `li mcp --li`, a file to read),
no child run unconfined (`--confine off`, a Slurm job). Each child is confined as `--confine required`.
"""

from __future__ import annotations

import os

from lionrun.domain.contract import ContractError, ErrorKind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

ACTING = "LI_ACTING_FOR"
# (command, its subcommand) the work may ask for; None: the command has none
OPEN = frozenset({("handshake", None), ("agent", None), ("mcp", None), ("orchestrate", "fanout"),
                  ("orchestrate", "flow"), ("job", "status"), ("job", "wait"), ("job", "kill"),
                  ("job", "output"), ("job", "list"), ("job", "diff"),
                  # The run's permission-prompt tool asks a person, for this run only
                  ("job", "approval-request")})
# submit options that would run something of the work's choosing outside its confinement, or
# start the child unconfined
CLOSED_OPTIONS = (("notify", "--notify"), ("setup", "--setup"), ("partition", "--partition"),
                  ("slurm_arg", "--slurm-arg"), ("li", "--li"))
SAID = "a run's confined work may only submit runs through li and read, wait on and kill those it submitted"


def acting_for() -> str | None:
    return os.environ.get(ACTING) or None


def admit(namespace: Namespace) -> None:
    """Refuse (invalid_input) what an `li` acting for a run's work may not do; make a submit's
    child confined. Nothing for an `li` acting for no one."""
    if acting_for() is None:
        return
    command = getattr(namespace, "command", None)
    sub = getattr(namespace, "job_command", None) if command == "job" else getattr(namespace, "mode", None)
    if (command, sub) not in OPEN:
        name = " ".join(word for word in ("li", command, sub) if word)
        raise _refused(f"{name} is not open to a run's work: {SAID}")
    _refuse_options(namespace)
    if command in ("agent", "orchestrate"):
        namespace.confine = "required"


def _refuse_options(namespace: Namespace) -> None:
    """Refuse an option that would run or read something of the work's choosing outside its
    confinement, or start its child unconfined."""
    for attribute, option in CLOSED_OPTIONS:
        if getattr(namespace, attribute, None):
            raise _refused(f"{option} is not open to a run's work: it would run outside the work's confinement")
    if getattr(namespace, "executor", None) not in (None, "local"):
        raise _refused("--executor is not open to a run's work: its child runs here, confined like it")
    if getattr(namespace, "confine", None) == "off":
        raise _refused("--confine off is not open to a run's work: its children are confined like it")
    for attribute, option in (("prompt_file", "--prompt-file"), ("spec", "SPEC")):
        value = getattr(namespace, attribute, None)
        if value is not None and value != "-":
            raise _refused(f"{option} names a file li would read outside the work's confinement: "
                           "pass - and give it on stdin")


def _refused(message: str) -> ContractError:
    return ContractError(ErrorKind.INVALID_INPUT, message, {"reason_code": "not_open_to_the_work"})
