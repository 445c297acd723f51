"""Flow specs are parsed and refused purely: ids, models, prompts, dependencies, cycles, placeholders."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.flow import ancestors, parse_flow, render


def spec(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"steps": list(steps), **top}


def refused(value: object) -> ContractError:
    with pytest.raises(ContractError) as caught:
        parse_flow(value)
    assert caught.value.kind is ErrorKind.INVALID_INPUT
    return caught.value


def test_steps_come_back_in_an_order_where_every_step_follows_its_dependencies() -> None:
    legs = parse_flow(spec(
        {"id": "summary", "prompt": "sum {{steps.research}} {{ steps.draft }}", "depends_on": ["research", "draft"]},
        {"id": "research", "model": "claude/opus", "prompt": "research"},
        {"id": "draft", "prompt": "draft", "depends_on": "research"},
    ))
    assert [leg.id for leg in legs] == ["research", "draft", "summary"]
    assert legs[0].model.provider == "claude" and legs[0].model.model == "opus"
    assert legs[1].depends_on == ("research",)


def test_a_step_without_a_model_takes_the_flows_model_else_sh() -> None:
    assert parse_flow(spec({"id": "a", "prompt": "x"}))[0].model.text == "sh"
    assert parse_flow(spec({"id": "a", "prompt": "x"}, model="codex"))[0].model.text == "codex"


def test_a_cycle_is_refused_naming_the_steps_on_it() -> None:
    error = refused(spec({"id": "a", "prompt": "x", "depends_on": ["b"]},
                         {"id": "b", "prompt": "y", "depends_on": ["a"]},
                         {"id": "c", "prompt": "z"}))
    assert error.detail == {"cycle": ["a", "b"]}


def test_a_step_depending_on_itself_is_a_cycle() -> None:
    refused(spec({"id": "a", "prompt": "x", "depends_on": ["a"]}))


def test_an_unknown_dependency_is_refused() -> None:
    error = refused(spec({"id": "a", "prompt": "x", "depends_on": ["ghost"]}))
    assert error.detail == {"step": "a", "unknown": ["ghost"]}


@pytest.mark.parametrize("bad", [
    None, [], "steps", {"steps": []}, {"steps": "a"}, {"stepz": [{"id": "a", "prompt": "x"}]},
    spec({"id": "a"}), spec({"id": "a", "prompt": "   "}), spec({"id": "a", "prompt": 3}),
    spec({"id": "../etc", "prompt": "x"}), spec({"id": "a", "prompt": "x", "model": "gpt"}),
    spec({"id": "a", "prompt": "x", "model": 5}), spec({"id": "a", "prompt": "x", "extra": 1}),
    spec({"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}),
    spec({"id": "a", "prompt": "x", "depends_on": [1]}), spec("not a mapping"),
    {"steps": [{"id": f"s{n}", "prompt": "x"} for n in range(65)]},
])
def test_malformed_specs_are_invalid_input(bad: object) -> None:
    refused(bad)


def test_a_placeholder_may_only_name_an_upstream_step() -> None:
    error = refused(spec({"id": "a", "prompt": "{{steps.b}}"}, {"id": "b", "prompt": "y"}))
    assert error.detail == {"step": "a", "placeholders": ["b"]}


def test_answers_of_transitive_ancestors_are_available() -> None:
    legs = parse_flow(spec({"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y", "depends_on": ["a"]},
                           {"id": "c", "prompt": "{{steps.a}}", "depends_on": ["b"]}))
    assert ancestors(legs, "c") == {"a", "b"}


def test_render_puts_upstream_answers_into_their_placeholders() -> None:
    assert render("A={{steps.a}} B={{ steps.b }} C={{steps.c}}", {"a": "1", "b": None}) == "A=1 B= C="


def test_an_upstream_answer_loses_its_trailing_newlines_like_shell_substitution() -> None:
    assert render("got {{steps.a}}!", {"a": "42\n\n"}) == "got 42!"
    assert render("{{steps.a}}", {"a": "  two\nlines  \n"}) == "  two\nlines  "


@pytest.mark.parametrize(("bad", "message"), [
    ({"steps": [{"id": "a"}]}, "flow spec: step 1 `prompt` is missing"),
    ({"stepz": [{"id": "a", "prompt": "x"}]}, "flow spec: `stepz` is not a key li knows (and 1 more problem)"),
    (spec({"id": "a", "prompt": "x"}, {"id": "b", "prompt": 3}), "flow spec: step 2 `prompt` must be a string"),
    (spec({"id": "a", "prompt": "x", "depends_on": ["b", 1]}),
     "flow spec: step 1 `depends_on` item 2 must be a string"),
    ({"steps": []}, "flow spec: `steps` must not be empty"),
    ({"steps": [{"id": f"s{n}", "prompt": "x"} for n in range(65)]}, "flow spec: `steps` has at most 64 items"),
])
def test_a_malformed_spec_is_one_line_naming_where_and_what(bad: object, message: str) -> None:
    """pydantic checks the shape (domain/written.py); its complaint is said in li's words."""
    error = refused(bad)
    assert error.message == message
    assert error.detail is not None and error.detail["problem"]


def test_a_single_depends_on_and_a_free_name_are_taken() -> None:
    legs = parse_flow({"name": 5, "steps": [{"id": "b", "prompt": "y", "depends_on": "a"}, {"id": "a", "prompt": "x"}]})
    assert [leg.id for leg in legs] == ["a", "b"] and legs[1].depends_on == ("a",)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                        st.sampled_from(["steps", "id", "prompt", "model", "depends_on", "name", "x"]), inner,
                        max_size=5), max_leaves=20)


@given(JSON)
def test_any_decoded_value_is_legs_or_one_invalid_input_line(value: object) -> None:
    try:
        parse_flow(value)
    except ContractError as error:
        assert error.kind is ErrorKind.INVALID_INPUT
        assert "\n" not in error.message and error.message
