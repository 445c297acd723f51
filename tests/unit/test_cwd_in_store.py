"""No run works at or below the store (`domain.request.refuse_cwd_in_store`)."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.contract import ContractError
from lionrun.domain.request import refuse_cwd_in_store

NAMES = st.text(alphabet="abch-.", min_size=1, max_size=4).filter(lambda n: n not in (".", ".."))
PATHS = st.lists(NAMES, max_size=4).map(lambda parts: "/" + "/".join(parts))


def test_refusal_is_pure_and_exact() -> None:
    from lionrun.domain.contract import ContractError
    from lionrun.domain.request import refuse_cwd_in_store

    for inside in ("/s/home", "/s/home/", "/s/home/runs", "/s/home/runs/x/artifacts"):
        with pytest.raises(ContractError):
            refuse_cwd_in_store(inside, "/s/home")
    for outside in ("/s", "/s/home2", "/s/homework/x", "/", "/t/home"):
        refuse_cwd_in_store(outside, "/s/home")
    with pytest.raises(ContractError):
        refuse_cwd_in_store("/anything", "/")  # a store at / holds every folder



@given(PATHS, PATHS)
def test_refused_exactly_when_the_cwd_is_the_store_or_below_it(cwd: str, home: str) -> None:
    inside = posixpath.commonpath([cwd, home]) == home
    try:
        refuse_cwd_in_store(cwd, home)
    except ContractError as exc:
        assert inside and exc.detail is not None and exc.detail["reason_code"] == "cwd_in_store"
    else:
        assert not inside
