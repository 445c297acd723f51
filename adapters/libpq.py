"""A lean read path to PostgreSQL: libpq itself through ctypes, for the PostgreSQL store's reads.

`import psycopg` costs a read about 100-150 ms of CPU (its C extension, bundled libraries and
Python modules), which made `li job status` on PostgreSQL 2.4x the filesystem store's; loading libpq and connecting costs about 10 ms. The store's reads that every status,
list and wait makes (a record, a small run file, the schema version) go through here; every
write, the fenced update, LISTEN and the rest keep psycopg.

The libpq is the one psycopg's binary wheel bundles (the same library psycopg would use), else
the system's `libpq.so.5`; when neither loads, `load()` answers None and the store uses psycopg.
Only statements with text parameters and text results are made; `bytea` comes back hex-encoded.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence
from typing import Any, Final

CONNECTION_OK: Final = 0
PGRES_COMMAND_OK: Final = 1
PGRES_TUPLES_OK: Final = 2
PG_DIAG_SQLSTATE: Final = ord("C")

_loaded: list[ctypes.CDLL | None] = []


class PqError(Exception):
    """A statement or connection libpq reported failed: its SQLSTATE (None: no answer from a
    server at all), its message's first line, and whether the connection is gone with it."""

    def __init__(self, message: str, sqlstate: str | None, broken: bool, at_connect: bool = False) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.broken = broken
        self.at_connect = at_connect


def _candidates() -> list[str]:
    found: list[str] = []
    for entry in sys.path:
        libs = os.path.join(entry or ".", "psycopg_binary.libs")
        try:
            names = sorted(os.listdir(libs))
        except OSError:
            continue
        found.extend(os.path.join(libs, name) for name in names if name.startswith("libpq"))
    return [*found, "libpq.so.5"]


def load() -> ctypes.CDLL | None:
    """libpq, loaded once a process; None when it cannot be (the caller then uses psycopg)."""
    if _loaded:
        return _loaded[0]
    lib = None
    if os.environ.get("LI_STORE_LEAN", "1") != "0":
        for path in _candidates():
            try:
                lib = ctypes.CDLL(path)
                _declare(lib)
                break
            except (OSError, AttributeError):
                lib = None
    _loaded.append(lib)
    return lib


def _declare(lib: ctypes.CDLL) -> None:
    """Each libpq function li calls, with its C signature (ctypes guesses int for anything else)."""
    p, c, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    signatures: dict[str, tuple[Any, list[Any]]] = {  # name: (restype, argtypes)
        "PQconnectdbParams": (p, [ctypes.POINTER(c), ctypes.POINTER(c), i]),
        "PQstatus": (i, [p]),
        "PQerrorMessage": (c, [p]),
        "PQfinish": (None, [p]),
        "PQexecParams": (p, [p, c, i, p, ctypes.POINTER(c), p, p, i]),
        "PQresultStatus": (i, [p]),
        "PQresultErrorField": (c, [p, i]),
        "PQresultErrorMessage": (c, [p]),
        "PQntuples": (i, [p]),
        "PQnfields": (i, [p]),
        "PQgetisnull": (i, [p, i, i]),
        "PQgetvalue": (p, [p, i, i]),
        "PQgetlength": (i, [p, i, i]),
        "PQclear": (None, [p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes


def _strings(values: Sequence[str]) -> ctypes.Array[ctypes.c_char_p]:
    array = (ctypes.c_char_p * (len(values) + 1))()
    for index, value in enumerate(values):
        array[index] = value.encode("utf-8", "surrogateescape")
    array[len(values)] = None
    return array


def _first_line(raw: bytes | None) -> str:
    text = (raw or b"").decode("utf-8", "replace").strip()
    return text.splitlines()[0] if text else "no message"


class Connection:
    """One libpq connection (autocommit: each statement its own transaction)."""

    def __init__(self, lib: ctypes.CDLL, dsn: str, connect_timeout: int, options: str) -> None:
        self.lib = lib
        keys = ["dbname", "connect_timeout", "options"]
        values = [dsn, str(connect_timeout), options]
        self.handle: int | None = lib.PQconnectdbParams(_strings(keys), _strings(values), 1)
        if not self.handle or lib.PQstatus(self.handle) != CONNECTION_OK:
            message = _first_line(lib.PQerrorMessage(self.handle)) if self.handle else "out of memory"
            whole = (lib.PQerrorMessage(self.handle) or b"").decode("utf-8", "replace") if self.handle else ""
            self.close()
            raise PqError(whole.strip() or message, None, True, at_connect=True)

    @property
    def ok(self) -> bool:
        return bool(self.handle) and self.lib.PQstatus(self.handle) == CONNECTION_OK

    def query(self, sql: str, params: Sequence[str] = ()) -> list[list[str | None]]:
        """The rows of one statement, each value its text (None for NULL); raises PqError."""
        if not self.handle:
            raise PqError("the connection is closed", None, True)
        lib = self.lib
        values = _strings(params)
        result = lib.PQexecParams(self.handle, sql.encode(), len(params), None, values, None, None, 0)
        try:
            status = lib.PQresultStatus(result) if result else -1
            if status not in (PGRES_TUPLES_OK, PGRES_COMMAND_OK):
                state = lib.PQresultErrorField(result, PG_DIAG_SQLSTATE) if result else None
                message = lib.PQresultErrorMessage(result) if result else lib.PQerrorMessage(self.handle)
                raise PqError(_first_line(message) if message else _first_line(lib.PQerrorMessage(self.handle)),
                              state.decode() if state else None, not self.ok)
            rows: list[list[str | None]] = []
            for row in range(lib.PQntuples(result)):
                fields: list[str | None] = []
                for column in range(lib.PQnfields(result)):
                    if lib.PQgetisnull(result, row, column):
                        fields.append(None)
                        continue
                    size = lib.PQgetlength(result, row, column)
                    raw = ctypes.string_at(lib.PQgetvalue(result, row, column), size)
                    fields.append(raw.decode("utf-8", "surrogateescape"))
                rows.append(fields)
            return rows
        finally:
            if result:
                lib.PQclear(result)

    def close(self) -> None:
        if self.handle:
            self.lib.PQfinish(self.handle)
        self.handle = None


def bytea(text: str | None) -> bytes:
    """A `bytea` value as libpq gives it in text form (hex: `\\x…`)."""
    if text is None:
        return b""
    if text.startswith("\\x"):
        return bytes.fromhex(text[2:])
    raise ValueError("bytea not in hex form")
