"""The verb table: each verb module registers its parser and answers with plain data (`Verb`)."""

from __future__ import annotations

from entrypoints.verbs import (
    agent,
    completion,
    doctor,
    handshake,
    job,
    mcp,
    orchestrate,
    store,
)
from entrypoints.verbs._common import Verb

VERBS: tuple[Verb, ...] = (handshake, agent, orchestrate, job, store, doctor, completion, mcp)
