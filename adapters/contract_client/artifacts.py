"""An artifact's text as a program may trust it: read from the path li listed, served only when the
bytes are li's (their sha256 is the one the listing gave), never through a link or a FIFO."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from typing import Any

from lionrun.adapters.contract_client.envelope import Reply
from lionrun.adapters.contract_client.reading import Evidence, read_availability

#: Largest artifact text returned inline.
ARTIFACT_TEXT_LIMIT = 200_000


def artifact_of(reply: Reply, name: str, limit: int = ARTIFACT_TEXT_LIMIT) -> dict[str, Any]:
    """`{name, text, says?, kind?, sha256_verified?, truncated?}` for one artifact an `output` reply listed.

    `text` is null whenever it cannot be vouched for; `says` then tells why and `kind` names it in
    li's closed set of refusal kinds, as `li job output --artifact` refuses: `not_found` (the
    listing has no such name), `unavailable` (the listing or the file cannot be read),
    `invalid_input` (not a regular file), `conflict` (changed since it was listed).
    """
    listing = read_availability((reply.data or {}).get("artifacts"))
    rows = listing.value if isinstance(listing.value, list) else []
    row = next((r for r in rows if isinstance(r, Mapping) and r.get("name") == name), None)
    if row is None:
        if listing.evidence is Evidence.UNKNOWN:  # no listing to look in: not "no such artifact"
            return {"name": name, "text": None, "kind": "unavailable",
                    "says": f"not listed: the listing is {listing.describe()}"}
        names = ", ".join(str(r.get("name")) for r in rows if isinstance(r, Mapping)) or "none"
        return {"name": name, "text": None, "kind": "not_found", "says": f"not listed (artifacts: {names})"}
    if row.get("type", "file") != "file" or not row.get("sha256"):
        kind = row.get("type", "entry")
        return {"name": name, "text": None, "kind": "invalid_input",
                "says": f"not a regular file ({kind}); its content is not served"}
    try:
        head, digest, size = read_head(str(row.get("path")), limit)
    except OSError as exc:
        return {"name": name, "text": None, "kind": "unavailable", "says": f"unknown: unreadable ({exc})"}
    if digest != row.get("sha256"):  # replaced since li listed it: these bytes are not the artifact
        return {"name": name, "text": None, "sha256_verified": False, "kind": "conflict",
                "says": "changed since it was listed (sha256 differs); its content is not served"}
    return {"name": name, "text": head.decode("utf-8", errors="replace"), "sha256_verified": True,
            "truncated": size > limit}


def read_head(path: str, limit: int) -> tuple[bytes, str, int]:
    """The first `limit` bytes of a regular file (never through a link, never blocking on a FIFO),
    the sha256 of all of it, and its size; the caller serves them only when the digest is li's."""
    digest, head, size = hashlib.sha256(), b"", 0
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # a link or FIFO: OSError
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{os.path.basename(path)} is not a regular file")
        while chunk := handle.read(1 << 16):
            digest.update(chunk)
            head += chunk[: max(0, limit - size)]
            size += len(chunk)
    return head, digest.hexdigest(), size
