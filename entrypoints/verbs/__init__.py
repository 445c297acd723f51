"""The verb table: each verb module registers its parser and answers with plain data (`Verb`).

The table names the modules rather than importing them: a request imports the module of the verb
it names and no other (entrypoints/cli.py, start-up time).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it

# (command, module), in the order `li --help` lists them.
VERB_TABLE: tuple[tuple[str, str], ...] = (
    ("handshake", "entrypoints.verbs.handshake"),
    ("agent", "entrypoints.verbs.agent"),
    ("orchestrate", "entrypoints.verbs.orchestrate"),
    ("job", "entrypoints.verbs.job"),
    ("store", "entrypoints.verbs.store"),
    ("queue", "entrypoints.verbs.queue"),
    ("usage", "entrypoints.verbs.usage"),
    ("doctor", "entrypoints.verbs.doctor"),
    ("completion", "entrypoints.verbs.completion"),
    ("mcp", "entrypoints.verbs.mcp"),
)


if TYPE_CHECKING:  # mypy holds every module of the table to the Verb protocol
    from entrypoints.verbs import (
        agent,
        completion,
        doctor,
        handshake,
        job,
        mcp,
        orchestrate,
        queue,
        store,
        usage,
    )
    from entrypoints.verbs._common import Verb

    _CHECKED: tuple[Verb, ...] = (handshake, agent, orchestrate, job, store, queue, usage, doctor, completion,
                                  mcp)
