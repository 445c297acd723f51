"""Why an agent leg failed: the reason codes its CLI's stream and exit status are read into.

A leaf (it imports nothing of li's), so the domain's end of a run (`domain/ending.py`) and every
CLI's module (`domain/agents/`) share these words without importing each other.
"""

from __future__ import annotations

from typing import Final

# Why an agent leg failed, read from its CLI's stream and exit status (advisory, as every D4
# reason code: the outcome alone decides; docs/wire-contract.md "Agent ends").
PROVIDER_AUTH: Final = "provider_auth"  # the key is missing, wrong or not allowed (HTTP 401/403)
PROVIDER_RATE_LIMITED: Final = "provider_rate_limited"  # HTTP 429, a quota: retry at `retry_at`
PROVIDER_OVERLOADED: Final = "provider_overloaded"  # the vendor's side failed or is overloaded (5xx, 529)
PROVIDER_UNREACHABLE: Final = "provider_unreachable"  # the API could not be reached, or the connection was cut
PROVIDER_REFUSED: Final = "provider_refused"  # the CLI refused the work here (Gemini: an untrusted folder)
EMPTY_ANSWER: Final = "empty_answer"  # the stream ended without an answer (an exit 0 leaving nothing: completed_empty)
PROVIDER_ERROR: Final = "provider_error"  # any other failure the CLI flagged, or a stream with no end
IDLE_TIMEOUT: Final = "idle_timeout"  # status timed_out: the CLI wrote no event for --idle-timeout seconds
AGENT_REASONS: Final = (PROVIDER_AUTH, PROVIDER_RATE_LIMITED, PROVIDER_OVERLOADED, PROVIDER_UNREACHABLE,
                        PROVIDER_REFUSED, EMPTY_ANSWER, PROVIDER_ERROR)
