"""lionrun.adapters.processes.first_line reads a system file's first line in binary (no ascii codec module
on every read); it must give exactly what the text-mode read it replaced gave."""

from __future__ import annotations

import os
import tempfile

from hypothesis import given
from hypothesis import strategies as st

from lionrun.adapters.processes import first_line


def text_mode(path: str) -> str | None:
    """The read it replaced: ascii, errors="replace", universal newlines."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.readline().strip() or None
    except OSError:
        return None


EDGES = [b"", b"\n", b"abc", b"abc\n", b"  abc  \ndef\n", b"abc\r\ndef", b"abc\rdef\n", b"\rabc\n",
         b"\x1c abc \x1f\n", b"caf\xc3\xa9\n", b"\xff\xfe\n", b"\n\nabc", b"a\x00b\n", b"\t\x0b\x0c\n"]


def check(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "machine-id")
        with open(path, "wb") as handle:
            handle.write(content)
        assert first_line(path) == text_mode(path), content


def test_edge_contents_read_as_the_text_mode_read_did() -> None:
    for content in EDGES:
        check(content)


@given(st.binary(max_size=64) | st.lists(st.sampled_from([b"a", b"\r", b"\n", b" ", b"\x85", b"\x1d", b"\xe2\x80\xa8"]),
                                         max_size=12).map(b"".join))
def test_any_content_reads_as_the_text_mode_read_did(content: bytes) -> None:
    check(content)


def test_a_missing_file_or_a_folder_is_none() -> None:
    with tempfile.TemporaryDirectory() as folder:
        assert first_line(os.path.join(folder, "absent")) is None
        assert first_line(folder) is None
