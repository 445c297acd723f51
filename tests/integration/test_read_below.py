"""`read_below` (adapters/safe_open.py): a name from outside never climbs out of the folder it is read below."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lionrun.adapters.safe_open import read_below


@pytest.mark.parametrize("name", ["../secret", "a/../../secret", "./a/f", "a//f", "", "a/", ".."])
def test_dot_dot_dot_and_empty_parts_are_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / "secret").write_text("outside")
    inside = tmp_path / "artifacts"
    (inside / "a").mkdir(parents=True)
    (inside / "a" / "f").write_text("inside")
    root = os.open(inside, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert read_below(root, "a/f", 100) == b"inside"
        with pytest.raises(OSError):
            read_below(root, name, 100)
    finally:
        os.close(root)
