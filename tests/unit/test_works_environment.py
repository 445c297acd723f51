"""What of li's environment a run's work (and li's own git) sees: pure, with properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.run import NOT_THE_WORKS, store_credential, the_works_environment

NAMES = st.one_of(st.sampled_from(sorted(NOT_THE_WORKS | {"LI_STORE", "PGPASSWORD", "PGHOST", "LI_HOME", "HOME",
                                                          "PATH", "LI_STORE_X", "XPG"})),
                  st.text(st.characters(min_codepoint=48, max_codepoint=90), min_size=1, max_size=12))


@given(st.dictionaries(NAMES, st.text(max_size=8)))
def test_the_work_gets_everything_but_what_is_lis_own(environ: dict[str, str]) -> None:
    seen = the_works_environment(environ)
    for name, value in environ.items():
        if store_credential(name) or name in NOT_THE_WORKS:
            assert name not in seen
        else:
            assert seen[name] == value
    assert set(seen) <= set(environ)


def test_the_store_url_and_every_libpq_variable_are_lis_own_and_nothing_near_them() -> None:
    assert store_credential("LI_STORE") and store_credential("PGPASSWORD") and store_credential("PGPASSFILE")
    assert not store_credential("LI_STORE_X") and not store_credential("XPG") and not store_credential("LI_HOME")
    assert {"LI_BROKER_MARK", "LI_ACTING_FOR", "PYTHONSAFEPATH"} == NOT_THE_WORKS


def test_the_brokers_own_variables_are_never_the_works() -> None:
    # adapters/broker.py names them standard-library-only (the lean supervisor imports it as a
    # sibling); the domain's list must hold the same names
    from lionrun.adapters import broker

    assert {broker.MARK, broker.ACTING} <= NOT_THE_WORKS
