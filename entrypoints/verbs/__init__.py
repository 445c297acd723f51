"""The verb table: each verb module registers its parser and answers with plain data (`Verb`).

The table names the modules rather than importing them: a request imports the module of the verb
it names and no other (entrypoints/cli.py, start-up time).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it

# (command, module), in the order `li --help` lists them.
VERB_TABLE: tuple[tuple[str, str], ...] = (
    ("handshake", "lionrun.entrypoints.verbs.handshake"),
    ("agent", "lionrun.entrypoints.verbs.agent"),
    ("orchestrate", "lionrun.entrypoints.verbs.orchestrate"),
    ("job", "lionrun.entrypoints.verbs.job"),
    ("store", "lionrun.entrypoints.verbs.store"),
    ("queue", "lionrun.entrypoints.verbs.queue"),
    ("usage", "lionrun.entrypoints.verbs.usage"),
    ("doctor", "lionrun.entrypoints.verbs.doctor"),
    ("completion", "lionrun.entrypoints.verbs.completion"),
    ("mcp", "lionrun.entrypoints.verbs.mcp"),
    ("serve", "lionrun.entrypoints.verbs.serve"),
)


if TYPE_CHECKING:  # mypy holds every module of the table to the Verb protocol
    from lionrun.entrypoints.verbs import (
        agent,
        completion,
        doctor,
        handshake,
        job,
        mcp,
        orchestrate,
        queue,
        serve,
        store,
        usage,
    )
    from lionrun.entrypoints.verbs._common import Verb

    _CHECKED: tuple[Verb, ...] = (handshake, agent, orchestrate, job, store, queue, usage, doctor, completion,
                                  mcp, serve)
