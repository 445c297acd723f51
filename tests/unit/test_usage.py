"""`li usage` totals: over the runs that reported, the others counted as unreported, never 0."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.usage import NONE_KEY, Spent, meter_of, tally

COSTS = st.one_of(st.none(), st.floats(0, 100, allow_nan=False))


def spent(run_id: str, cost: float | None, model: str | None = "claude", label: str | None = None,
          tokens: dict[str, int | float] | None = None, wall: float | None = 1.0) -> Spent:
    return Spent(run_id=run_id, model=model, label=label, queue="default", wall_seconds=wall, tokens=tokens,
                 cost_usd=cost)


@given(st.lists(COSTS, max_size=20))
def test_a_cost_is_the_sum_of_those_reported_and_unreported_is_never_zero(costs: list[float | None]) -> None:
    _, total = tally([spent(f"r{i}", c) for i, c in enumerate(costs)], None)
    reported = [c for c in costs if c is not None]
    assert total.cost_unreported == len(costs) - len(reported)
    if reported:
        assert total.cost_usd == pytest.approx(sum(reported))
    else:
        assert total.cost_usd is None  # nobody reported: unreported, not $0.00


def test_groups_by_model_label_or_queue_and_a_missing_key_is_its_own_group() -> None:
    runs = [spent("a", 1.0, model="claude", label="x"), spent("b", None, model="sh", label=None),
            spent("c", 2.0, model="claude", label="x")]
    groups, total = tally(runs, "model")
    assert [(g.key, g.runs, g.cost_usd, g.cost_unreported) for g in groups] == [
        ("claude", 2, 3.0, 0), ("sh", 1, None, 1)]
    assert [g.key for g in tally(runs, "label")[0]] == [NONE_KEY, "x"]
    assert total.runs == 3 and total.cost_usd == 3.0


def test_tokens_sum_each_class_over_reporting_runs() -> None:
    runs = [spent("a", None, tokens={"input_tokens": 3, "output_tokens": 4}),
            spent("b", None, tokens={"input_tokens": 1, "output_tokens": 1}), spent("c", None)]
    _, total = tally(runs, None)
    assert total.tokens == {"input_tokens": 4, "output_tokens": 5} and total.tokens_unreported == 1


def test_a_meter_is_read_only_from_what_was_reported() -> None:
    metering = {"wall_seconds": 2.5, "tokens": {"available": True, "value": {"input_tokens": 3, "output_tokens": 1}},
                "cost_usd": {"available": True, "value": 0.0123}}
    assert meter_of(metering) == (2.5, {"input_tokens": 3, "output_tokens": 1}, 0.0123)
    silent = {"wall_seconds": 1, "tokens": {"available": False, "value": None, "reason_code": "not_reported"},
              "cost_usd": {"available": False, "value": None}}
    assert meter_of(silent) == (1.0, None, None)


@pytest.mark.parametrize("metering", [None, [], "x", {"wall_seconds": "1"}, {"wall_seconds": -1},
                                      {"cost_usd": {"available": True, "value": "0.1"}},
                                      {"cost_usd": {"available": True, "value": float("nan")}},
                                      {"tokens": {"available": True, "value": {"input_tokens": "3"}}},
                                      {"cost_usd": {"available": "yes", "value": 1.0}}])
def test_a_malformed_meter_is_unreported_never_a_number(metering: object) -> None:
    wall, tokens, cost = meter_of(metering)
    assert tokens is None and cost is None
    assert wall is None or isinstance(wall, float)
