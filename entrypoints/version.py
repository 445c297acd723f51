"""This build's version, read from the installed package's metadata (its one home: pyproject.toml).

`li handshake` and `li --version` answer it, and a consumer may handshake on every poll: importing
`importlib.metadata` (email, csv, zipfile, pathlib) would more than double a handshake's start-up,
so the `Version:` field is read the way importlib.metadata finds it — the distribution's
`.dist-info/METADATA` (or `.egg-info/PKG-INFO`) on sys.path — and importlib.metadata is asked only
when that finds nothing. Standard library only.
"""

from __future__ import annotations

import os
import sys

DISTRIBUTION = "lionrun"
UNKNOWN = "0+unknown"  # neither installed nor on sys.path: no metadata to read
_FIELD = "Version:"


def version() -> str:
    """The installed distribution's version."""
    for folder in sys.path:
        found = _from_folder(folder or ".")
        if found is not None:
            return found
    return _from_importlib()


def _from_folder(folder: str) -> str | None:
    """The `Version:` of `lionrun-*.dist-info` or `lionrun[-*].egg-info` in `folder`, if there is one."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    for name in names:
        for suffix, filename in ((".dist-info", "METADATA"), (".egg-info", "PKG-INFO")):
            project = name[: -len(suffix)].partition("-")[0] if name.endswith(suffix) else ""
            if project.replace("_", "-").lower() == DISTRIBUTION:
                found = _version_field(os.path.join(folder, name, filename))
                if found is not None:
                    return found
    return None


def _version_field(path: str) -> str | None:
    """The `Version:` header of a core-metadata file (headers end at the first blank line)."""
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    return None
                if line.startswith(_FIELD):
                    return line[len(_FIELD):].strip() or None
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _from_importlib() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return UNKNOWN
