"""The inotify events `li job wait` wakes on (adapters/fs_changes.py), read without the struct module."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from lionrun.adapters.fs_changes import IN_MOVED_TO, RECORD, WAKING, _has_change


def event(mask: int, name: bytes = b"", wd: int = 3, cookie: int = 0) -> bytes:
    """One struct inotify_event as the kernel writes it (native order), its name NUL-padded."""
    padded = name + b"\0" * (-len(name) % 4) if name else b""
    return struct.pack("iIII", wd, mask, cookie, len(padded)) + padded


def test_a_record_renamed_into_a_watched_folder_wakes_the_wait() -> None:
    assert _has_change(event(IN_MOVED_TO, RECORD))
    assert _has_change(event(IN_MOVED_TO, b"other") + event(IN_MOVED_TO, RECORD))


def test_other_names_and_masks_do_not_wake_it() -> None:
    assert not _has_change(event(IN_MOVED_TO, b"record.json.tmp"))
    assert not _has_change(event(0x2, RECORD))  # IN_MODIFY
    assert not _has_change(b"")


@given(st.sampled_from([1 << bit for bit in range(32) if (1 << bit) & WAKING]), st.binary(max_size=40),
       st.integers(min_value=-1, max_value=2**31 - 1), st.integers(min_value=0, max_value=2**32 - 1))
def test_a_folder_gone_or_an_overflow_wakes_it_whatever_the_other_fields(mask: int, name: bytes, wd: int,
                                                                        cookie: int) -> None:
    assert _has_change(event(0x2, b"x") + event(mask, name.replace(b"\0", b""), wd, cookie))
