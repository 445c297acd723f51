"""The verbs of `li`: each module registers its parser and answers with plain data (`Verb`).

Their table, with each verb's summary, is `entrypoints/verb_table.py`: a request imports the
module of the verb it names and no other, and `li --help` none (entrypoints/cli.py, start-up time).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a handshake never loads it

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
