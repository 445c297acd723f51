"""The verb table: each verb module registers its parser and answers with plain data."""

from __future__ import annotations

from entrypoints.verbs import (
    agent,
    completion,
    doctor,
    handshake,
    job,
    mcp,
    orchestrate,
)

VERBS = (handshake, agent, orchestrate, job, doctor, completion, mcp)
